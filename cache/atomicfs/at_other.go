//go:build !linux

package atomicfs

import (
	"errors"
	"io"
	"os"
)

// DirFD gives no descriptor here (syscall has no Openat on every
// platform): callers go through the os.Root.
func DirFD(*os.Root) (*os.File, int) { return nil, -1 }

// CreateAt is Linux's; callers check DirFD first.
func CreateAt(int, string, []byte, os.FileMode) error { return errors.ErrUnsupported }

// ReadFullAt is Linux's; callers check DirFD first.
func ReadFullAt(int, string, []byte) error { return errors.ErrUnsupported }

// CopyAt is Linux's; callers check DirFD first.
func CopyAt(int, int, string, os.FileMode, []byte, io.Writer) (int64, error) {
	return 0, errors.ErrUnsupported
}

// OpenDir opens the directory at path as a Dir of its own (not a
// DirCache's), for Close: its os.Root here.
func OpenDir(path string) (*Dir, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return newDir(r), nil
}

func closeFD(int) {}
