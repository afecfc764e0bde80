package atomicfs

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// DirCache holds an os.Root per directory under a root (a destination
// being written, an installed tree being read), so that a writer creates
// or opens a file with one openat on its directory instead of re-walking
// the path from the root (os.Root opens every
// component of a path in turn: six opens for node_modules/p/dist/esm/x.js,
// which on the unbundled Pi payload was ~60,000 extra system calls). The
// handles stay confined: each comes from Root.OpenRoot of one component on
// its parent's handle, down from the root. Paths are slash paths
// relative to the root ("" or "." is the root itself). At most
// DirCacheMax idle handles are kept; handles in use are never closed
// under a user. stages/archive's extractor and stages/delta's Apply use
// it.
type DirCache struct {
	root *Dir // the root itself
	mu   sync.Mutex
	m    map[string]*cachedDir
	tick uint64
}

type cachedDir struct {
	h    *Dir
	refs int
	last uint64
}

// Dir is one directory of a DirCache: its Root, and on Linux its
// descriptor (FD, -1 elsewhere), through which a small file is created
// (CreateAt) or read (ReadFullAt) with one openat, one write or read and
// one close. (os.Root.OpenFile adds four fcntl calls and a
// failing epoll_ctl to every file, as os.OpenFile does: it tries to make
// a regular file pollable. That was ~7 us of each of 19,600 files.)
type Dir struct {
	Root *os.Root // nil for OpenDir's on Linux, where everything goes through FD
	FD   int      // -1: go through Root
	f    *os.File // holds FD open; nil where there is no descriptor or OpenDir opened it
}

// Create creates name (one path component) in d, failing if anything is
// there, and writes data: CreateAt through the descriptor where there is
// one, else through the Root.
func (d *Dir) Create(name string, data []byte, perm os.FileMode) error {
	if d.FD >= 0 {
		return CreateAt(d.FD, name, data, perm)
	}
	f, err := d.Root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFull fills buf with the first len(buf) bytes of the regular file
// name (one path component) in d: ReadFullAt through the descriptor where
// there is one, else OpenRegularIn and a read. A short file is
// io.ErrUnexpectedEOF, anything but a regular file a *NotRegularError.
func (d *Dir) ReadFull(name string, buf []byte) error {
	if d.FD >= 0 {
		return ReadFullAt(d.FD, name, buf)
	}
	f, err := OpenRegularIn(d.Root, name)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.ReadFull(f, buf); err == io.EOF {
		return io.ErrUnexpectedEOF
	} else if err != nil {
		return err
	}
	return nil
}

// CopyTo copies the regular file name in d to a new file of the same
// name in dst (perm; nothing may be there), through buf, writing every
// byte to h as well (the caller's hash), and returns the bytes copied:
// CopyAt through the descriptors where both have one, else OpenRegularIn
// and dst's Root. Either way the source is not followed, a named pipe is
// refused rather than waited on, and the size fstat gave is what is read,
// so a file that changes meanwhile is copied as read: the caller compares.
func (d *Dir) CopyTo(dst *Dir, name string, perm os.FileMode, buf []byte, h io.Writer) (int64, error) {
	if d.FD >= 0 && dst.FD >= 0 {
		return CopyAt(d.FD, dst.FD, name, perm, buf, h)
	}
	// os.Root follows a symbolic link that stays inside it: what stands
	// at name is checked first, and the file opened must be that one.
	lfi, err := d.Root.Lstat(name)
	if err != nil {
		return 0, err
	}
	if !lfi.Mode().IsRegular() {
		return 0, &NotRegularError{Path: name, Mode: lfi.Mode()}
	}
	in, err := OpenRegularIn(d.Root, name)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if !os.SameFile(lfi, fi) {
		return 0, fmt.Errorf("%s was replaced while it was opened", name)
	}
	out, err := dst.Root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, err
	}
	// Neither side offers WriterTo or ReaderFrom, so the copy goes
	// through buf.
	n, err := io.CopyBuffer(io.MultiWriter(out, h), io.LimitReader(in, fi.Size()), buf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// Close closes a Dir OpenDir returned (a DirCache's handles are the
// cache's to close).
func (d *Dir) Close() { d.close() }

func newDir(r *os.Root) *Dir {
	h := &Dir{Root: r, FD: -1}
	h.f, h.FD = DirFD(r)
	return h
}

func (h *Dir) close() {
	switch {
	case h.f != nil:
		h.f.Close()
	case h.FD >= 0:
		closeFD(h.FD) // OpenDir's
	}
	if h.Root != nil {
		h.Root.Close()
	}
}

// DirCacheMax is the most idle handles a DirCache keeps open.
const DirCacheMax = 256

// NewDirCache caches handles under root, which stays the caller's.
func NewDirCache(root *os.Root) *DirCache {
	return &DirCache{root: newDir(root), m: make(map[string]*cachedDir)}
}

// Split returns the directory of a slash path ("" at the top), as
// Acquire takes it, and its base.
func Split(name string) (dir, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// Acquire returns the handle of dir ("" or "." is the root itself),
// which must be a directory (fs.ErrNotExist when it is not there yet);
// the caller passes dir back to Release.
func (d *DirCache) Acquire(dir string) (*Dir, error) {
	if dir == "" || dir == "." {
		return d.root, nil
	}
	d.mu.Lock()
	if e := d.m[dir]; e != nil {
		e.refs++
		d.mu.Unlock()
		return e.h, nil
	}
	d.mu.Unlock()
	// Opened from its parent's handle (cached, as users go through
	// sorted paths): one openat, where opening it from the root would
	// open every component of its path again.
	parent, base := Split(dir)
	ph, err := d.Acquire(parent)
	if err != nil {
		return nil, err
	}
	r, err := ph.Root.OpenRoot(base)
	d.Release(parent)
	if err != nil {
		return nil, err
	}
	h := newDir(r)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[dir]; e != nil { // another writer opened it meanwhile
		h.close()
		e.refs++
		return e.h, nil
	}
	d.m[dir] = &cachedDir{h: h, refs: 1}
	if len(d.m) > DirCacheMax {
		d.evict()
	}
	return h, nil
}

// Release gives back a handle Acquire returned for dir.
func (d *DirCache) Release(dir string) {
	if dir == "" || dir == "." {
		return
	}
	d.mu.Lock()
	if e := d.m[dir]; e != nil {
		e.refs--
		d.tick++
		e.last = d.tick
	}
	d.mu.Unlock()
}

// evict closes idle handles, least recently released first, until a
// quarter of the room is free. Called with d.mu held.
func (d *DirCache) evict() {
	target := DirCacheMax * 3 / 4
	for len(d.m) > target {
		var oldest string
		var min uint64 = ^uint64(0)
		for k, e := range d.m {
			if e.refs == 0 && e.last < min {
				oldest, min = k, e.last
			}
		}
		if oldest == "" {
			return // all in use
		}
		d.m[oldest].h.close()
		delete(d.m, oldest)
	}
}

// Close closes every handle but the root's Root, which is the caller's.
func (d *DirCache) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, e := range d.m {
		e.h.close()
		delete(d.m, k)
	}
	if d.root.f != nil {
		d.root.f.Close() // the root's Root is the caller's
		d.root.f = nil
	}
}
