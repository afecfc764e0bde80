package home

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The kept launcher is written when missing or different, and otherwise
// left alone without reading it (the stamp of both files' identities);
// a change to either file, even one that keeps its size and modification
// time, brings the compare back. A kept launcher someone changed is told
// from one piship kept before it was itself updated.
func TestKeepLauncher(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "piship-launch")
	home := filepath.Join(dir, "install")
	os.WriteFile(src, []byte("launcher v1"), 0o755)
	keep := func(want string, when string) {
		t.Helper()
		state, err := keepLauncherFrom(src, home)
		if err != nil || state != want {
			t.Fatalf("%s: found %q, %v; want %q", when, state, err, want)
		}
		got, _ := os.ReadFile(keptLauncher(src, home))
		orig, _ := os.ReadFile(src)
		if string(got) != string(orig) {
			t.Fatalf("%s: kept %q, want %q", when, got, orig)
		}
	}
	keep(launcherMissing, "first install")
	keep(launcherCurrent, "second install")
	if _, err := os.Stat(keptLauncher(src, home) + ".stamp"); err != nil {
		t.Errorf("no stamp: %v", err)
	}

	// Tampered with, same size, modification time restored.
	dst := keptLauncher(src, home)
	fi, _ := os.Stat(dst)
	os.WriteFile(dst, []byte("launcher XX"), 0o755)
	os.Chtimes(dst, time.Time{}, fi.ModTime())
	keep(launcherModified, "after the kept launcher changed")

	// A new piship beside it.
	os.WriteFile(src, []byte("launcher v2!"), 0o755)
	keep(launcherOutdated, "after piship was updated")
	keep(launcherCurrent, "again")
}
