package atomicfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// A Dir creates and reads the same through its descriptor and, where
// there is none (FD -1, as off Linux), through its Root: a second create
// fails, a short file is io.ErrUnexpectedEOF.
func TestDirCreateAndReadFull(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	withFD := newDir(r)
	defer func() {
		if withFD.f != nil {
			withFD.f.Close()
		}
	}()
	for name, d := range map[string]*Dir{"descriptor": withFD, "root": {Root: r, FD: -1}} {
		if err := d.Create(name, []byte("hello"), 0o644); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := d.Create(name, []byte("again"), 0o644); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("%s: a second create: %v, want ErrExist", name, err)
		}
		buf := make([]byte, 4)
		if err := d.ReadFull(name, buf); err != nil || string(buf) != "hell" {
			t.Fatalf("%s: read %q, %v", name, buf, err)
		}
		if err := d.ReadFull(name, make([]byte, 6)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%s: a short file: %v, want ErrUnexpectedEOF", name, err)
		}
	}
}

// CopyTo copies the same way through descriptors (OpenDir on Linux) and
// through Roots (elsewhere, and here a Dir without FD): the bytes and
// their hash, the mode, an existing destination refused, a symbolic link
// not followed.
func TestCopyTo(t *testing.T) {
	for name, open := range map[string]func(t *testing.T, dir string) *Dir{
		"OpenDir": func(t *testing.T, dir string) *Dir {
			d, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Close)
			return d
		},
		"Root": func(t *testing.T, dir string) *Dir {
			r, err := os.OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			d := &Dir{Root: r, FD: -1}
			t.Cleanup(d.Close)
			return d
		},
	} {
		t.Run(name, func(t *testing.T) {
			srcDir, dstDir := t.TempDir(), t.TempDir()
			src, dst := open(t, srcDir), open(t, dstDir)
			data := []byte(strings.Repeat("piship ", 3000))
			os.WriteFile(filepath.Join(srcDir, "a"), data, 0o644)
			var seen strings.Builder
			n, err := src.CopyTo(dst, "a", 0o755, make([]byte, 4096), &seen)
			if err != nil || n != int64(len(data)) || seen.String() != string(data) {
				t.Fatalf("CopyTo: %d bytes, %v; the hash saw %d", n, err, seen.Len())
			}
			if got, _ := os.ReadFile(filepath.Join(dstDir, "a")); string(got) != string(data) {
				t.Fatalf("copied %d bytes", len(got))
			}
			if fi, _ := os.Stat(filepath.Join(dstDir, "a")); fi == nil || fi.Mode().Perm() != 0o755 {
				t.Errorf("mode %v, want 0755", fi)
			}
			if _, err := src.CopyTo(dst, "a", 0o644, make([]byte, 4096), io.Discard); !errors.Is(err, fs.ErrExist) {
				t.Errorf("onto an existing file: %v, want ErrExist", err)
			}
			if err := os.Symlink("a", filepath.Join(srcDir, "link")); err == nil {
				if _, err := src.CopyTo(dst, "link", 0o644, make([]byte, 4096), io.Discard); err == nil {
					t.Error("copied through a symbolic link")
				}
			}
		})
	}
}
