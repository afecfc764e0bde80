//go:build !linux

package home

import "errors"

// dirPair has no descriptors here (syscall has no Openat on every
// platform): openDirPair returns nil and files are copied by path.
type dirPair struct{}

func openDirPair(src, dst, dir string) *dirPair { return nil }

func (*dirPair) close() {}

func (*dirPair) copy(string, bool, []byte) (string, error) { return "", errors.ErrUnsupported }
