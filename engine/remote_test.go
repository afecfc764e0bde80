package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
)

// dirRemote is a remote cache in a directory: entries copied whole.
type dirRemote struct{ root string }

func (d dirRemote) String() string { return "dir:" + d.root }

func (d dirRemote) Push(_ context.Context, area, key, src string) error {
	return os.CopyFS(filepath.Join(d.root, area, key), os.DirFS(src))
}

func (d dirRemote) Pull(_ context.Context, area, key, dst string) (cache.Pulled, error) {
	src := filepath.Join(d.root, area, key)
	if _, err := os.Stat(src); err != nil {
		return nil, cache.Misses("no entry %s", key)
	}
	return nil, os.CopyFS(dst, os.DirFS(src))
}

// Two clones of one checkout at different paths, on two empty cache homes
// sharing a remote cache: the second computes the same key though its
// configuration names its own absolute path, pulls the first's entry and
// serves the stage from it (a remote hit); a damaged pulled entry is a
// remote miss with the reason, and the stage runs.
func TestActionCacheReadsThroughTheRemote(t *testing.T) {
	remote := dirRemote{t.TempDir()}
	clone := func(parent string) string {
		dir := filepath.Join(parent, "repo")
		for _, d := range []string{".git", "pipelines"} {
			if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "pipelines", "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	run := func(checkout string, write bool) (*StageResult, cache.Lookup, cache.PushResult) {
		t.Helper()
		src := `pipeline "p" {
  stage "copy" "a" {
    from  = "a.txt"
    to    = "a.out"
    note  = "` + checkout + `/tools/gen --out=` + checkout + `/out"
    cache = true
  }
}`
		dir := filepath.Join(checkout, "pipelines")
		gs, _, diags := graph.Parse([]byte(src), "p.hcl", dir, stage.NewRegistry(stage.Define[copyConfig, copyOutputs](copyKind{})))
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		s := &cache.RemoteSession{Remote: remote, Write: write}
		res, err := Run(cache.WithRemote(context.Background(), s), gs[0], Options{Parallelism: 1, Cache: cache.OpenActions(t.TempDir()), ToolDigest: "test"})
		if err != nil {
			t.Fatal(err)
		}
		r := res.Stages[0]
		if r.Err != nil || len(r.Lookups) != 1 {
			t.Fatalf("stage: %v, lookups %+v", r.Err, r.Lookups)
		}
		return r, r.Lookups[0], s.Wait(10 * time.Second)
	}
	first, lk1, pushed := run(clone(filepath.Join(t.TempDir(), "one")), true)
	if first.CacheHit || lk1.Remote != "remote miss: no entry "+first.CacheKey || pushed.Pushed != 1 {
		t.Fatalf("first run: hit %v, remote %q, pushed %+v", first.CacheHit, lk1.Remote, pushed)
	}
	second, lk2, pushed := run(clone(filepath.Join(t.TempDir(), "two", "deeper")), false)
	if second.CacheKey != first.CacheKey {
		t.Fatalf("the clones' keys differ: %s and %s (the checkout's path is in the key)", first.CacheKey, second.CacheKey)
	}
	if !second.CacheHit || lk2.Remote != "remote hit" || pushed.Pushed != 0 {
		t.Fatalf("second run: hit %v, remote %q, pushed %+v", second.CacheHit, lk2.Remote, pushed)
	}
	// Damage the stored file in the remote: the pull is discarded.
	if err := os.WriteFile(filepath.Join(remote.root, cache.AreaAction, first.CacheKey, "files", "0"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	third, lk3, _ := run(clone(filepath.Join(t.TempDir(), "three")), false)
	if third.CacheHit || third.Status != Succeeded || lk3.Remote == "" || lk3.Remote[:len("remote miss: the pulled entry failed verification")] != "remote miss: the pulled entry failed verification" {
		t.Fatalf("damaged remote entry: hit %v, status %v, remote %q", third.CacheHit, third.Status, lk3.Remote)
	}
}

func TestPortableConfig(t *testing.T) {
	root := "/a/repo"
	got := string(portableConfig([]byte(`{"dir":"/a/repo","args":["--out=/a/repo/x","/a/repository","/usr/bin/node"],"n":1.50}`), root))
	want := `{"args":["--out=${checkout}/x","/a/repository","/usr/bin/node"],"dir":"${checkout}","n":1.50}`
	if got != want {
		t.Fatalf("portableConfig = %s\nwant %s", got, want)
	}
	same := `{"dir":"rel"}`
	if got := string(portableConfig([]byte(same), root)); got != same {
		t.Fatalf("a configuration without the path changed: %s", got)
	}
}
