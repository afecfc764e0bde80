//go:build !unix

package payload

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile opens the lock file; concurrent builds of the same output are
// not detected on this platform.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

func unlockFile(f *os.File) { f.Close() }

// On Windows a scanner or indexer holding a handle makes renames fail for a
// moment: retry for about 1.6 s.
func renameRetryDelays() []time.Duration {
	return []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
		200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
}

func retryable(err error) bool {
	return errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EACCES)
}
