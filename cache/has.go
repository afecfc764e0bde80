package cache

import (
	"os"
	"path/filepath"
)

// Has reports whether an entry for key stands in the store, without
// verifying or touching it; `piship run --dry-run` uses it to predict hits.
func (a *Actions) Has(key string) bool {
	if checkKey(key) != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(a.entryDir(key), entryName))
	return err == nil
}
