package runtimecache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// removeAside removes dir (a direct child of root) by renaming it to a
// .del- name first, so that nobody sees it half deleted. A dir that is
// already gone is not an error.
func removeAside(root, dir string) error {
	trash := filepath.Join(root, runtimeDelPrefix+filepath.Base(dir)+"-"+canon.RandomHex(8))
	if err := renameRetry(dir, trash); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		trash = dir // could not move it aside: delete in place
	}
	if err := os.RemoveAll(trash); err != nil {
		return fmt.Errorf("cache: removing %s: %w", dir, err)
	}
	return nil
}

// Evict keeps the newest keep entries whose key starts with prefix ("i-":
// 3, "b-": 6), newest by entry mtime (Create sets it, a Get hit refreshes
// it), and removes the others: each is first set aside with one rename (so
// it is gone from the cache at once), then deleted. Deleting stops when
// budget is spent, checked every 64 unlinks; what is left is deleted by the
// next Evict. A budget <= 0 means no limit. Evict also sweeps temporary
// directories whose newest file is more than an hour old (killed writers).
//
// Evict never needs to fail a build: its errors are for logging only.
// An entry evicted while another process is placing it makes that Place
// fail (its files vanish); with keep >= 1 that needs more concurrent builds
// with distinct keys than keep.
func (r *Cache) Evict(prefix string, keep int, budget time.Duration) error {
	if keep < 0 {
		return fmt.Errorf("cache: evict: negative keep %d", keep)
	}
	start := time.Now()
	des, err := os.ReadDir(r.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cache: evict: %w", err)
	}
	type item struct {
		name  string
		mtime time.Time
	}
	var (
		items []item
		trash []string
		errs  []error
	)
	setAside := func(name string) {
		p := filepath.Join(r.root, name)
		t := filepath.Join(r.root, runtimeDelPrefix+name+"-"+canon.RandomHex(8))
		if err := renameRetry(p, t); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("cache: evict: %w", err))
			}
			return
		}
		trash = append(trash, t)
	}
	now := r.now()
	for _, de := range des {
		name := de.Name()
		switch {
		case strings.HasPrefix(name, runtimeDelPrefix):
			trash = append(trash, filepath.Join(r.root, name))
		case strings.HasPrefix(name, runtimeTmpPrefix):
			info, err := de.Info()
			if err != nil || now.Sub(info.ModTime()) <= runtimeStaleTemp {
				continue
			}
			if latest, ok := cache.NewestMtime(filepath.Join(r.root, name)); ok && now.Sub(latest) > runtimeStaleTemp {
				setAside(name)
			}
		case strings.HasPrefix(name, prefix) && cache.IsRuntimeKey(name) && de.IsDir():
			info, err := de.Info()
			if err != nil {
				continue // removed meanwhile
			}
			items = append(items, item{name, info.ModTime()})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if !items[i].mtime.Equal(items[j].mtime) {
			return items[i].mtime.After(items[j].mtime)
		}
		return items[i].name > items[j].name
	})
	for i := keep; i < len(items); i++ {
		setAside(items[i].name)
	}
	rm := budgetRemover{}
	if budget > 0 {
		rm.deadline = start.Add(budget)
	}
	for _, t := range trash {
		done, err := rm.removeAll(t)
		if err != nil {
			errs = append(errs, fmt.Errorf("cache: evict: %w", err))
		}
		if !done {
			break
		}
	}
	return errors.Join(errs...)
}

// budgetRemover deletes trees, checking its deadline every 64 unlinks.
type budgetRemover struct {
	deadline time.Time // zero: no deadline
	unlinks  int
}

// unlinked counts one unlink and reports whether the budget allows more.
func (b *budgetRemover) unlinked() bool {
	b.unlinks++
	return b.unlinks%64 != 0 || b.deadline.IsZero() || time.Now().Before(b.deadline)
}

// removeAll deletes p and everything below it; done is false if the budget
// ran out first. What vanished meanwhile is not an error.
func (b *budgetRemover) removeAll(p string) (done bool, err error) {
	des, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		// Not a directory (or unreadable): try to remove it as it is.
		if rerr := os.Remove(p); rerr == nil || errors.Is(rerr, fs.ErrNotExist) {
			return b.unlinked(), nil
		}
		return true, err
	}
	for _, de := range des {
		c := filepath.Join(p, de.Name())
		if de.IsDir() {
			done, err := b.removeAll(c)
			if err != nil || !done {
				return done, err
			}
			continue
		}
		if err := os.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true, err
		}
		if !b.unlinked() {
			return false, nil
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true, err
	}
	return b.unlinked(), nil
}

// renameRetry renames; on Windows it retries for about 4.5 s
// (atomicfs.CacheDelays) while the rename fails as a scanner or indexer
// holding a handle makes it fail (access denied, sharing violation),
// unless the destination exists. Elsewhere it fails at once.
func renameRetry(from, to string) error {
	r := atomicfs.DefaultRenamer(atomicfs.CacheDelays)
	r.StopIfExists = true
	return r.Do(from, to)
}
