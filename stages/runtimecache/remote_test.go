package runtimecache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache"
)

// copyRemote is a remote cache in a directory: entries copied whole, with
// their symbolic links (os.CopyFS refuses those, so a walk).
type copyRemote struct {
	root string
	// verified is what Pull reports it checked (cache.Pulled), as a
	// store that verifies what it writes does.
	verified cache.Pulled
}

func (c copyRemote) String() string { return "dir:" + c.root }

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case info.IsDir():
			return os.MkdirAll(to, 0o755)
		case info.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, to)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chmod(to, info.Mode().Perm())
	})
}

func (c copyRemote) Push(_ context.Context, area, key, src string) error {
	return copyTree(src, filepath.Join(c.root, area, key))
}

func (c copyRemote) Pull(_ context.Context, area, key, dst string) (cache.Pulled, error) {
	src := filepath.Join(c.root, area, key)
	if _, err := os.Stat(src); err != nil {
		return nil, cache.Misses("no entry %s", key)
	}
	return c.verified, copyTree(src, dst)
}

// A writing run pushes the entry it creates; another cache home reads it
// through on a miss and says so; a pulled entry whose file's content was
// changed (same size: only re-hashing finds it) is discarded, reported,
// and a remote miss.
func TestRuntimeCacheReadsThroughTheRemote(t *testing.T) {
	remote := copyRemote{root: t.TempDir()}
	key := rtKey("remote")
	w := &cache.RemoteSession{Remote: remote, Write: true}
	writer := Open(t.TempDir()).WithRemote(cache.WithRemote(context.Background(), w))
	if e, err := writer.Get(key, false); e != nil || err != nil {
		t.Fatalf("Get on empty caches = %v, %v", e, err)
	}
	if got := writer.RemoteOutcome(key, false); got != "remote miss: no entry "+key {
		t.Fatalf("outcome %q", got)
	}
	if _, err := writer.Create(key, rtFill); err != nil {
		t.Fatal(err)
	}
	if got := writer.RemoteOutcome(key, true); got != "" {
		t.Fatalf("a hit on the entry made here says %q of the remote", got)
	}
	if res := w.Wait(10 * time.Second); res.Pushed != 1 {
		t.Fatalf("pushes: %+v", res)
	}

	read := func() (*Cache, *Entry, error) {
		r := Open(t.TempDir()).WithRemote(cache.WithRemote(context.Background(), &cache.RemoteSession{Remote: remote}))
		e, err := r.Get(key, false)
		return r, e, err
	}
	r, e, err := read()
	if err != nil || e == nil {
		t.Fatalf("read through: %v, %v", e, err)
	}
	rtDiff(t, "pulled tree", rtListing(t, e.Dir), rtWantListing())
	if got := r.RemoteOutcome(key, true); got != "remote hit" {
		t.Fatalf("outcome %q", got)
	}

	p := filepath.Join(remote.root, cache.AreaRuntime, key, "tree", "node_modules", "a", "index.js")
	if err := os.WriteFile(p, []byte("module.exports = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, e, err = read()
	if e != nil || err == nil || !strings.Contains(err.Error(), "pulled from the remote cache was discarded") {
		t.Fatalf("a damaged pull: %v, %v", e, err)
	}
	if got := r.RemoteOutcome(key, false); !strings.HasPrefix(got, "remote miss: the pulled entry failed verification") {
		t.Fatalf("outcome %q", got)
	}
	if names := rtRootNames(t, r); len(names) != 0 {
		t.Fatalf("the discarded entry left %v", names)
	}
}

// The digests a pull reports it verified are taken for those files: the
// pulled tree is not read a second time. A file the pull reports with
// another digest than the entry's manifest, or does not report, is
// re-hashed as any.
func TestRuntimeCachePullTakesVerifiedDigests(t *testing.T) {
	remote := copyRemote{root: t.TempDir()}
	key := rtKey("verified")
	w := &cache.RemoteSession{Remote: remote, Write: true}
	writer := Open(t.TempDir()).WithRemote(cache.WithRemote(context.Background(), w))
	e, err := writer.Create(key, rtFill)
	if err != nil {
		t.Fatal(err)
	}
	if res := w.Wait(10 * time.Second); res.Pushed != 1 {
		t.Fatalf("pushes: %+v", res)
	}
	const file = "node_modules/a/index.js"
	var listed string
	for _, f := range e.Files {
		if f.Path == file {
			listed = f.SHA256
		}
	}
	// The store's copy changes after the push, keeping its size: only
	// reading it tells.
	if err := os.WriteFile(filepath.Join(remote.root, cache.AreaRuntime, key, "tree", filepath.FromSlash(file)), []byte("module.exports = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		verified cache.Pulled
		taken    bool
	}{
		{"reported with the manifest's digest: taken, not read", cache.Pulled{"tree/" + file: listed}, true},
		{"reported with another digest: read", cache.Pulled{"tree/" + file: strings.Repeat("0", 64)}, false},
		{"not reported: read", cache.Pulled{"tree/other": listed}, false},
		{"reported outside the tree: read", cache.Pulled{file: listed}, false},
	} {
		remote.verified = c.verified
		r := Open(t.TempDir()).WithRemote(cache.WithRemote(context.Background(), &cache.RemoteSession{Remote: remote}))
		e, err := r.Get(key, false)
		if c.taken != (e != nil && err == nil) {
			t.Errorf("%s: Get = %v, %v", c.name, e, err)
		}
	}
}
