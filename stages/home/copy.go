package home

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

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
// is CONFIG_INVALID naming it.
func planTree(root string) (*tree, error) {
	t := &tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		slash := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			t.dirs = append(t.dirs, slash)
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (symlinks and special files are refused)", slash)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		t.files = append(t.files, treeFile{rel: slash, size: fi.Size(), exec: fi.Mode().Perm()&0o111 != 0})
		t.bytes += fi.Size()
		return nil
	})
	if err != nil {
		return nil, receipt.Errorf(receipt.CodeConfigInvalid, "cannot install %s: %v", root, err)
	}
	return t, nil
}

// copyTree copies t from src into dst (created; it must not exist or be
// empty) with writers parallel writers, hashing each file as it is copied.
// It returns slash path (prefixed with prefix) -> SHA-256. Files are not
// flushed.
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
		d := openDirPair(src, dst, filepath.FromSlash(path.Dir(t.files[bt.from].rel)))
		if d != nil {
			defer d.close()
		}
		for i := bt.from; i < bt.to; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			f := t.files[i]
			var s string
			var err error
			if d != nil {
				s, err = d.copy(path.Base(f.rel), f.exec, buf)
			} else {
				s, err = copyFile(filepath.Join(src, filepath.FromSlash(f.rel)), filepath.Join(dst, filepath.FromSlash(f.rel)), f.exec, buf)
			}
			if err != nil {
				return err
			}
			sums[i] = s
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

func copyFile(src, dst string, exec bool, buf []byte) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return "", err
	} else if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is no longer a regular file", src)
	}
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(io.MultiWriter(out, h), in, buf); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
	var (
		mu    sync.Mutex
		next  int
		first error
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			for {
				mu.Lock()
				if first == nil && ctx.Err() != nil {
					first = ctx.Err()
				}
				if first != nil || next >= n {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				if err := fn(i, buf); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
