//go:build !linux

package proc

import "syscall"

// setDeathSignal does nothing where the kernel has no parent-death signal;
// cancelling still kills the child's process group.
func setDeathSignal(*syscall.SysProcAttr) {}

// pinned runs f; without a death signal the starting thread does not
// matter.
func pinned(f func() error) error { return f() }
