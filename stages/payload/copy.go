package payload

import (
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
)

// CopyPath copies a file or a directory tree (regular files only).
func CopyPath(src, dst string) error {
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return atomicfs.WriteFileAll(dst, b, info.Mode().Perm())
	}
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return atomicfs.WriteFileAll(filepath.Join(dst, rel), b, fi.Mode().Perm())
	})
}
