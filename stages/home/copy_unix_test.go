//go:build unix

package home

import "syscall"

// A named pipe swapped in for a listed file: opening it to read would
// wait for a writer forever.
func init() {
	swappedIn["named pipe"] = func(p string) error { return syscall.Mkfifo(p, 0o644) }
}
