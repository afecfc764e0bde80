//go:build !unix

package atomicfs

// syncDir is a no-op: Windows cannot open a directory for flushing, and
// MoveFileEx with MOVEFILE_REPLACE_EXISTING on NTFS journals the rename.
func syncDir(string) {}
