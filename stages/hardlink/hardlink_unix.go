//go:build unix

package hardlink

import (
	"errors"
	"syscall"
)

// linkErrors says how a failed os.Link is answered: EMLINK (too many
// links to that file) copies that file; EXDEV (another filesystem), EPERM
// (hardlinks refused, e.g. Linux protected_hardlinks), ENOTSUP/EOPNOTSUPP
// and EINVAL (a filesystem without hardlinks) copy the rest. Anything else
// fails.
var linkErrors = []struct {
	err    error
	action Fallback
}{
	{syscall.EMLINK, CopyOne},
	{syscall.EXDEV, CopyAll},
	{syscall.EPERM, CopyAll},
	{syscall.ENOTSUP, CopyAll},
	{syscall.EOPNOTSUPP, CopyAll},
	{syscall.EINVAL, CopyAll},
}

// Classify says how to answer err, a failed os.Link.
func Classify(err error) Fallback {
	for _, le := range linkErrors {
		if errors.Is(err, le.err) {
			return le.action
		}
	}
	return Fail
}
