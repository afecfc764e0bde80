//go:build !windows

package receipt

func platformRetryable(error) bool { return false }
