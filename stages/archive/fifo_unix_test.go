//go:build unix

package archive

import (
	"path/filepath"
	"syscall"
)

func mkfifo(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644) }
