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
// handles stay confined: each comes from Root.OpenRoot on the destination.
// At most dirRootsMax idle handles are kept; handles in use are never
// closed under a writer.
type dirRoots struct {
	root *os.Root
	mu   sync.Mutex
	m    map[string]*dirRoot
	tick uint64
}

type dirRoot struct {
	r    *os.Root
	refs int
	last uint64
}

const dirRootsMax = 256

func newDirRoots(root *os.Root) *dirRoots {
	return &dirRoots{root: root, m: make(map[string]*dirRoot)}
}

// split returns the directory of a slash path ("" at the top) and its base.
func split(name string) (dir, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}

// acquire returns the Root of dir ("" is the destination itself); the
// caller passes it back to release.
func (d *dirRoots) acquire(dir string) (*os.Root, error) {
	if dir == "" {
		return d.root, nil
	}
	d.mu.Lock()
	if e := d.m[dir]; e != nil {
		e.refs++
		d.mu.Unlock()
		return e.r, nil
	}
	d.mu.Unlock()
	r, err := d.root.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e := d.m[dir]; e != nil { // another writer opened it meanwhile
		r.Close()
		e.refs++
		return e.r, nil
	}
	d.m[dir] = &dirRoot{r: r, refs: 1}
	if len(d.m) > dirRootsMax {
		d.evict()
	}
	return r, nil
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
		d.m[oldest].r.Close()
		delete(d.m, oldest)
	}
}

func (d *dirRoots) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, e := range d.m {
		e.r.Close()
		delete(d.m, k)
	}
}
