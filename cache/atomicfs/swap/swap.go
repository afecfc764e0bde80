// Package swap exchanges two directories in one step where the platform
// can: Linux's renameat2(RENAME_EXCHANGE). It is the one place piship
// does so (the TUF trust store's commit, an install that replaces a
// recorded copy of a release), kept out of cache/atomicfs because it needs
// golang.org/x/sys and atomicfs is standard library only (the launcher
// links it).
package swap

import "errors"

// ErrUnsupported is what Exchange returns where the platform has no
// atomic exchange: the caller falls back to its own two renames.
var ErrUnsupported = errors.ErrUnsupported
