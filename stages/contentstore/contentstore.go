// Package contentstore is the content-addressed object store an install
// places small node_modules files from (Store), and its collection of the
// objects nothing links any more (GC, which doctor and `piship cache
// prune` run). It is the install's: the build's caches are package cache
// (the action cache) and stages/runtimecache.
package contentstore

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/hardlink"
)

// Store modes (PISHIP_STORE).
const (
	Off      = "off"
	Hardlink = "hardlink"
)

// Grace is how long an object no installation links any more is kept
// before GC removes it: an install that just read the object may be about
// to link it.
const Grace = 24 * time.Hour

// Store is the content-addressed object store an install places small
// node_modules files from (REFERENCE: objects/<aa>/<sha256>[.x], the .x
// variant for executable files). In hardlink mode an installed file and its
// object are one inode, so a second installation of the same bytes, in
// this home or another, or an update that keeps most of its dependencies,
// links instead of creating and writing: on a file system where a create
// costs ~0.5 ms and a link ~0.03 ms (this machine after deletions, Windows
// with Defender) that is most of an install.
//
// The store is an optimisation and never a dependency: an installation
// holds its own links, a launch never opens the store, and every failure
// of the store (a missing, damaged or foreign object, a file system without
// links) makes the install write the file as it would without one. A
// placement compares the object's bytes with the file's verified bytes
// before linking it, so a damaged object (a user who edited an installed
// file edited its object too) is removed, counted as repaired, and the
// file written and stored afresh.
//
// Safe for concurrent use by the writers of one install and by other
// processes: objects appear with one link(2), never change in place, and
// are removed only by GC once nothing else links them.
type Store struct {
	dir string

	off      atomic.Bool // a link failed in a way that rules out the rest (EXDEV ...)
	linked   atomic.Int64
	kept     atomic.Int64
	repaired atomic.Int64
	dirs     sync.Map // objects/<aa> made by this process

	link func(oldname, newname string) error // os.Link; tests inject failures
}

// Stats counts what a Store did.
type Stats struct {
	Linked   int64 // files placed by linking an object
	Kept     int64 // files written and added as objects
	Repaired int64 // damaged objects removed
	Disabled bool  // a link failure switched the store off for the rest
}

// DefaultMode is the mode when PISHIP_STORE is unset, chosen by
// measurement against REFERENCE's budgets for shipping a mode (warm <=
// 0.70x direct, fresh <= 1.15x): off. On this Linux ext4 a link costs what
// a create does once the file system has settled, so a warm store saved
// nothing and an empty one cost 1.3x (keeping each file is one more link);
// only where creates are slow (measured: ext4 without a journal after
// deletions, 3.5x; by REFERENCE, Windows with Defender, not measured here)
// does linking win (docs/performance.md).
// PISHIP_STORE=hardlink turns it on.
const DefaultMode = Off

// ModeError is a PISHIP_STORE value Open refuses: a configuration
// error (the caller gives it its code, CONFIG_INVALID; this package links
// no code). Open's other errors are a cache home it cannot find.
type ModeError struct {
	Mode string
	Msg  string
}

func (e *ModeError) Error() string { return e.Msg }

// Open resolves the store from PISHIP_STORE (off|hardlink; default
// DefaultMode) and PISHIP_STORE_HOME (default <cache home>/store). It returns
// nil, nil when the store is off; home.OpenStore gives its errors their
// codes. copy and clone, which REFERENCE also
// names, are refused: placing a file by copying it is the create and write
// an install does anyway, plus a read, so neither can be faster than no
// store for an install that already holds the bytes.
func Open(getenv func(string) string) (*Store, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	mode := strings.TrimSpace(getenv("PISHIP_STORE"))
	if mode == "" {
		mode = DefaultMode
	}
	switch mode {
	case Off:
		return nil, nil
	case Hardlink:
	case "copy", "clone":
		return nil, &ModeError{Mode: mode, Msg: fmt.Sprintf("PISHIP_STORE=%s is not offered: a copy or clone of an object costs what writing the file does; use hardlink or off", mode)}
	default:
		return nil, &ModeError{Mode: mode, Msg: fmt.Sprintf("PISHIP_STORE=%q: want off or hardlink", mode)}
	}
	dir := getenv("PISHIP_STORE_HOME")
	if dir == "" {
		home, err := cache.Home(getenv)
		if err != nil {
			return nil, fmt.Errorf("%v (or set PISHIP_STORE=off)", err)
		}
		dir = filepath.Join(home, "store")
	} else if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	return New(dir), nil
}

// New returns the hardlink store rooted at dir (created on first use).
func New(dir string) *Store { return &Store{dir: dir, link: os.Link} }

// Dir is the store's root.
func (s *Store) Dir() string { return s.dir }

// Stats returns what the store did so far.
func (s *Store) Stats() Stats {
	return Stats{Linked: s.linked.Load(), Kept: s.kept.Load(), Repaired: s.repaired.Load(), Disabled: s.off.Load()}
}

// Eligible reports whether the archive or payload path name is kept in the
// store: a file under a node_modules directory (the dependencies, and the
// vendored packages' own), as REFERENCE has it. The caller also bounds the
// size (files of up to 1 MiB).
func (s *Store) Eligible(name string) bool {
	return strings.HasPrefix(name, "node_modules/") || strings.Contains(name, "/node_modules/")
}

// ObjectPath is where the object of sum (raw SHA-256) lives.
func (s *Store) ObjectPath(sum [32]byte, exec bool) string {
	h := hex.EncodeToString(sum[:])
	if exec {
		h += ".x"
	}
	return filepath.Join(s.dir, "objects", h[:2], h)
}

func isExec(perm os.FileMode) bool { return perm&0o111 != 0 }

// Place makes path (which must not exist) a link to the object holding
// data, whose SHA-256 is sum, after checking that the object holds exactly
// data with perm. It reports whether it did; false means the caller writes
// the file itself (and then calls Keep).
func (s *Store) Place(path string, data []byte, sum [32]byte, perm os.FileMode) bool {
	if s.off.Load() {
		return false
	}
	obj := s.ObjectPath(sum, isExec(perm))
	if !s.matches(obj, data, perm) {
		return false
	}
	if err := s.link(obj, path); err != nil {
		if hardlink.Classify(err) == hardlink.CopyAll {
			s.off.Store(true)
		}
		return false
	}
	s.linked.Add(1)
	return true
}

// matches reports whether obj is a regular file of exactly data with perm;
// one that exists and is not is removed and counted as repaired.
func (s *Store) matches(obj string, data []byte, perm os.FileMode) bool {
	f, err := os.Open(obj)
	if err != nil {
		return false // none there (or unreadable): the caller writes the file
	}
	ok := sameContent(f, data, perm)
	f.Close()
	if !ok && os.Remove(obj) == nil {
		s.repaired.Add(1)
	}
	return ok
}

// sameContent reports whether f is a regular file holding exactly data,
// executable exactly when perm is. (The exec bit is part of the object's
// name; the other bits follow the umask of whoever wrote it.)
func sameContent(f *os.File, data []byte, perm os.FileMode) bool {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(data)) || isExec(fi.Mode().Perm()) != isExec(perm) {
		return false
	}
	buf := objBuffers.Get().(*[]byte)
	defer objBuffers.Put(buf)
	if cap(*buf) < len(data) {
		*buf = make([]byte, len(data))
	}
	b := (*buf)[:len(data)]
	_, err = io.ReadFull(f, b)
	return err == nil && bytes.Equal(b, data)
}

var objBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// Keep adds the file just written at path, whose SHA-256 is sum, as an
// object. An object already there (another writer or process stored the
// same bytes) is left as it is.
func (s *Store) Keep(path string, sum [32]byte, perm os.FileMode) {
	if s.off.Load() {
		return
	}
	obj := s.ObjectPath(sum, isExec(perm))
	d := filepath.Dir(obj)
	if _, ok := s.dirs.Load(d); !ok {
		if err := os.MkdirAll(d, 0o755); err != nil {
			s.off.Store(true) // an unwritable store: stop trying
			return
		}
		s.dirs.Store(d, true)
	}
	err := s.link(path, obj)
	switch {
	case err == nil:
		s.kept.Add(1)
	case errors.Is(err, fs.ErrExist):
	case hardlink.Classify(err) == hardlink.CopyAll:
		s.off.Store(true)
	}
}

// GCResult says what GC removed and left.
type GCResult struct {
	Objects   int   // objects looked at
	Removed   int   // objects no installation linked, older than the grace
	Bytes     int64 // bytes those held
	Exhausted bool  // the deadline came first
}

// GC removes the objects nothing else links (link count 1) whose last
// change is older than grace, until deadline (checked every 64 unlinks and
// every 1,024 objects looked at).
// In hardlink mode the link count is the liveness: every installed file,
// in any install home, that shares an object is one more link. Where the
// link count is unknown (not unix) it removes nothing.
func (s *Store) GC(deadline time.Time, grace time.Duration) (GCResult, error) {
	var res GCResult
	top := filepath.Join(s.dir, "objects")
	prefixes, err := os.ReadDir(top)
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	cutoff := time.Now().Add(-grace)
	unlinks := 0
	for _, p := range prefixes {
		if !p.IsDir() {
			continue
		}
		dir := filepath.Join(top, p.Name())
		ents, err := os.ReadDir(dir)
		if err != nil {
			return res, err
		}
		for _, e := range ents {
			res.Objects++
			// A large store with little to remove is mostly stats:
			// check the clock on those too.
			if res.Objects%1024 == 0 && time.Now().After(deadline) {
				res.Exhausted = true
				return res, nil
			}
			obj := filepath.Join(dir, e.Name())
			fi, err := os.Lstat(obj)
			if err != nil {
				continue
			}
			links, changed, ok := linkCount(fi)
			if !ok || links > 1 || changed.After(cutoff) {
				continue
			}
			if err := os.Remove(obj); err == nil {
				res.Removed++
				res.Bytes += fi.Size()
			}
			if unlinks++; unlinks%64 == 0 && time.Now().After(deadline) {
				res.Exhausted = true
				return res, nil
			}
		}
	}
	return res, nil
}
