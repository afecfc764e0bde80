package swap

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Two directories change places, their contents with them.
func TestExchange(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "was"), []byte(filepath.Base(d)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := Exchange(a, b)
	if runtime.GOOS != "linux" {
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Exchange on %s: %v, want ErrUnsupported", runtime.GOOS, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]string{a: "b", b: "a"} {
		if got, err := os.ReadFile(filepath.Join(d, "was")); err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", d, got, err, want)
		}
	}
	if err := Exchange(a, filepath.Join(dir, "missing")); err == nil {
		t.Error("an exchange with a missing path succeeded")
	}
}
