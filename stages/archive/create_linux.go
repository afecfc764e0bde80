//go:build linux

package archive

import (
	"io"
	"os"
	"syscall"
)

// dirFD opens r's directory for writeAt; the file holds the descriptor.
func dirFD(r *os.Root) (*os.File, int) {
	f, err := r.Open(".")
	if err != nil {
		return nil, -1
	}
	return f, int(f.Fd())
}

// writeAt creates name (one path component, checked by the reader) in the
// directory dirfd, failing if anything is there (a symlink included: the
// name is not followed), and writes data: openat, write, close, and
// nothing else.
func writeAt(dirfd int, name string, data []byte, perm os.FileMode) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "openat", Path: name, Err: err}
	}
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			syscall.Close(fd)
			return &os.PathError{Op: "write", Path: name, Err: err}
		}
		data = data[n:]
	}
	if err := syscall.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}
