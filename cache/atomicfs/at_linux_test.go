//go:build linux

package atomicfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ReadFullAt reads a regular file's first bytes, refuses a named pipe at
// once and a symbolic link without following it, and says a short file
// is short; CreateAt creates once and never through a link.
func TestReadFullAtAndCreateAt(t *testing.T) {
	dir := t.TempDir()
	fd := dirFD(t, dir)

	if err := CreateAt(fd, "a", []byte("hello world"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateAt(fd, "a", []byte("again"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second create: %v, want ErrExist", err)
	}
	buf := make([]byte, 5)
	if err := ReadFullAt(fd, "a", buf); err != nil || string(buf) != "hello" {
		t.Fatalf("read %q, %v", buf, err)
	}
	if err := ReadFullAt(fd, "a", make([]byte, 12)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a short file: %v, want ErrUnexpectedEOF", err)
	}

	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := ReadFullAt(fd, "link", buf); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("a symlink: %v, want ELOOP (not followed)", err)
	}
	if err := CreateAt(fd, "link", []byte("x"), 0o644); err == nil {
		t.Fatal("created through a symlink")
	}

	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusesFIFO(t, "reading", func() error { return ReadFullAt(fd, "pipe", buf) })
	if err := ReadFullAt(fd, ".", buf); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v", err)
	}
}

// CopyAt copies a regular file between two directories' descriptors with
// its hash, and refuses what ReadFullAt and CreateAt refuse: a named pipe
// at once, a symbolic link on either side, a destination already there.
func TestCopyAt(t *testing.T) {
	srcDir, dstDir := t.TempDir(), t.TempDir()
	src, dst := dirFD(t, srcDir), dirFD(t, dstDir)
	data := strings.Repeat("piship ", 5000) // several reads through a 4 KiB buffer
	if err := os.WriteFile(filepath.Join(srcDir, "a"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	n, err := CopyAt(src, dst, "a", 0o755, make([]byte, 4096), &seen)
	if err != nil || n != int64(len(data)) || seen.String() != data {
		t.Fatalf("CopyAt: %d bytes, %v; the hash saw %d bytes", n, err, seen.Len())
	}
	got, err := os.ReadFile(filepath.Join(dstDir, "a"))
	if err != nil || string(got) != data {
		t.Fatalf("copied %d bytes, %v", len(got), err)
	}
	if fi, _ := os.Stat(filepath.Join(dstDir, "a")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi)
	}
	if _, err := CopyAt(src, dst, "a", 0o644, make([]byte, 4096), io.Discard); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("copying onto a file: %v, want ErrExist", err)
	}

	os.Symlink("a", filepath.Join(srcDir, "link"))
	if _, err := CopyAt(src, dst, "link", 0o644, make([]byte, 4096), io.Discard); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("a symlinked source: %v, want ELOOP", err)
	}
	os.WriteFile(filepath.Join(srcDir, "b"), []byte("b"), 0o644)
	os.Symlink(filepath.Join(srcDir, "elsewhere"), filepath.Join(dstDir, "b"))
	if _, err := CopyAt(src, dst, "b", 0o644, make([]byte, 4096), io.Discard); err == nil {
		t.Fatal("copied through a symlink at the destination")
	}
	if _, err := os.Lstat(filepath.Join(srcDir, "elsewhere")); err == nil {
		t.Fatal("the destination's symlink was followed")
	}

	if err := syscall.Mkfifo(filepath.Join(srcDir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	refusesFIFO(t, "copying", func() error {
		_, err := CopyAt(src, dst, "pipe", 0o644, make([]byte, 4096), io.Discard)
		return err
	})
	if _, err := os.Lstat(filepath.Join(dstDir, "pipe")); err == nil {
		t.Error("a refused copy left a file behind")
	}
}

// dirFD is DirFD of dir, closed when the test ends.
func dirFD(t *testing.T, dir string) int {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f, fd := DirFD(r)
	if f == nil {
		t.Fatal("DirFD gave no descriptor on Linux")
	}
	t.Cleanup(func() { f.Close() })
	return fd
}
