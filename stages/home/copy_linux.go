//go:build linux

package home

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// dirPair is one directory of a copy, open on both sides, so each file of
// a batch takes one openat per side instead of resolving its whole path
// twice, and only the system calls a copy needs: openat, fstat, read and
// close on the source, openat, write and close on the destination
// (os.Open and os.OpenFile add fcntl and epoll_ctl calls to every file,
// trying to make a regular file pollable).
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
// side is not followed) and returns the SHA-256 of what it wrote. It reads
// the size fstat gives: a file that changes meanwhile is copied as read,
// and the inventory check that follows every copy refuses it.
func (d *dirPair) copy(name string, exec bool, buf []byte) (string, error) {
	in, err := openat(d.src, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: filepath.Join(d.srcDir, name), Err: err}
	}
	defer syscall.Close(in)
	var st syscall.Stat_t
	if err := syscall.Fstat(in, &st); err != nil {
		return "", &os.PathError{Op: "fstat", Path: filepath.Join(d.srcDir, name), Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", fmt.Errorf("%s is no longer a regular file", filepath.Join(d.srcDir, name))
	}
	perm := uint32(0o644)
	if exec {
		perm = 0o755
	}
	out, err := openat(d.dst, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
	if err != nil {
		return "", &os.PathError{Op: "open", Path: filepath.Join(d.dstDir, name), Err: err}
	}
	h := sha256.New()
	for left := st.Size; left > 0; {
		n, err := syscall.Read(in, buf[:min(int64(len(buf)), left)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			syscall.Close(out)
			return "", &os.PathError{Op: "read", Path: filepath.Join(d.srcDir, name), Err: err}
		}
		if n == 0 {
			break // shrunk since fstat
		}
		h.Write(buf[:n])
		if err := writeAll(out, buf[:n]); err != nil {
			syscall.Close(out)
			return "", &os.PathError{Op: "write", Path: filepath.Join(d.dstDir, name), Err: err}
		}
		left -= int64(n)
	}
	if err := syscall.Close(out); err != nil {
		return "", &os.PathError{Op: "close", Path: filepath.Join(d.dstDir, name), Err: err}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
