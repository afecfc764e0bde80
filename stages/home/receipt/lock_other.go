//go:build !unix && !windows

package receipt

import "os"

// tryLock always succeeds: this platform has no file locks, so launches and
// installs are not serialized here.
func tryLock(*os.File) (bool, error) { return true, nil }

func unlock(*os.File) {}
