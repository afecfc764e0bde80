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
	"time"
)

// ReadFullAt reads a regular file's first bytes, refuses a named pipe at
// once and a symbolic link without following it, and says a short file
// is short; CreateAt creates once and never through a link.
func TestReadFullAtAndCreateAt(t *testing.T) {
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, fd := DirFD(r)
	if f == nil {
		t.Fatal("DirFD gave no descriptor on Linux")
	}
	defer f.Close()

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
	done := make(chan error, 1)
	go func() { done <- ReadFullAt(fd, "pipe", buf) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("a FIFO: %v, want a NotRegularError naming the named pipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if err := ReadFullAt(fd, ".", buf); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v", err)
	}
}
