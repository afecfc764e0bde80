package archive

import (
	"os"
	"strings"
	"sync"
)

// dirRoots caches an os.Root per directory of the destination, so that a
// writer creates a file with one openat on its directory instead of
// re-walking the path from the destination root (os.Root opens every
// component of a path in turn: six opens for node_modules/p/dist/esm/x.js,
// which on the unbundled Pi payload was ~60,000 extra system calls). The
// handles stay confined: each comes from Root.OpenRoot of one component on
// its parent's handle, down from the destination.
// At most dirRootsMax idle handles are kept; handles in use are never
// closed under a writer.
type dirRoots struct {
	root *dirHandle // the destination itself
	mu   sync.Mutex
	m    map[string]*dirRoot
	tick uint64
}

type dirRoot struct {
	h    *dirHandle
	refs int
	last uint64
}

// dirHandle is one directory of the destination: its Root, and on unix
// its descriptor, through which a small file is created with one openat,
// one write and one close. (os.Root.OpenFile adds four fcntl calls and a
// failing epoll_ctl to every file, as os.OpenFile does: it tries to make
// a regular file pollable. That was ~7 us of each of 19,600 files.)
type dirHandle struct {
	r  *os.Root
	f  *os.File // holds fd open; nil where there is no descriptor
	fd int      // -1: create through r
}

func newDirHandle(r *os.Root) *dirHandle {
	h := &dirHandle{r: r, fd: -1}
	h.f, h.fd = dirFD(r)
	return h
}

func (h *dirHandle) close() {
	if h.f != nil {
		h.f.Close()
	}
	h.r.Close()
}

const dirRootsMax = 256

func newDirRoots(root *os.Root) *dirRoots {
	return &dirRoots{root: newDirHandle(root), m: make(map[string]*dirRoot)}
}

// split returns the directory of a slash path ("" at the top) and its base.
func split(name string) (dir, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// acquire returns the handle of dir ("" is the destination itself); the
// caller passes it back to release.
func (d *dirRoots) acquire(dir string) (*dirHandle, error) {
	if dir == "" {
		return d.root, nil
	}
	d.mu.Lock()
	if e := d.m[dir]; e != nil {
		e.refs++
		d.mu.Unlock()
		return e.h, nil
	}
	d.mu.Unlock()
	// Opened from its parent's handle (cached, as the archive's paths
	// are sorted): one openat, where opening it from the destination
	// would open every component of its path again.
	parent, base := split(dir)
	ph, err := d.acquire(parent)
	if err != nil {
		return nil, err
	}
	r, err := ph.r.OpenRoot(base)
	d.release(parent)
	if err != nil {
		return nil, err
	}
	h := newDirHandle(r)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[dir]; e != nil { // another writer opened it meanwhile
		h.close()
		e.refs++
		return e.h, nil
	}
	d.m[dir] = &dirRoot{h: h, refs: 1}
	if len(d.m) > dirRootsMax {
		d.evict()
	}
	return h, nil
}

func (d *dirRoots) release(dir string) {
	if dir == "" {
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
func (d *dirRoots) evict() {
	target := dirRootsMax * 3 / 4
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

func (d *dirRoots) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, e := range d.m {
		e.h.close()
		delete(d.m, k)
	}
	if d.root.f != nil {
		d.root.f.Close() // the destination's Root is the caller's
		d.root.f = nil
	}
}
