//go:build unix

package cache

import (
	"errors"
	"syscall"
)

// linkErrors says how Place answers a failed os.Link: EMLINK (too many
// links to that file) copies that file; EXDEV (another filesystem), EPERM
// (hardlinks refused, e.g. Linux protected_hardlinks), ENOTSUP/EOPNOTSUPP
// and EINVAL (a filesystem without hardlinks) copy the rest. Anything else
// fails the placement.
var linkErrors = []struct {
	err    error
	action linkFailure
}{
	{syscall.EMLINK, linkCopyOne},
	{syscall.EXDEV, linkCopyAll},
	{syscall.EPERM, linkCopyAll},
	{syscall.ENOTSUP, linkCopyAll},
	{syscall.EOPNOTSUPP, linkCopyAll},
	{syscall.EINVAL, linkCopyAll},
}

func classifyLinkError(err error) linkFailure {
	for _, le := range linkErrors {
		if errors.Is(err, le.err) {
			return le.action
		}
	}
	return linkFail
}
