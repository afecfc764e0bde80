package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// PruneReport says what Prune found and did. Sizes count the files in
// entries (not temporary directories or filesystem overhead).
type PruneReport struct {
	Entries     int   // entries present before pruning
	Removed     int   // entries removed
	BytesBefore int64 // total size of entries before pruning
	BytesAfter  int64 // total size of entries after pruning
}

// Prune removes entries older than maxAge (0 = no age limit; an entry's age
// is the time since its directory's mtime, which Store sets and every hit
// refreshes) and then, least recently used first, until the total size is
// at most maxSize (0 = no size limit). It also sweeps temporary directories
// left more than an hour ago by killed writers. Removal continues past
// errors, which are returned joined together with the report of what was
// done.
func (a *Actions) Prune(maxSize int64, maxAge time.Duration) (PruneReport, error) {
	var rep PruneReport
	if maxSize < 0 {
		return rep, fmt.Errorf("cache: prune: negative size limit %d", maxSize)
	}
	if maxAge < 0 {
		return rep, fmt.Errorf("cache: prune: negative age limit %v", maxAge)
	}
	now := a.now()
	tops, err := os.ReadDir(a.root)
	if errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("cache: prune: %w", err)
	}

	type item struct {
		key, dir string
		mtime    time.Time
		size     int64
	}
	var (
		items []item
		errs  []error
	)
	for _, top := range tops {
		name := top.Name()
		p := filepath.Join(a.root, name)
		if strings.HasPrefix(name, tempPrefix) {
			if latest, ok := NewestMtime(p); ok && now.Sub(latest) > staleTemp {
				if err := os.RemoveAll(p); err != nil {
					errs = append(errs, fmt.Errorf("cache: prune: removing stale temporary directory: %w", err))
				}
			}
			continue
		}
		// Shard directories are never removed, so that Store never races
		// with Prune over them.
		if !top.IsDir() || !isShard(name) {
			continue
		}
		des, err := os.ReadDir(p)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cache: prune: %w", err))
			}
			continue
		}
		for _, de := range des {
			key := de.Name()
			if !de.IsDir() || !IsDigest(key) || key[:2] != name {
				continue
			}
			dir := filepath.Join(p, key)
			info, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			items = append(items, item{key: key, dir: dir, mtime: info.ModTime(), size: treeSize(dir)})
		}
	}

	rep.Entries = len(items)
	for _, it := range items {
		rep.BytesBefore += it.size
	}
	total := rep.BytesBefore
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mtime.Equal(items[j].mtime) {
			return items[i].mtime.Before(items[j].mtime)
		}
		return items[i].key < items[j].key
	})
	remove := func(it item) bool {
		if err := a.removeEntry(it.dir); err != nil {
			errs = append(errs, fmt.Errorf("cache: prune: %w", err))
			return false
		}
		rep.Removed++
		total -= it.size
		return true
	}
	kept := items[:0]
	for _, it := range items {
		if maxAge > 0 && now.Sub(it.mtime) > maxAge && remove(it) {
			continue
		}
		kept = append(kept, it)
	}
	for _, it := range kept {
		if maxSize == 0 || total <= maxSize {
			break
		}
		remove(it)
	}
	rep.BytesAfter = total
	return rep, errors.Join(errs...)
}

func isShard(name string) bool {
	return len(name) == 2 && IsDigest(name+strings.Repeat("0", 62))
}

// treeSize is the total size of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // skip what vanished or cannot be read
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// NewestMtime is the latest mtime of anything under root, so that a temporary
// directory whose writer is still busy with a large file is not mistaken for
// an abandoned one (here and in the runtime cache's Evict). ok is false if
// root vanished.
func NewestMtime(root string) (latest time.Time, ok bool) {
	filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := d.Info(); err == nil {
			ok = true
			if info.ModTime().After(latest) {
				latest = info.ModTime()
			}
		}
		return nil
	})
	return latest, ok
}
