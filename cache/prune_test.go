package cache

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pruneFixture stores one entry per age (in the given order) into a store
// whose clock is fixed at now, and sets each entry's mtime to now-age.
func pruneFixture(t *testing.T, now time.Time, ages []time.Duration) (*Actions, []string) {
	t.Helper()
	a := OpenActions(t.TempDir())
	a.now = func() time.Time { return now }
	var ks []string
	for i, age := range ages {
		key := testKey(t.Name() + string(rune('a'+i)))
		src := t.TempDir()
		// Same-size contents so every entry has the same size.
		writeTree(t, src, map[string]string{"o.bin": strings.Repeat(string(rune('a'+i)), 1000)})
		if _, err := a.Store(key, src, []string{"o.bin"}, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		mt := now.Add(-age)
		if err := os.Chtimes(a.entryDir(key), mt, mt); err != nil {
			t.Fatal(err)
		}
		ks = append(ks, key)
	}
	return a, ks
}

func present(t *testing.T, a *Actions, ks []string) []bool {
	t.Helper()
	out := make([]bool, len(ks))
	for i, k := range ks {
		_, err := os.Stat(a.entryDir(k))
		switch {
		case err == nil:
			out[i] = true
		case !errors.Is(err, fs.ErrNotExist):
			t.Fatal(err)
		}
	}
	return out
}

func TestPrune(t *testing.T) {
	const day = 24 * time.Hour
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// Deliberately not in age order.
	ages := []time.Duration{5 * day, 10 * day, time.Hour, 2 * day}
	tests := []struct {
		name    string
		maxSize func(entrySize int64) int64
		maxAge  time.Duration
		want    []bool // which of ages survive
	}{
		{"no limits", func(int64) int64 { return 0 }, 0, []bool{true, true, true, true}},
		{"age 7d", func(int64) int64 { return 0 }, 7 * day, []bool{true, false, true, true}},
		{"age 1d", func(int64) int64 { return 0 }, day, []bool{false, false, true, false}},
		{"age 1m", func(int64) int64 { return 0 }, time.Minute, []bool{false, false, false, false}},
		{"size fits", func(s int64) int64 { return 4 * s }, 0, []bool{true, true, true, true}},
		{"size one byte short", func(s int64) int64 { return 4*s - 1 }, 0, []bool{true, false, true, true}},
		{"size for two", func(s int64) int64 { return 2 * s }, 0, []bool{false, false, true, true}},
		{"size for one", func(s int64) int64 { return s }, 0, []bool{false, false, true, false}},
		{"size too small for any", func(int64) int64 { return 1 }, 0, []bool{false, false, false, false}},
		{"age then size", func(s int64) int64 { return 2 * s }, 7 * day, []bool{false, false, true, true}},
		{"age then size (age alone enough)", func(s int64) int64 { return 3 * s }, 3 * day, []bool{false, false, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ks := pruneFixture(t, now, ages)
			entrySize := treeSize(a.entryDir(ks[0]))
			for _, k := range ks[1:] {
				if s := treeSize(a.entryDir(k)); s != entrySize {
					t.Fatalf("fixture entries differ in size: %d vs %d", s, entrySize)
				}
			}
			maxSize := tt.maxSize(entrySize)
			rep, err := a.Prune(maxSize, tt.maxAge)
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			got := present(t, a, ks)
			removed := 0
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry aged %v present = %v, want %v", ages[i], got[i], tt.want[i])
				}
				if !tt.want[i] {
					removed++
				}
			}
			want := PruneReport{
				Entries:     len(ages),
				Removed:     removed,
				BytesBefore: int64(len(ages)) * entrySize,
				BytesAfter:  int64(len(ages)-removed) * entrySize,
			}
			if rep != want {
				t.Errorf("report = %+v, want %+v", rep, want)
			}
			if maxSize > 0 && rep.BytesAfter > maxSize {
				t.Errorf("BytesAfter %d > maxSize %d", rep.BytesAfter, maxSize)
			}
			if leftovers := tempDirs(t, a); len(leftovers) != 0 {
				t.Errorf("temporary directories left behind: %v", leftovers)
			}
		})
	}
}

func TestPruneLookupRefreshesAge(t *testing.T) {
	const day = 24 * time.Hour
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a, ks := pruneFixture(t, now, []time.Duration{3 * day, 2 * day, day})
	// Using the oldest entry makes it the most recently used.
	if _, hit, err := a.Lookup(ks[0], t.TempDir(), []string{"o.bin"}); !hit || err != nil {
		t.Fatalf("Lookup = %v, %v", hit, err)
	}
	size := treeSize(a.entryDir(ks[0]))
	if _, err := a.Prune(size, 0); err != nil {
		t.Fatal(err)
	}
	if got, want := present(t, a, ks), []bool{true, false, false}; !equalBools(got, want) {
		t.Errorf("present = %v, want %v", got, want)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPruneSweepsStaleTempDirs(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a, ks := pruneFixture(t, now, []time.Duration{time.Minute})
	mk := func(name string, age time.Duration) string {
		dir := filepath.Join(a.Root(), name)
		writeTree(t, dir, map[string]string{"files/0": "partial", "entry.json": "{"})
		mt := now.Add(-age)
		for _, p := range []string{"files/0", "entry.json", "files", "."} {
			if err := os.Chtimes(filepath.Join(dir, p), mt, mt); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk(tempPrefix+"stale", 2*time.Hour)
	staleDel := mk(tempPrefix+"del-stale", 90*time.Minute)
	fresh := mk(tempPrefix+"fresh", 10*time.Minute)
	// A temp dir that is old but whose writer is still writing a file.
	busy := mk(tempPrefix+"busy", 3*time.Hour)
	if err := os.Chtimes(filepath.Join(busy, "files", "0"), now, now); err != nil {
		t.Fatal(err)
	}
	// Foreign files in the root are left alone.
	junk := filepath.Join(a.Root(), "README")
	writeTree(t, a.Root(), map[string]string{"README": "hi"})
	if err := os.Chtimes(junk, now.Add(-100*time.Hour), now.Add(-100*time.Hour)); err != nil {
		t.Fatal(err)
	}

	rep, err := a.Prune(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Entries != 1 || rep.Removed != 0 {
		t.Errorf("report = %+v, want 1 entry, none removed", rep)
	}
	for _, tc := range []struct {
		path string
		want bool
	}{{stale, false}, {staleDel, false}, {fresh, true}, {busy, true}, {junk, true}, {a.entryDir(ks[0]), true}} {
		_, err := os.Stat(tc.path)
		if got := err == nil; got != tc.want {
			t.Errorf("%s present = %v, want %v (%v)", filepath.Base(tc.path), got, tc.want, err)
		}
	}
}

func TestPruneEdgeCases(t *testing.T) {
	a := OpenActions(filepath.Join(t.TempDir(), "never-created"))
	rep, err := a.Prune(1, time.Hour)
	if err != nil || rep != (PruneReport{}) {
		t.Errorf("Prune on missing root = %+v, %v; want empty report", rep, err)
	}
	if _, err := a.Prune(-1, 0); err == nil {
		t.Error("Prune(-1, 0) succeeded")
	}
	if _, err := a.Prune(0, -time.Hour); err == nil {
		t.Error("Prune(0, -1h) succeeded")
	}
}
