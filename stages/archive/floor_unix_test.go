//go:build unix

package archive

import (
	"os"
	"syscall"
)

// floorWrite creates and writes a file with open, write and close only,
// as Extract's writers do (os.WriteFile adds four fcntl calls and an
// epoll_ctl), so the floor is not slower than the extractor's own writes.
func floorWrite(path string, data []byte, perm os.FileMode) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, uint32(perm))
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err != nil {
			syscall.Close(fd)
			return err
		}
		data = data[n:]
	}
	return syscall.Close(fd)
}
