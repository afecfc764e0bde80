//go:build windows

package atomicfs

import (
	"errors"
	"syscall"
)

// ERROR_SHARING_VIOLATION and ERROR_LOCK_VIOLATION: what a handle held by
// a scanner makes MoveFileEx return besides ERROR_ACCESS_DENIED.
func platformRetryable(err error) bool {
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == 32 || errno == 33)
}
