package runtimecache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"piship.dev/piship/cache"
)

// WithRemote returns a copy of r that reads through the run's remote cache
// (cache.RemoteFrom(ctx)) on a local miss and writes new entries back to it
// when the run writes; r itself when the run has none.
func (r *Cache) WithRemote(ctx context.Context) *Cache {
	s := cache.RemoteFrom(ctx)
	if s == nil {
		return r
	}
	c := *r
	c.remote, c.ctx = s, ctx
	return &c
}

// RemoteOutcome says what the remote cache gave key in this run, for a
// lookup that hit or not: "remote hit" when the entry came from it,
// "remote miss: WHY" for a miss it could not serve, "" when it was not
// asked or a hit is an entry made here (after an earlier remote miss).
func (r *Cache) RemoteOutcome(key string, hit bool) string {
	return r.remote.Describe(cache.AreaRuntime, key, hit)
}

// pull fetches the entry for key from the remote cache into the root on a
// local miss and checks it as Get checks a local one, content included: a
// file's content is the digest the pull checked while writing it (the
// store verified every byte against its signed listing), else it is
// re-hashed. A pulled entry is never trusted more than a local one; one
// that fails is removed and reported.
func (r *Cache) pull(key string) (*Entry, error) {
	if r.remote == nil {
		return nil, nil
	}
	if _, err := os.Lstat(r.entryDir(key)); !errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	pulled, ok := r.remote.Fetch(r.ctx, cache.AreaRuntime, key, r.root, r.entryDir(key))
	if !ok {
		return nil, nil
	}
	e, err := r.get(key, true, treeDigests(pulled))
	if err != nil || e == nil {
		why := "it disappeared"
		if err != nil {
			why = err.Error()
		}
		r.remote.Rejected(cache.AreaRuntime, key, why)
		if err != nil {
			return nil, fmt.Errorf("cache: the runtime entry %s pulled from the remote cache was discarded: %w", key, err)
		}
	}
	return e, nil
}

// push writes the new entry for key back to the remote cache, in the
// background (the run never waits on it; the command does, at the end).
func (r *Cache) push(key string) {
	r.remote.Push(cache.AreaRuntime, key, r.entryDir(key))
}

// treeDigests are the pulled digests of the entry's tree, by path in the
// tree (the listing's paths), nil when nothing was verified.
func treeDigests(pulled cache.Pulled) map[string]string {
	if len(pulled) == 0 {
		return nil
	}
	tree := make(map[string]string, len(pulled))
	for p, sum := range pulled {
		if rel, ok := strings.CutPrefix(p, runtimeTreeName+"/"); ok {
			tree[rel] = sum
		}
	}
	return tree
}
