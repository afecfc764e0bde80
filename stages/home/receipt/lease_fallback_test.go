package receipt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refuse makes creates under dir fail with errno, as a full or read-only
// file system would (file modes do not stop root).
func refuse(t *testing.T, errno syscall.Errno, dir string) {
	t.Helper()
	FaultHook = func(p string) error {
		if strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return &fs.PathError{Op: "open", Path: p, Err: errno}
		}
		return nil
	}
	t.Cleanup(func() { FaultHook = nil })
}

// A lease the install home refuses goes to the runtime directory, else to
// a private directory under TMPDIR; ListLeases of that home (and of no
// other) sees it, and remove takes it away.
func TestFallbackLease(t *testing.T) {
	home, other := t.TempDir(), t.TempDir()
	rt := t.TempDir()
	t.Setenv(EnvRuntimeDir, rt)
	t.Setenv("TMPDIR", t.TempDir())
	refuse(t, syscall.ENOSPC, home)
	for _, want := range []string{filepath.Join(rt, "piship"), filepath.Join(os.TempDir(), privateTempName())} {
		l, remove, err := WriteLease(home, "hello", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l.Path, want+string(filepath.Separator)) {
			t.Fatalf("lease at %s, want under %s", l.Path, want)
		}
		live, err := LiveLeases(home, "hello")
		if err != nil || len(live) != 1 || live[0].PID != os.Getpid() || !strings.Contains(live[0].Reason, "registered outside the install home") {
			t.Fatalf("%v %+v", err, live)
		}
		if l, _ := ListLeases(other, "hello"); len(l) != 0 {
			t.Fatalf("another home sees %+v", l)
		}
		if fi, err := os.Stat(want); err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", want, fi.Mode(), err)
		}
		remove()
		if l, _ := ListLeases(home, "hello"); len(l) != 0 {
			t.Fatalf("left %+v", l)
		}
		t.Setenv(EnvRuntimeDir, "")
	}
}

// A lock file the file system will not open for writing (read-only) is
// opened read-only and still excludes; a lock that cannot be opened at all
// (a directory in its place) is ErrLockUnopenable, a held one is not.
func TestGateOnARefusingHome(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	release, err := TakeGate(ctx, home, "hello", 0) // the lock file exists, as after an install
	if err != nil {
		t.Fatal(err)
	}
	release()
	refuse(t, syscall.EROFS, home)
	release, err = TakeGate(ctx, home, "hello", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = TakeGate(ctx, home, "hello", 20*time.Millisecond)
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "is held") || errors.Is(err, ErrLockUnopenable) {
		t.Fatalf("a second gate on a read-only home: %v", err)
	}
	release()

	FaultHook = nil
	other := t.TempDir()
	if err := os.MkdirAll(GatePath(other, "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = TakeGate(ctx, other, "hello", 0)
	if CodeOf(err) != CodeUnavailable || !errors.Is(err, ErrLockUnopenable) {
		t.Fatalf("a gate replaced by a directory: %v", err)
	}
}
