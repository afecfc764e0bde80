//go:build linux

package proc

import (
	"runtime"
	"syscall"
)

// setDeathSignal asks the kernel to SIGKILL the child when the thread that
// started it exits. Go keeps its threads alive unless a goroutine exits
// while locked to one, and run locks the starting goroutine to its thread
// until the child is waited for, so in practice the signal comes when
// piship's process dies.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}

// pinned runs f with its goroutine locked to one OS thread: the thread a
// child with a death signal was started from must outlive the child.
func pinned(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return f()
}
