//go:build linux

package atomicfs

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// DirFD opens r's directory for CreateAt, ReadFullAt and CopyAt; the file holds
// the descriptor (the caller closes it). Where it returns -1 (only
// Linux's syscall has Openat) callers go through the Root.
func DirFD(r *os.Root) (*os.File, int) {
	f, err := r.Open(".")
	if err != nil {
		return nil, -1
	}
	return f, int(f.Fd())
}

// OpenDir opens the directory at path as a Dir of its own (not a
// DirCache's), for Close: here its descriptor alone, one open, as
// everything a Dir does goes through it on Linux.
func OpenDir(path string) (*Dir, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err == nil {
			return &Dir{FD: fd}, nil
		}
		if err != syscall.EINTR {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

func closeFD(fd int) { syscall.Close(fd) }

// CreateAt creates name (one path component) in the directory dirfd,
// failing if anything is there (a symlink included: the name is not
// followed), and writes data: openat, write, close and nothing else (see
// Dir for what os.Root.OpenFile adds).
func CreateAt(dirfd int, name string, data []byte, perm os.FileMode) error {
	fd, err := createAt(dirfd, name, perm)
	if err != nil {
		return err
	}
	if err := writeAll(fd, name, data); err != nil {
		syscall.Close(fd)
		return err
	}
	if err := syscall.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: name, Err: err}
	}
	return nil
}

// CopyAt copies the regular file name in the directory srcfd to a new
// file of the same name in dstfd (perm), through buf, and writes every
// byte to h as well (the caller's hash); it returns the bytes copied. The
// source is opened as ReadFullAt opens it (not followed, not blocking on
// a named pipe, refused with a *NotRegularError unless fstat says regular
// file) and the destination as CreateAt creates it. It reads the size
// fstat gave: a file that changes meanwhile is copied as read, so the
// caller compares the count and hash with what it expected.
func CopyAt(srcfd, dstfd int, name string, perm os.FileMode, buf []byte, h io.Writer) (int64, error) {
	in, size, err := openRegularAt(srcfd, name)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(in)
	out, err := createAt(dstfd, name, perm)
	if err != nil {
		return 0, err
	}
	var copied int64
	for copied < size {
		n, err := syscall.Read(in, buf[:min(int64(len(buf)), size-copied)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			syscall.Close(out)
			return copied, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			break // shrunk since fstat
		}
		h.Write(buf[:n])
		if err := writeAll(out, name, buf[:n]); err != nil {
			syscall.Close(out)
			return copied, err
		}
		copied += int64(n)
	}
	if err := syscall.Close(out); err != nil {
		return copied, &os.PathError{Op: "close", Path: name, Err: err}
	}
	return copied, nil
}

// ReadFullAt fills buf with the first len(buf) bytes of the regular file
// name (one path component, not followed) in the directory dirfd:
// openat, fstat, read, close. As OpenRegular, the open does not block on
// a named pipe and anything but a regular file is a *NotRegularError; a
// file shorter than buf is io.ErrUnexpectedEOF. Bytes past len(buf) are
// not read: the caller hashes what it got.
func ReadFullAt(dirfd int, name string, buf []byte) error {
	fd, _, err := openRegularAt(dirfd, name)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
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

// openRegularAt opens name in dirfd for reading, not followed and not
// blocking (a named pipe with no writer would hang the open), and
// returns the descriptor and size once fstat says it is a regular file.
func openRegularAt(dirfd int, name string) (int, int64, error) {
	fd, err := openat(dirfd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, 0, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		syscall.Close(fd)
		return -1, 0, &NotRegularError{Path: name, Mode: modeOf(st.Mode)}
	}
	return fd, st.Size, nil
}

// createAt creates name in dirfd for writing: exclusive, not followed.
func createAt(dirfd int, name string, perm os.FileMode) (int, error) {
	fd, err := openat(dirfd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return -1, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return fd, nil
}

// openat is syscall.Openat restarted on EINTR.
func openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, flags, perm)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// writeAll writes b to fd, restarting on EINTR and short writes.
func writeAll(fd int, name string, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err == nil && n == 0 {
			err = io.ErrShortWrite
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: name, Err: err}
		}
		b = b[n:]
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
