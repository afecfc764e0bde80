//go:build unix

package atomicfs

import "os"

// syncDir flushes a directory, so a rename in it survives a crash.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
