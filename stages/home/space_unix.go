//go:build linux || darwin || freebsd

package home

import (
	"runtime"
	"syscall"
)

// freeSpace returns the bytes available to an unprivileged user.
func freeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}

func caseInsensitive() bool { return runtime.GOOS == "darwin" }
