//go:build linux

package atomicfs

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DirFD opens r's directory for CreateAt and ReadFullAt; the file holds
// the descriptor (the caller closes it). Where it returns -1 (only
// Linux's syscall has Openat) callers go through the Root.
func DirFD(r *os.Root) (*os.File, int) {
	f, err := r.Open(".")
	if err != nil {
		return nil, -1
	}
	return f, int(f.Fd())
}

// CreateAt creates name (one path component) in the directory dirfd,
// failing if anything is there (a symlink included: the name is not
// followed), and writes data: openat, write, close and nothing else (see
// Dir for what os.Root.OpenFile adds).
func CreateAt(dirfd int, name string, data []byte, perm os.FileMode) error {
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

// ReadFullAt fills buf with the first len(buf) bytes of the regular file
// name (one path component, not followed) in the directory dirfd:
// openat, fstat, read, close. As OpenRegular, the open does not block on
// a named pipe and anything but a regular file is a *NotRegularError; a
// file shorter than buf is io.ErrUnexpectedEOF. Bytes past len(buf) are
// not read: the caller hashes what it got.
func ReadFullAt(dirfd int, name string, buf []byte) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return &os.PathError{Op: "openat", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return &NotRegularError{Path: name, Mode: modeOf(st.Mode)}
	}
	for len(buf) > 0 {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return &os.PathError{Op: "read", Path: name, Err: io.ErrUnexpectedEOF}
		}
		buf = buf[n:]
	}
	return nil
}

// modeOf is the fs.FileMode type bits of a stat mode, for KindOf.
func modeOf(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}
