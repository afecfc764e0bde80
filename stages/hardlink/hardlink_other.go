//go:build !unix

package hardlink

import (
	"errors"
	"io/fs"
)

// linkErrors is empty: without unix error numbers, see Classify.
var linkErrors []struct {
	err    error
	action Fallback
}

// Classify says how to answer err, a failed os.Link. Every failure
// but a missing source or an existing destination (ERROR_NOT_SAME_DEVICE,
// ERROR_ACCESS_DENIED, a filesystem without hardlinks such as FAT,
// ERROR_TOO_MANY_LINKS at NTFS's 1,023) switches the rest of the operation
// to copies: always correct, at worst slower.
func Classify(err error) Fallback {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
		return Fail
	}
	return CopyAll
}
