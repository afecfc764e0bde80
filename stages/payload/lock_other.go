//go:build !unix

package payload

import (
	"context"
	"os"
)

// lockFile opens the lock file; concurrent builds of the same output are
// not detected on this platform.
func lockFile(ctx context.Context, path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}

func unlockFile(f *os.File) { f.Close() }
