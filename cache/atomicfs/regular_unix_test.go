//go:build unix

package atomicfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe is refused at once (no writer needed), a regular file is
// read, a symbolic link to one followed, and max bounds the size.
func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	refusesFIFO(t, "reading", func() error { _, err := ReadRegular(fifo, 0); return err })
	if _, err := OpenRegular(dir); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("a directory: %v", err)
	}
	f := filepath.Join(dir, "f")
	if err := os.WriteFile(f, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink(f, link); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(link, 5); err != nil || string(b) != "hello" {
		t.Fatalf("a link to a regular file: %q %v", b, err)
	}
	if _, err := ReadRegular(f, 4); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Fatalf("over max: %v", err)
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// OpenRegularIn refuses a named pipe inside the root at once, as
// OpenRegular does, and opens a regular file.
func TestOpenRegularIn(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	refusesFIFO(t, "opening", func() error { _, err := OpenRegularIn(r, "pipe"); return err })
	f, err := OpenRegularIn(r, "f")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// refusesFIFO runs op on a named pipe with no writer and wants it refused
// at once with a *NotRegularError naming the named pipe, not waiting.
func refusesFIFO(t *testing.T, what string, op func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		var nr *NotRegularError
		if !errors.Is(err, ErrNotRegular) || !errors.As(err, &nr) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("%s a FIFO: %v, want a NotRegularError naming the named pipe", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s a FIFO blocked", what)
	}
}
