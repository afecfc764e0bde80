//go:build !linux

package tuf

import "errors"

// exchange is Linux's RENAME_EXCHANGE; elsewhere commitStage renames twice.
func exchange(a, b string) error { return errors.ErrUnsupported }
