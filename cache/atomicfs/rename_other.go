//go:build !windows

package atomicfs

func platformRetryable(error) bool { return false }
