//go:build !linux

package archive

import "os"

func floorWrite(path string, data []byte, perm os.FileMode) error {
	return os.WriteFile(path, data, perm)
}
