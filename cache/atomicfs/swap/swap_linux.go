package swap

import "golang.org/x/sys/unix"

// Supported: Linux exchanges in one rename(2).
const Supported = true

// Exchange swaps the paths a and b (both must exist, on one file system)
// in one rename(2): nobody sees either path missing, and a kill leaves
// one side or the other, never half.
func Exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
