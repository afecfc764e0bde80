package runtimecache

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestRuntimeEvict(t *testing.T) {
	r := Open(t.TempDir())
	base := time.Now().Add(-time.Hour)
	var ikeys, bkeys []string
	for i := range 5 {
		for _, kind := range []string{"i", "b"} {
			key := kind + rtKey(fmt.Sprint(i))[1:]
			if _, err := r.Create(key, func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "f"), []byte(key), 0o644)
			}); err != nil {
				t.Fatal(err)
			}
			// Entry i was last used at base + i minutes.
			mt := base.Add(time.Duration(i) * time.Minute)
			if err := os.Chtimes(filepath.Join(r.Root(), key), mt, mt); err != nil {
				t.Fatal(err)
			}
			if kind == "i" {
				ikeys = append(ikeys, key)
			} else {
				bkeys = append(bkeys, key)
			}
		}
	}
	// A hit makes entry 0 the newest.
	if e, err := r.Get(ikeys[0], false); e == nil || err != nil {
		t.Fatalf("Get = %v, %v", e, err)
	}
	if err := r.Evict("i-", 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{ikeys[0]: true, ikeys[4]: true, ikeys[3]: true}
	for _, k := range bkeys {
		want[k] = true // another prefix is untouched
	}
	got := map[string]bool{}
	for _, name := range rtRootNames(t, r) {
		got[name] = true
	}
	if fmt.Sprint(sortedBoolKeys(got)) != fmt.Sprint(sortedBoolKeys(want)) {
		t.Fatalf("after Evict(i-, 3) the root holds %v, want %v", sortedBoolKeys(got), sortedBoolKeys(want))
	}
	if err := r.Evict("b-", 0, 0); err != nil {
		t.Fatal(err)
	}
	if names := rtRootNames(t, r); len(names) != 3 {
		t.Fatalf("after Evict(b-, 0) the root holds %q", names)
	}
	if err := r.Evict("i-", -1, 0); err == nil {
		t.Fatal("Evict accepted a negative keep")
	}
	if err := Open(t.TempDir()).Evict("i-", 3, time.Second); err != nil {
		t.Fatalf("Evict on a missing root: %v", err)
	}
}

func sortedBoolKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRuntimeEvictBudget(t *testing.T) {
	r := Open(t.TempDir())
	big, small := rtKey("big"), rtKey("small")
	if _, err := r.Create(big, func(dir string) error {
		for i := range 1000 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(i)), nil, 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(r.Root(), big), old, old)
	if _, err := r.Create(small, func(dir string) error { return nil }); err != nil {
		t.Fatal(err)
	}

	// A budget that is spent at once: the entry is set aside (gone from
	// the cache) but at most 64 files are deleted.
	if err := r.Evict("i-", 1, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	names := rtRootNames(t, r)
	if len(names) != 2 || names[0] != small && names[1] != small {
		t.Fatalf("root holds %q, want %s and one set-aside directory", names, small)
	}
	var trash string
	for _, n := range names {
		if strings.HasPrefix(n, runtimeDelPrefix) {
			trash = n
		}
	}
	left, err := os.ReadDir(filepath.Join(r.Root(), trash, runtimeTreeName))
	if err != nil || len(left) < 1000-64 {
		t.Fatalf("set-aside entry has %d files left (%v); a spent budget must stop within 64 unlinks", len(left), err)
	}
	if e, err := r.Get(big, false); e != nil || err != nil {
		t.Fatalf("Get of the evicted entry = %v, %v; want a miss", e, err)
	}

	// The next Evict finishes the deletion and sweeps stale temporary
	// directories, keeping fresh ones (a writer may be busy in them).
	stale := filepath.Join(r.Root(), runtimeTmpPrefix+big+"-1")
	fresh := filepath.Join(r.Root(), runtimeTmpPrefix+big+"-2")
	for _, d := range []string{stale, fresh} {
		os.MkdirAll(filepath.Join(d, "tree"), 0o755)
		os.WriteFile(filepath.Join(d, "tree", "f"), nil, 0o644)
	}
	veryOld := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{filepath.Join(stale, "tree", "f"), filepath.Join(stale, "tree"), stale} {
		os.Chtimes(p, veryOld, veryOld)
	}
	if err := r.Evict("i-", 1, 0); err != nil {
		t.Fatal(err)
	}
	names = rtRootNames(t, r)
	sort.Strings(names)
	if want := []string{filepath.Base(fresh), small}; fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("root holds %q, want %q", names, want)
	}
}
