package runtimecache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"

	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/hardlink"
)

// PlaceStats counts what Place did.
type PlaceStats struct {
	Linked   int   // regular files hardlinked to the entry's file
	Copied   int   // regular files copied (link refused or not possible)
	Symlinks int   // symbolic links recreated
	Bytes    int64 // total size of the regular files placed, linked or copied
}

// placeWorkers is how many files Place (and the entry checks) handle at
// once. Creating a file costs ~0.5 ms on ext4 and ~2 ms on Windows with a
// scanner, mostly waiting, so more workers than cores pay off; see
// BenchmarkPlace.
var placeWorkers = max(8, 2*runtime.GOMAXPROCS(0))

// Place materialises the entry's tree at dst, which must not exist or be
// an empty directory: directories are created (0755 before umask),
// regular files hardlinked to the entry's files when the filesystem allows
// it and copied otherwise, symbolic links recreated. EXDEV, EPERM, ENOTSUP
// and EINVAL (another volume, a filesystem or policy without hardlinks)
// switch the rest of the placement to copies; EMLINK (the file has too
// many links) copies just that file. Copies get the recorded mode; links
// share the entry's inode and mode. Files are placed in parallel.
//
// A linked file IS the cached file: the tree at dst must only ever have
// files removed or replaced (write a new file, rename it over), never
// written into, truncated or chmod'ed in place, or the cache entry changes
// with it (Get would then find it damaged, or, for a same-size change to a
// cheaply verified entry, not notice). On error dst is left partly
// populated; the caller removes it. An error saying an entry file does not
// exist usually means a concurrent Evict removed the entry.
func (e *Entry) Place(dst string) (PlaceStats, error) {
	var st PlaceStats
	if err := prepareDest(dst); err != nil {
		return st, err
	}
	// Directories, one depth at a time (parents first), each depth in
	// parallel.
	levels := map[int][]string{}
	for _, d := range e.Dirs {
		n := strings.Count(d, "/")
		levels[n] = append(levels[n], d)
	}
	depths := make([]int, 0, len(levels))
	for n := range levels {
		depths = append(depths, n)
	}
	sort.Ints(depths)
	for _, n := range depths {
		lvl := levels[n]
		err := parallel(len(lvl), func(i int) error {
			if err := os.Mkdir(filepath.Join(dst, filepath.FromSlash(lvl[i])), 0o755); err != nil {
				return fmt.Errorf("cache: placing %s: %w", e.Key, err)
			}
			return nil
		})
		if err != nil {
			return st, err
		}
	}

	var (
		linked, copied, symlinks, bytes atomic.Int64
		copyAll                         atomic.Bool
	)
	copyAll.Store(e.noLink)
	err := parallel(len(e.Files), func(i int) error {
		f := &e.Files[i]
		to := filepath.Join(dst, filepath.FromSlash(f.Path))
		if f.Link != "" {
			if err := os.Symlink(f.Link, to); err != nil {
				return fmt.Errorf("cache: placing %s: %w", e.Key, err)
			}
			symlinks.Add(1)
			return nil
		}
		from := filepath.Join(e.Dir, filepath.FromSlash(f.Path))
		if !copyAll.Load() {
			err := os.Link(from, to)
			if err == nil {
				linked.Add(1)
				bytes.Add(f.Size)
				return nil
			}
			switch hardlink.Classify(err) {
			case hardlink.Fail:
				return fmt.Errorf("cache: placing %s: %w", e.Key, err)
			case hardlink.CopyAll:
				copyAll.Store(true)
			}
		}
		if err := copyRecorded(from, to, f); err != nil {
			return fmt.Errorf("cache: placing %s: %w", e.Key, err)
		}
		copied.Add(1)
		bytes.Add(f.Size)
		return nil
	})
	st = PlaceStats{Linked: int(linked.Load()), Copied: int(copied.Load()), Symlinks: int(symlinks.Load()), Bytes: bytes.Load()}
	return st, err
}

// prepareDest creates dst, or accepts it if it is an empty directory.
func prepareDest(dst string) error {
	info, err := os.Lstat(dst)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("cache: placing into %s: %w", dst, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: placing into %s: %w", dst, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("cache: placing into %s: exists and is not a directory", dst)
	}
	d, err := os.Open(dst)
	if err != nil {
		return fmt.Errorf("cache: placing into %s: %w", dst, err)
	}
	defer d.Close()
	if names, err := d.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("cache: placing into %s: the directory is not empty", dst)
	} else if err != nil && err != io.EOF {
		return fmt.Errorf("cache: placing into %s: %w", dst, err)
	}
	return nil
}

// copyRecorded copies the entry file from to the new file to, with the
// recorded mode, and checks that it copied the recorded number of bytes.
func copyRecorded(from, to string, f *FileRecord) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fs.FileMode(f.Mode))
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(to)
		}
	}()
	n, err := io.Copy(out, in) // copy_file_range where the kernel has it
	if err != nil {
		return err
	}
	if n != f.Size {
		return fmt.Errorf("%s has %d bytes, listed %d (the entry changed)", from, n, f.Size)
	}
	if runtime.GOOS != "windows" {
		// The create mode went through the umask; the payload gets
		// exactly the recorded mode, like a linked file.
		return out.Chmod(fs.FileMode(f.Mode))
	}
	return nil
}

// parallel calls fn(0) ... fn(n-1) on up to placeWorkers goroutines and
// returns the first error; after an error no new calls start.
func parallel(n int, fn func(i int) error) error {
	return par.ForEach(context.Background(), n, placeWorkers, fn)
}
