package atomicfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Options say how a File is named and finished. The zero value names it
// "."+base+".tmp-*", does not flush it and renames it once.
type Options struct {
	// Pattern names the temporary sibling as os.CreateTemp does ("" is
	// "."+base+".tmp-*").
	Pattern string
	// Sync flushes the file to stable storage before the rename; SyncDir
	// flushes the directory after it (on unix), so the rename survives a
	// crash.
	Sync, SyncDir bool
	// Renamer renames the file into place (the zero value: once).
	Renamer Renamer
}

// File is a temporary sibling of a destination, written in place of it
// and renamed over it by Commit. The destination is never opened: an
// existing file (maybe a hard link into a store) is replaced, not
// modified.
type File struct {
	*os.File
	path   string
	perm   fs.FileMode
	o      Options
	sealed bool
	done   bool
}

// Create makes the temporary sibling of path (in path's directory, which
// must exist), which Commit gives mode perm.
func Create(path string, perm fs.FileMode, o Options) (*File, error) {
	pattern := o.Pattern
	if pattern == "" {
		pattern = "." + filepath.Base(path) + ".tmp-*"
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path, perm: perm, o: o}, nil
}

// Path is the destination.
func (f *File) Path() string { return f.path }

// Seal gives the file its mode, flushes it if Options.Sync and closes it;
// Commit seals first. Sealing a sealed file does nothing. On an error the
// temporary file is removed.
func (f *File) Seal() error {
	if f.sealed {
		return nil
	}
	f.sealed = true
	err := f.Chmod(f.perm)
	if errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	if err == nil && f.o.Sync {
		err = f.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.Abort()
	}
	return err
}

// Commit seals the file and renames it over the destination (then
// flushes the directory if Options.SyncDir). On an error the destination
// is untouched and the temporary file removed.
func (f *File) Commit() error {
	if err := f.Seal(); err != nil {
		return err
	}
	if f.done {
		return errors.New("atomicfs: " + f.path + " is already committed or aborted")
	}
	if err := f.o.Renamer.Do(f.Name(), f.path); err != nil {
		f.Abort()
		return err
	}
	f.done = true
	if f.o.SyncDir {
		syncDir(filepath.Dir(f.path))
	}
	return nil
}

// Abort closes and removes the temporary file unless it was committed;
// it is safe to defer after a Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if !f.sealed {
		f.sealed = true
		f.File.Close()
	}
	os.Remove(f.Name())
}

// WriteFile replaces path with data through a temporary sibling given
// mode perm, as Create and Commit do. Path's directory must exist.
func WriteFile(path string, data []byte, perm fs.FileMode, o Options) error {
	f, err := Create(path, perm, o)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// WriteFileAll is WriteFile that first creates path's directory: how the
// stages write a payload's, a release's or a cache entry's files, so a
// reader never sees half a file and an existing file (maybe a hard link
// into a cache) is replaced, not modified.
func WriteFileAll(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return WriteFile(path, data, perm, Options{Pattern: ".tmp-" + filepath.Base(path) + "-*"})
}
