//go:build linux

package archive

import (
	"os"
	"syscall"
	"time"

	"piship.dev/piship/cache/atomicfs"
)

// atFDCWD is Linux's AT_FDCWD (the syscall package does not export it):
// openat relative to it resolves a path as open does.
const atFDCWD = -100

// floorWrite creates and writes a file with open, write and close only,
// as Extract's writers do (os.WriteFile adds four fcntl calls and an
// epoll_ctl), so the floor is not slower than the extractor's own writes.
func floorWrite(path string, data []byte, perm os.FileMode) error {
	return atomicfs.CreateAt(atFDCWD, path, data, perm)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
