package atomicfs

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link to the old file keeps the old bytes: the file is
	// replaced, never written in place.
	link := filepath.Join(dir, "link")
	if err := os.Link(p, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o640, Options{Sync: true, SyncDir: true}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("%s holds %q", p, b)
	}
	if b, _ := os.ReadFile(link); string(b) != "old" {
		t.Fatalf("the link holds %q", b)
	}
	if fi, err := os.Stat(p); err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	onlyFiles(t, dir, "f.json", "link")
}

func TestFailedRenameLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("old"), 0o644)
	failing := Renamer{Rename: func(from, to string) error { return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EIO} }}
	if err := WriteFile(p, []byte("new"), 0o644, Options{Pattern: ".tmp-f-*", Renamer: failing}); !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("%s holds %q", p, b)
	}
	onlyFiles(t, dir, "f")
	// Abort after a commit does nothing; a commit after an abort fails.
	f, err := Create(p, 0o644, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("x"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort()
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Fatalf("%s holds %q", p, b)
	}
	g, _ := Create(p, 0o644, Options{})
	g.Abort()
	if err := g.Commit(); err == nil {
		t.Fatal("commit after abort succeeded")
	}
	onlyFiles(t, dir, "f")
}

func onlyFiles(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(want) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("%s holds %v, want %v", dir, names, want)
	}
}

// The schedules are the waits the policy sleeps, in order; CacheDelays
// gives up as soon as the destination exists when StopIfExists.
func TestSchedules(t *testing.T) {
	sum := func(ds []time.Duration) (total time.Duration) {
		for _, d := range ds {
			total += d
		}
		return total
	}
	if got := sum(InstallDelays); got != 1575*time.Millisecond {
		t.Errorf("InstallDelays total %v", got)
	}
	if got := sum(CacheDelays); got != 4575*time.Millisecond {
		t.Errorf("CacheDelays total %v", got)
	}
	var slept []time.Duration
	r := WindowsRenamer(CacheDelays)
	r.Sleep = func(d time.Duration) { slept = append(slept, d) }
	r.Rename = func(from, to string) error {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: os.ErrPermission}
	}
	dir := t.TempDir()
	if err := r.Do(filepath.Join(dir, "a"), filepath.Join(dir, "b")); !errors.Is(err, os.ErrPermission) || len(slept) != len(CacheDelays) {
		t.Fatalf("err %v after waits %v", err, slept)
	}
	for i, d := range slept {
		if d != CacheDelays[i] {
			t.Fatalf("wait %d is %v", i, d)
		}
	}
	slept = nil
	r.StopIfExists = true
	os.WriteFile(filepath.Join(dir, "b"), nil, 0o644)
	if err := r.Do(filepath.Join(dir, "a"), filepath.Join(dir, "b")); !errors.Is(err, os.ErrPermission) || len(slept) != 0 {
		t.Fatalf("err %v after waits %v", err, slept)
	}
	if DefaultRenamer(CacheDelays).Retryable != nil != (runtime.GOOS == "windows") {
		t.Error("DefaultRenamer retries off Windows, or not on it")
	}
}
