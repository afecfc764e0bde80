//go:build !unix

package cache

import (
	"errors"
	"io/fs"
)

// linkErrors is empty: without unix error numbers, see classifyLinkError.
var linkErrors []struct {
	err    error
	action linkFailure
}

// classifyLinkError says how Place answers a failed os.Link. Every failure
// but a missing source or an existing destination (ERROR_NOT_SAME_DEVICE,
// ERROR_ACCESS_DENIED, a filesystem without hardlinks such as FAT,
// ERROR_TOO_MANY_LINKS at NTFS's 1,023) switches the rest of the placement
// to copies: always correct, at worst slower.
func classifyLinkError(err error) linkFailure {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) {
		return linkFail
	}
	return linkCopyAll
}
