//go:build linux

package launch

import (
	"syscall"
	"unsafe"
)

// foregroundTTY reports whether this process is in the foreground process
// group of its terminal (TIOCGPGRP on the first standard descriptor that is
// a terminal).
func foregroundTTY() bool {
	for fd := 0; fd <= 2; fd++ {
		var pgrp int32
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp)))
		if errno == 0 {
			return int(pgrp) == syscall.Getpgrp()
		}
	}
	return false
}
