//go:build !linux

package home

// dirPair has no descriptors here (syscall has no Openat on every
// platform): files are copied by path.
type dirPair struct{}

func openDirPair(src, dst, dir string) *dirPair { return nil }

func (*dirPair) close() {}

func (*dirPair) copy(string, bool, []byte) (string, error) { panic("unreachable") }
