//go:build !linux

package swap

// Supported: no atomic exchange here.
const Supported = false

// Exchange is Linux's RENAME_EXCHANGE; elsewhere it is ErrUnsupported and
// the caller renames twice.
func Exchange(a, b string) error { return ErrUnsupported }
