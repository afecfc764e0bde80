//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// Exists sends signal 0: no error or EPERM means a process has pid.
func Exists(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err == nil || errors.Is(err, syscall.EPERM) {
		return !zombie(pid)
	}
	return false
}
