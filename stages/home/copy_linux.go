//go:build linux

package home

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"piship.dev/piship/cache/atomicfs"
)

// dirPair is one directory of a copy, open on both sides, so each file of
// a batch takes one openat per side instead of resolving its whole path
// twice, and only the system calls a copy needs (atomicfs.CopyAt: os.Open
// and os.OpenFile add fcntl and epoll_ctl calls to every file, trying to
// make a regular file pollable).
type dirPair struct {
	srcDir, dstDir string // for messages
	src, dst       int
}

// openDirPair opens dir under src and under dst, or returns nil when
// either cannot be opened (the caller then copies by path, which reports
// the problem).
func openDirPair(src, dst, dir string) *dirPair {
	d := &dirPair{srcDir: filepath.Join(src, dir), dstDir: filepath.Join(dst, dir)}
	var err error
	if d.src, err = openDir(d.srcDir); err != nil {
		return nil
	}
	if d.dst, err = openDir(d.dstDir); err != nil {
		syscall.Close(d.src)
		return nil
	}
	return d
}

func openDir(p string) (int, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func (d *dirPair) close() {
	syscall.Close(d.src)
	syscall.Close(d.dst)
}

// copy copies the regular file name from the source directory to the
// destination one (created; nothing may be there, and a symlink on either
// side is not followed, nor a named pipe waited on) and returns the
// SHA-256 of what it wrote. A file that changes meanwhile is copied as
// read, and the inventory check that follows every copy refuses it.
func (d *dirPair) copy(name string, exec bool, buf []byte) (string, error) {
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	h := sha256.New()
	if _, err := atomicfs.CopyAt(d.src, d.dst, name, perm, buf, h); err != nil {
		return "", fmt.Errorf("copying %s into %s: %w", filepath.Join(d.srcDir, name), d.dstDir, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
