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

// Peek reads the entry for key as Lookup would find it (entry.json
// verified, its files those outputs declares) without restoring a file,
// removing a damaged entry or marking it used: a plan reads a hit's
// outputs with it. ok is false for a missing or damaged entry.
func (a *Actions) Peek(key string, outputs []string) (res *Result, ok bool) {
	if checkKey(key) != nil {
		return nil, false
	}
	want, err := cleanOutputs(outputs)
	if err != nil {
		return nil, false
	}
	edir := a.entryDir(key)
	if info, err := os.Stat(edir); err != nil || !info.IsDir() {
		return nil, false
	}
	res, derr := readEntry(key, edir, want)
	if derr != nil {
		return nil, false
	}
	return res, true
}
