package atomicfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Acquire opens a directory from its parent's handle, shares one handle
// between users, says fs.ErrNotExist for a directory not made yet (and
// finds it once it is), and refuses a symbolic link to a directory
// outside the root.
func TestDirCache(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := NewDirCache(r)
	defer c.Close()

	for _, top := range []string{"", "."} {
		h, err := c.Acquire(top)
		if err != nil || h.Root != r {
			t.Fatalf("Acquire(%q) = %v, %v: want the root", top, h, err)
		}
		c.Release(top)
	}
	h1, err := c.Acquire("a/b")
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := c.Acquire("a/b")
	if h1 != h2 {
		t.Fatal("two handles for one directory")
	}
	if err := h1.Root.Mkdir("c", 0o755); err != nil {
		t.Fatal(err)
	}
	c.Release("a/b")
	c.Release("a/b")
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "c")); err != nil {
		t.Fatalf("made through the handle: %v", err)
	}

	if _, err := c.Acquire("a/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing directory: %v, want ErrNotExist", err)
	}
	os.Mkdir(filepath.Join(dir, "a", "x"), 0o755)
	if _, err := c.Acquire("a/x"); err != nil {
		t.Fatalf("once made: %v", err)
	}
	c.Release("a/x")

	if err := os.Symlink(t.TempDir(), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire("out"); err == nil {
		t.Fatal("a symlink out of the root was opened")
	}
}
