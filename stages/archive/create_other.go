//go:build !linux

package archive

import (
	"errors"
	"os"
)

// dirFD gives no descriptor here (syscall has no Openat on every unix):
// files are created through the Root.
func dirFD(*os.Root) (*os.File, int) { return nil, -1 }

func writeAt(int, string, []byte, os.FileMode) error { return errors.ErrUnsupported }
