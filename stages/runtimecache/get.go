package runtimecache

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
)

// Get returns the entry for key if it exists and is trustworthy, refreshing
// its mtime (eviction order).
//
// Verification is cheap on purpose: the manifest must parse and its digest
// match, and the tree on disk must hold exactly the listed directories and
// files, each with the listed size and mode (symbolic links: target). With
// verifyContent (bundle entries) every regular file is also re-hashed.
//
// A missing entry is (nil, nil). A damaged one is removed (renamed aside,
// then deleted) and reported as (nil, *cache.DamagedError): log it and rebuild.
// An entry that disappears while it is being checked (a concurrent Evict)
// is a plain miss.
//
// With a remote cache (WithRemote), a local miss or damage is pulled from it
// and checked again here, content included; what fails is a miss.
func (r *Cache) Get(key string, verifyContent bool) (*Entry, error) {
	e, err := r.get(key, verifyContent, nil)
	if e != nil || r.remote == nil || cache.CheckRuntimeKey(key) != nil {
		return e, err
	}
	pe, perr := r.pull(key)
	if pe != nil {
		return pe, nil
	}
	if err == nil {
		err = perr
	}
	return nil, err
}

// get is Get from the local disk alone. verified are digests of files of
// the tree already checked against their content (a pull's), by tree path:
// checkContent takes those instead of reading the files.
func (r *Cache) get(key string, verifyContent bool, verified map[string]string) (*Entry, error) {
	if err := cache.CheckRuntimeKey(key); err != nil {
		return nil, err
	}
	edir := r.entryDir(key)
	info, err := os.Lstat(edir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache: looking up runtime entry %s: %w", key, err)
	}
	if !info.IsDir() {
		return r.damaged(key, edir, info, &cache.DamagedError{Reason: "not a directory"})
	}
	m, d := readRuntimeManifest(key, edir)
	if d != nil {
		return r.damaged(key, edir, info, d)
	}
	e := &Entry{Key: key, Dir: filepath.Join(edir, runtimeTreeName), Digest: m.Digest, Dirs: m.Dirs, Files: m.Files, Inputs: m.Inputs}
	if d := e.checkTree(); d != nil {
		return r.damaged(key, edir, info, d)
	}
	if verifyContent {
		if d := e.checkContent(verified); d != nil {
			return r.damaged(key, edir, info, d)
		}
	}
	now := r.now()
	_ = os.Chtimes(edir, now, now) // best effort: only affects eviction order
	return e, nil
}

// damaged removes a damaged entry and reports it; if the entry vanished or
// was replaced while it was checked, that is a miss.
func (r *Cache) damaged(key, edir string, seen fs.FileInfo, d *cache.DamagedError) (*Entry, error) {
	if now, err := os.Lstat(edir); err != nil || !os.SameFile(seen, now) {
		return nil, nil
	}
	d.Key, d.Dir = key, edir
	d.RemoveErr = removeAside(r.root, edir)
	return nil, d
}

// readRuntimeManifest reads and checks an entry's manifest.json.
func readRuntimeManifest(key, edir string) (*runtimeManifest, *cache.DamagedError) {
	data, err := os.ReadFile(filepath.Join(edir, runtimeManifestName))
	if err != nil {
		return nil, &cache.DamagedError{Reason: "reading " + runtimeManifestName, Err: err}
	}
	var m runtimeManifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &cache.DamagedError{Reason: "malformed " + runtimeManifestName, Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &cache.DamagedError{Reason: "malformed " + runtimeManifestName + ": trailing data"}
	}
	bad := func(format string, args ...any) (*runtimeManifest, *cache.DamagedError) {
		return nil, &cache.DamagedError{Reason: runtimeManifestName + ": " + fmt.Sprintf(format, args...)}
	}
	if m.Schema != runtimeSchemaV1 {
		return bad("unknown schema %q (want %q)", m.Schema, runtimeSchemaV1)
	}
	if m.Key != key {
		return bad("written for key %q", m.Key)
	}
	if _, err := time.Parse(time.RFC3339Nano, m.Created); err != nil {
		return bad("malformed created time %q", m.Created)
	}
	if sum := treeDigest(m.Dirs, m.Files); sum != m.Digest {
		return bad("digest mismatch (recorded %q, computed %s)", m.Digest, sum)
	}
	dirSet := make(map[string]bool, len(m.Dirs))
	for i, d := range m.Dirs {
		if cache.CheckOutputPath(d) != nil || i > 0 && m.Dirs[i-1] >= d {
			return bad("invalid or unsorted directory %q", d)
		}
		if p := path.Dir(d); p != "." && !dirSet[p] {
			return bad("directory %q without its parent", d)
		}
		dirSet[d] = true
	}
	for i, f := range m.Files {
		if cache.CheckOutputPath(f.Path) != nil || i > 0 && m.Files[i-1].Path >= f.Path {
			return bad("invalid or unsorted file %q", f.Path)
		}
		if p := path.Dir(f.Path); p != "." && !dirSet[p] || dirSet[f.Path] {
			return bad("file %q outside the listed directories", f.Path)
		}
		if f.Link != "" {
			if f.Size != 0 || f.Mode != 0 || f.SHA256 != "" || checkLinkTarget(f.Path, f.Link) != nil {
				return bad("invalid symbolic link record %q", f.Path)
			}
		} else if f.Size < 0 || f.Mode != 0o644 && f.Mode != 0o755 || !cache.IsDigest(f.SHA256) {
			return bad("invalid file record %q", f.Path)
		}
	}
	return &m, nil
}

// checkTree compares the tree on disk with the listing: same directories,
// same files, each with the listed type, size, mode and link target. The
// directories are read in parallel.
func (e *Entry) checkTree() *cache.DamagedError {
	dirSet := make(map[string]bool, len(e.Dirs))
	for _, d := range e.Dirs {
		dirSet[d] = true
	}
	fileIdx := make(map[string]int, len(e.Files))
	for i, f := range e.Files {
		fileIdx[f.Path] = i
	}
	var found atomic.Int64
	dirs := append([]string{"."}, e.Dirs...)
	err := parallel(len(dirs), func(i int) error {
		rel := dirs[i]
		f, err := os.Open(filepath.Join(e.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return &cache.DamagedError{Reason: fmt.Sprintf("reading directory %q", rel), Err: err}
		}
		infos, err := f.Readdir(-1)
		f.Close()
		if err != nil {
			return &cache.DamagedError{Reason: fmt.Sprintf("reading directory %q", rel), Err: err}
		}
		for _, info := range infos {
			p := info.Name()
			if rel != "." {
				p = rel + "/" + p
			}
			if info.IsDir() {
				if !dirSet[p] {
					return &cache.DamagedError{Reason: fmt.Sprintf("unlisted directory %q in the tree", p)}
				}
				continue
			}
			idx, ok := fileIdx[p]
			if !ok {
				return &cache.DamagedError{Reason: fmt.Sprintf("unlisted file %q in the tree", p)}
			}
			if d := checkFile(e.Dir, &e.Files[idx], info); d != nil {
				return d
			}
			found.Add(1)
		}
		return nil
	})
	if err != nil {
		return err.(*cache.DamagedError)
	}
	if n := found.Load(); n != int64(len(e.Files)) {
		return &cache.DamagedError{Reason: fmt.Sprintf("%s %s missing from the tree", canon.Of(int64(len(e.Files))-n, int64(len(e.Files)), "listed file"), canon.Verb(int64(len(e.Files))-n, "is", "are"))}
	}
	return nil
}

// checkFile compares one file on disk (info from Lstat) with its record.
func checkFile(tree string, f *FileRecord, info fs.FileInfo) *cache.DamagedError {
	if f.Link != "" {
		if info.Mode()&fs.ModeSymlink == 0 {
			return &cache.DamagedError{Reason: fmt.Sprintf("%q is listed as a symbolic link but is not one", f.Path)}
		}
		target, err := os.Readlink(filepath.Join(tree, filepath.FromSlash(f.Path)))
		if err != nil {
			return &cache.DamagedError{Reason: fmt.Sprintf("reading symbolic link %q", f.Path), Err: err}
		}
		if target != f.Link {
			return &cache.DamagedError{Reason: fmt.Sprintf("symbolic link %q points to %q, listed %q", f.Path, target, f.Link)}
		}
		return nil
	}
	if !info.Mode().IsRegular() {
		return &cache.DamagedError{Reason: fmt.Sprintf("%q is listed as a regular file but has mode %s", f.Path, info.Mode())}
	}
	if info.Size() != f.Size {
		return &cache.DamagedError{Reason: fmt.Sprintf("%q has %d bytes, listed %d", f.Path, info.Size(), f.Size)}
	}
	if runtime.GOOS != "windows" && uint32(info.Mode().Perm()) != f.Mode {
		return &cache.DamagedError{Reason: fmt.Sprintf("%q has mode %#o, listed %#o", f.Path, info.Mode().Perm(), f.Mode)}
	}
	return nil
}

// checkContent re-hashes every regular file of the tree, in parallel, but
// those whose listed digest verified already holds.
func (e *Entry) checkContent(verified map[string]string) *cache.DamagedError {
	err := parallel(len(e.Files), func(i int) error {
		f := &e.Files[i]
		if f.Link != "" || (verified[f.Path] != "" && verified[f.Path] == f.SHA256) {
			return nil // checkTree compared the size
		}
		in, err := os.Open(filepath.Join(e.Dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return &cache.DamagedError{Reason: fmt.Sprintf("reading %q", f.Path), Err: err}
		}
		size, sum, err := cache.HashReader(in)
		in.Close()
		if err != nil {
			return &cache.DamagedError{Reason: fmt.Sprintf("reading %q", f.Path), Err: err}
		}
		if size != f.Size || sum != f.SHA256 {
			return &cache.DamagedError{Reason: fmt.Sprintf("%q has sha256 %s (%d bytes), listed %s (%d bytes)", f.Path, sum, size, f.SHA256, f.Size)}
		}
		return nil
	})
	if err != nil {
		return err.(*cache.DamagedError)
	}
	return nil
}
