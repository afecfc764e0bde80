//go:build !unix

package atomicfs

// nonblock: Windows has no FIFO that an open waits on.
const nonblock = 0
