package contentstore

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// writeKept writes data at dir/name (perm) as an install does and keeps it.
func writeKept(t *testing.T, s *Store, dir, name string, data []byte, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
	s.Keep(p, sha256.Sum256(data), perm)
	return p
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

func TestStorePlacesWhatItKept(t *testing.T) {
	s, dir := New(filepath.Join(t.TempDir(), "store")), t.TempDir()
	data := []byte("module.exports = 1\n")
	sum := sha256.Sum256(data)
	if s.Place(filepath.Join(dir, "a.js"), data, sum, 0o644) {
		t.Fatal("placed from an empty store")
	}
	kept := writeKept(t, s, dir, "a.js", data, 0o644)
	placed := filepath.Join(dir, "b.js")
	if !s.Place(placed, data, sum, 0o644) {
		t.Fatal("not placed from the object just kept")
	}
	if !sameFile(t, kept, placed) || !sameFile(t, placed, s.ObjectPath(sum, false)) {
		t.Error("the placed file is not a link of the object")
	}
	// The executable variant is another object.
	if s.Place(filepath.Join(dir, "c"), data, sum, 0o755) {
		t.Error("a plain object placed as an executable file")
	}
	writeKept(t, s, dir, "c", data, 0o755)
	if !s.Place(filepath.Join(dir, "d"), data, sum, 0o755) || !sameFile(t, filepath.Join(dir, "d"), s.ObjectPath(sum, true)) {
		t.Error("the .x object was not placed")
	}
	// Keeping bytes already stored leaves the object alone.
	writeKept(t, s, dir, "e.js", data, 0o644)
	if sameFile(t, filepath.Join(dir, "e.js"), s.ObjectPath(sum, false)) {
		t.Error("a second Keep replaced the object")
	}
	if st := s.Stats(); st.Linked != 2 || st.Kept != 2 || st.Repaired != 0 || st.Disabled {
		t.Errorf("stats %+v, want 2 linked, 2 kept", st)
	}
}

// A damaged object (an installed file edited in place edits its object,
// or its mode) is removed and counted, never linked.
func TestStoreRepairsDamagedObjects(t *testing.T) {
	data := []byte("export const x = 1\n")
	sum := sha256.Sum256(data)
	for name, damage := range map[string]func(p string){
		"edited":       func(p string) { os.WriteFile(p, []byte("export const x = 2\n"), 0o644) },
		"truncated":    func(p string) { os.Truncate(p, 3) },
		"made exec":    func(p string) { os.Chmod(p, 0o755) },
		"a directory":  func(p string) { os.Remove(p); os.Mkdir(p, 0o755) },
		"grown by one": func(p string) { os.WriteFile(p, append(append([]byte{}, data...), '\n'), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			s, dir := New(filepath.Join(t.TempDir(), "store")), t.TempDir()
			writeKept(t, s, dir, "a.js", data, 0o644)
			damage(s.ObjectPath(sum, false)) // or, the same inode, the installed a.js
			if s.Place(filepath.Join(dir, "b.js"), data, sum, 0o644) {
				t.Fatal("a damaged object was placed")
			}
			if _, err := os.Lstat(s.ObjectPath(sum, false)); !os.IsNotExist(err) {
				t.Errorf("the damaged object is still there (%v)", err)
			}
			if s.Stats().Repaired != 1 {
				t.Errorf("repaired %d, want 1", s.Stats().Repaired)
			}
			// The next install keeps it afresh and the one after links it.
			writeKept(t, s, dir, "b.js", data, 0o644)
			if !s.Place(filepath.Join(dir, "c.js"), data, sum, 0o644) {
				t.Error("not placed after the repair")
			}
		})
	}
}

// Link failures: EXDEV and the like switch the store off for the rest of
// the operation; EMLINK only skips that file; nothing fails.
func TestStoreLinkFailures(t *testing.T) {
	data := []byte("x")
	sum := sha256.Sum256(data)
	for _, tc := range []struct {
		err     error
		off     bool
		linkOne bool // a later placement still links
	}{
		{syscall.EXDEV, true, false},
		{syscall.EPERM, true, false},
		{syscall.EOPNOTSUPP, true, false},
		{syscall.EMLINK, false, true},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			s, dir := New(filepath.Join(t.TempDir(), "store")), t.TempDir()
			writeKept(t, s, dir, "a", data, 0o644)
			fail := true
			s.link = func(o, n string) error {
				if fail {
					fail = false
					return &os.LinkError{Op: "link", Old: o, New: n, Err: tc.err}
				}
				return os.Link(o, n)
			}
			if s.Place(filepath.Join(dir, "b"), data, sum, 0o644) {
				t.Fatal("placed although link failed")
			}
			if s.Stats().Disabled != tc.off {
				t.Errorf("disabled = %v, want %v", s.Stats().Disabled, tc.off)
			}
			if got := s.Place(filepath.Join(dir, "c"), data, sum, 0o644); got != tc.linkOne {
				t.Errorf("the next placement linked = %v, want %v", got, tc.linkOne)
			}
		})
	}
}

func TestOpenStore(t *testing.T) {
	cacheHome := t.TempDir()
	env := func(kv ...string) func(string) string {
		m := map[string]string{"PISHIP_CACHE_HOME": cacheHome}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	s, err := Open(env("PISHIP_STORE", "hardlink"))
	if err != nil || s == nil || s.Dir() != filepath.Join(cacheHome, "store") {
		t.Fatalf("hardlink: %v %v", s, err)
	}
	if s, err := Open(env("PISHIP_STORE", "off")); s != nil || err != nil {
		t.Errorf("off: %v %v", s, err)
	}
	if s, err := Open(env("PISHIP_STORE", "hardlink", "PISHIP_STORE_HOME", "/srv/objects")); err != nil || s.Dir() != "/srv/objects" {
		t.Errorf("PISHIP_STORE_HOME: %v %v", s, err)
	}
	for _, bad := range []string{"copy", "clone", "sometimes"} {
		// contentstore links no code: the refusal is a *ModeError, which
		// home.OpenStore prints as CONFIG_INVALID (TestOpenStoreCodes).
		var me *ModeError
		if _, err := Open(env("PISHIP_STORE", bad)); !errors.As(err, &me) || me.Mode != bad {
			t.Errorf("PISHIP_STORE=%s: %v, want a *ModeError", bad, err)
		}
	}
	if s, err := Open(env()); (s != nil) != (DefaultMode == Hardlink) || err != nil {
		t.Errorf("default: %v %v (default mode %s)", s, err, DefaultMode)
	}
}

// GC removes objects nothing else links once the grace is over, and keeps
// linked ones and young ones.
func TestStoreGC(t *testing.T) {
	s, dir := New(filepath.Join(t.TempDir(), "store")), t.TempDir()
	live := writeKept(t, s, dir, "live.js", []byte("live"), 0o644)
	dead := writeKept(t, s, dir, "dead.js", []byte("dead!"), 0o644)
	os.Remove(dead) // its version was reclaimed
	res, err := s.GC(time.Now().Add(time.Minute), Grace)
	if err != nil || res.Removed != 0 || res.Objects != 2 {
		t.Fatalf("within the grace: %+v %v, want nothing removed of 2", res, err)
	}
	res, err = s.GC(time.Now().Add(time.Minute), 0)
	if err != nil || res.Removed != 1 || res.Bytes != 5 {
		t.Fatalf("after the grace: %+v %v, want the dead object (5 bytes) removed", res, err)
	}
	if _, err := os.Stat(s.ObjectPath(sha256.Sum256([]byte("dead!")), false)); !os.IsNotExist(err) {
		t.Error("the dead object is still there")
	}
	if !sameFile(t, live, s.ObjectPath(sha256.Sum256([]byte("live")), false)) {
		t.Error("the live object was removed")
	}
	// An empty or missing store is nothing to do.
	if res, err := New(filepath.Join(t.TempDir(), "none")).GC(time.Now(), 0); err != nil || res.Objects != 0 {
		t.Errorf("missing store: %+v %v", res, err)
	}
}

// A deadline already past stops GC on the clock checks, whether it is
// unlinking or only looking.
func TestStoreGCBudget(t *testing.T) {
	s, dir := New(filepath.Join(t.TempDir(), "store")), t.TempDir()
	for i := range 1100 {
		p := writeKept(t, s, dir, strconv.Itoa(i), []byte(strconv.Itoa(i)), 0o644)
		if i%2 == 0 {
			os.Remove(p) // unlinked: GC may remove its object
		}
	}
	res, err := s.GC(time.Now().Add(-time.Second), 0)
	if err != nil || !res.Exhausted || res.Objects >= 1100 {
		t.Fatalf("past deadline: %+v %v, want it exhausted before looking at all 1,100", res, err)
	}
	if res.Removed > 64 {
		t.Errorf("removed %d past the deadline, want at most 64", res.Removed)
	}
}
