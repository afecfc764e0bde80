//go:build unix

package receipt

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A fallback directory someone else can write is neither written nor read.
func TestFallbackLeaseRefusesASharedDirectory(t *testing.T) {
	home := t.TempDir()
	t.Setenv(EnvRuntimeDir, "")
	t.Setenv("TMPDIR", t.TempDir())
	shared := filepath.Join(os.TempDir(), privateTempName())
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777)
	// A lease planted there would hold nothing, nor would one be written.
	planted := filepath.Join(FallbackLeaseRoots(home, "hello")[0], "1.0.0", "x.json")
	os.MkdirAll(filepath.Dir(planted), 0o755)
	os.WriteFile(planted, []byte("{}"), 0o644)
	refuse(t, syscall.EROFS, home)
	_, _, err := WriteLease(home, "hello", "1.0.0")
	if CodeOf(err) != CodeUnavailable || !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), "not a directory only this user can write") {
		t.Fatalf("err = %v", err)
	}
	if l, _ := ListLeases(home, "hello"); len(l) != 0 {
		t.Fatalf("read a shared directory: %+v", l)
	}
}
