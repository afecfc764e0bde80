package home

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"piship.dev/piship/cache/atomicfs"
	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/home/receipt"
)

// DefaultWriters is the number of parallel file writers.
const DefaultWriters = 8

// inventoryName is the inventory's path inside a payload.
const inventoryName = "metadata/inventory.json"

type treeFile struct {
	rel  string // slash-separated
	size int64
	exec bool
}

// tree is a directory to copy: its directories (parents first) and files.
type tree struct {
	dirs  []string
	files []treeFile
	bytes int64
}

// planTree lists root: directories and regular files only; anything else
// is CONFIG_INVALID naming it. The order is filepath.WalkDir's (names in
// lexical order, a directory's contents right after it). Directories are
// read by up to planReaders goroutines, each opened once as an os.Root, so
// its entries are stat'ed relative to it (fstatat where the system has
// it) rather than by resolving every file's path from the root: planning
// the unbundled Pi release (~10,900 entries) was ~10,900 path lstats in
// a row, 100-120 ms.
func planTree(root string) (*tree, error) {
	type item struct {
		rel  string
		dir  bool
		file treeFile
	}
	var (
		mu    sync.Mutex
		lists = map[string][]item{}
		g     errgroup.Group
	)
	g.SetLimit(planReaders)
	var read func(rel string) error
	read = func(rel string) error {
		r, err := os.OpenRoot(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		// Entries read through a Root carry their Lstat already.
		entries, err := fs.ReadDir(r.FS(), ".")
		r.Close()
		if err != nil {
			return err
		}
		items := make([]item, 0, len(entries))
		var subdirs []string
		for _, e := range entries {
			slash := path.Join(rel, e.Name())
			if e.IsDir() {
				items = append(items, item{rel: slash, dir: true})
				subdirs = append(subdirs, slash)
				continue
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("%s is not a regular file (symlinks and special files are refused)", slash)
			}
			items = append(items, item{rel: slash, file: treeFile{rel: slash, size: fi.Size(), exec: fi.Mode().Perm()&0o111 != 0}})
		}
		mu.Lock()
		lists[rel] = items
		mu.Unlock()
		for _, sub := range subdirs {
			// On another reader when one is free, else here.
			if !g.TryGo(func() error { return read(sub) }) {
				if err := read(sub); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err := read("")
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: %v", root, err)
	}
	// The path rules of an archive install, collisions included (see
	// archive.Names), so a release directory installs where and only where
	// its archive would.
	t := &tree{}
	names := archive.NewNames()
	var bad error
	var walk func(rel string)
	walk = func(rel string) {
		for _, it := range lists[rel] {
			if bad != nil {
				return
			}
			if err := names.Check(it.rel); err != nil {
				bad = err
				return
			}
			if it.dir {
				t.dirs = append(t.dirs, it.rel)
				walk(it.rel)
				continue
			}
			t.files = append(t.files, it.file)
			t.bytes += it.file.size
		}
	}
	walk("")
	if e, ok := bad.(*archive.Error); ok {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: path %q refused (%s): %s", root, e.Entry, e.Rule, e.Detail)
	}
	return t, nil
}

// planReaders is how many goroutines read directories while planning.
const planReaders = 8

// copyTree copies t from src into dst (created; it must not exist or be
// empty) with writers parallel writers, hashing each file as it is copied.
// It returns slash path (prefixed with prefix) -> SHA-256. Files are not
// flushed.
// executables lists the tree's executable files, prefix before each
// slash path.
func (t *tree) executables(prefix string) []string {
	var out []string
	for _, f := range t.files {
		if f.exec {
			out = append(out, prefix+f.rel)
		}
	}
	return out
}

func copyTree(ctx context.Context, t *tree, src, dst, prefix string, writers int) (map[string]string, error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, err
	}
	if names, _ := readDirNames(dst, 1); len(names) > 0 {
		return nil, fmt.Errorf("%s is not empty", dst)
	}
	for _, d := range t.dirs {
		if err := os.Mkdir(filepath.Join(dst, filepath.FromSlash(d)), 0o755); err != nil {
			return nil, err
		}
	}
	sums := make([]string, len(t.files))
	batches := dirBatches(t.files)
	err := parallel(ctx, len(batches), writers, func(b int, buf []byte) error {
		bt := batches[b]
		dir := filepath.FromSlash(path.Dir(t.files[bt.from].rel))
		// The batch's directory open on both sides: each file is one
		// openat per side, not its whole path resolved twice
		// (atomicfs.Dir, as the extractor and a delta's Apply write).
		from, err := atomicfs.OpenDir(filepath.Join(src, dir))
		if err != nil {
			return err
		}
		defer from.Close()
		to, err := atomicfs.OpenDir(filepath.Join(dst, dir))
		if err != nil {
			return err
		}
		defer to.Close()
		for i := bt.from; i < bt.to; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			f := t.files[i]
			perm := os.FileMode(0o644)
			if f.exec {
				perm = 0o755
			}
			h := sha256.New()
			if _, err := from.CopyTo(to, path.Base(f.rel), perm, buf, h); err != nil {
				return fmt.Errorf("copying %s into %s: %w", filepath.Join(src, filepath.FromSlash(f.rel)), filepath.Join(dst, dir), err)
			}
			sums[i] = hex.EncodeToString(h.Sum(nil))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(t.files))
	for i, f := range t.files {
		out[prefix+f.rel] = sums[i]
	}
	return out, nil
}

// A batch is files[from:to]: files of one directory that follow each
// other, copied by one writer. Files of one directory created by several
// writers at once only queue for the directory's lock in the kernel,
// which is slow where creating a file is (archive.Extract batches the
// same way, and its benchmarks measure it); batches stay small enough
// that a large directory still spreads over the writers.
type batch struct{ from, to int }

const (
	batchFiles = 64
	batchBytes = 256 << 10
)

// dirBatches cuts files, in walk order, into batches of one directory,
// up to batchFiles files or batchBytes (a larger file is a batch of its
// own).
func dirBatches(files []treeFile) []batch {
	var out []batch
	for i := 0; i < len(files); {
		j, n := i, int64(0)
		dir := path.Dir(files[i].rel)
		for j < len(files) && j-i < batchFiles && path.Dir(files[j].rel) == dir && (j == i || n+files[j].size <= batchBytes) {
			n += files[j].size
			j++
		}
		out = append(out, batch{i, j})
		i = j
	}
	return out
}

func readDirNames(dir string, n int) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(n)
}

// parallel runs fn(0..n-1) on up to workers goroutines, each with its own
// 256 KiB buffer, stopping at the first error or when ctx ends.
func parallel(ctx context.Context, n, workers int, fn func(i int, buf []byte) error) error {
	if workers <= 0 {
		workers = DefaultWriters
	}
	return par.ForEachWorker(ctx, n, workers, func() func(i int) error {
		buf := make([]byte, 256<<10)
		return func(i int) error { return fn(i, buf) }
	})
}
