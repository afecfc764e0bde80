package home

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

// reclaimCheckEvery is how many unlinks pass between budget checks.
const reclaimCheckEvery = 64

// sweeper removes trees, counting unlinks and checking the deadline (and
// ctx) every reclaimCheckEvery of them.
type sweeper struct {
	ctx       context.Context
	deadline  time.Time
	unlinks   int
	exhausted bool
}

func (s *sweeper) tick() bool {
	s.unlinks++
	if s.unlinks%reclaimCheckEvery == 0 && (time.Now().After(s.deadline) || s.ctx.Err() != nil) {
		s.exhausted = true
	}
	return !s.exhausted
}

// remove removes path depth first and reports whether it is gone.
func (s *sweeper) remove(path string) bool {
	entries, err := os.ReadDir(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not a directory (or unreadable): try it as a file.
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return false
		}
		s.tick()
		return true
	}
	for _, e := range entries {
		if s.exhausted {
			return false
		}
		p := filepath.Join(path, e.Name())
		if e.IsDir() {
			if !s.remove(p) {
				return false
			}
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
		if !s.tick() {
			return false
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	s.tick()
	return true
}

// removeEmptyAppDir removes apps/<id> of a distribution that is not
// installed once nothing but its empty bookkeeping directories is left.
func removeEmptyAppDir(app string) {
	for _, name := range []string{receipt.LeasesName, receipt.DownloadsName} {
		os.Remove(filepath.Join(app, name)) // only when empty
	}
	os.Remove(app) // only when empty
}

// removeTempReceipts removes the temporary receipts a killed commit left
// (receipts/.<id>.json.tmp-*) and says what it removed. The caller holds
// the maintenance lock, which every receipt writer holds, so none of them
// is being written.
func removeTempReceipts(home, id string) []string {
	paths, _ := receipt.TempReceipts(home, id)
	var removed []string
	for _, p := range paths {
		if os.Remove(p) == nil {
			removed = append(removed, fmt.Sprintf("temporary receipt %s (left by an interrupted commit)", p))
		}
	}
	return removed
}
