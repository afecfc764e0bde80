//go:build !linux && !darwin && !freebsd && !windows

package home

import "errors"

// freeSpace is not measured on this platform: the check is skipped.
func freeSpace(string) (int64, error) { return 0, errors.ErrUnsupported }

func caseInsensitive() bool { return false }
