package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

type countingRemote struct {
	pulls, pushes atomic.Int32
	block         chan struct{} // Push waits on it when not nil
	fail          bool
}

func (r *countingRemote) String() string { return "test://remote" }

func (r *countingRemote) Pull(_ context.Context, area, key, dst string) (Pulled, error) {
	r.pulls.Add(1)
	return nil, Misses("no entry %s", key)
}

func (r *countingRemote) Push(ctx context.Context, area, key, src string) error {
	if r.block != nil {
		select {
		case <-r.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if r.fail {
		return errors.New("refused")
	}
	r.pushes.Add(1)
	return nil
}

// A key that missed remotely is not asked again in the run; the outcome
// says why; nothing is left in the local root.
func TestRemoteSessionAsksOncePerKey(t *testing.T) {
	r := &countingRemote{}
	s := &RemoteSession{Remote: r}
	root := t.TempDir()
	ctx := WithRemote(context.Background(), s)
	for range 2 {
		if _, ok := RemoteFrom(ctx).Fetch(ctx, AreaRuntime, "i-0123456789abcdef0123", root, filepath.Join(root, "i-0123456789abcdef0123")); ok {
			t.Fatal("a miss placed an entry")
		}
	}
	if n := r.pulls.Load(); n != 1 {
		t.Fatalf("%d pulls, want 1", n)
	}
	if o, ok := s.Outcome(AreaRuntime, "i-0123456789abcdef0123"); !ok || o.String() != "remote miss: no entry i-0123456789abcdef0123" {
		t.Fatalf("outcome %+v", o)
	}
	if des, _ := os.ReadDir(root); len(des) != 0 {
		t.Fatalf("left %v in the local root", des)
	}
	if RemoteFrom(context.Background()) != nil {
		t.Fatal("a context without a session has one")
	}
}

// A read-only session pushes nothing; a writing one pushes in the
// background, and Wait reports what was pushed and stops waiting at its
// limit, cancelling what is left.
func TestRemoteSessionPushes(t *testing.T) {
	r := &countingRemote{}
	(&RemoteSession{Remote: r}).Push(AreaAction, "k", t.TempDir())
	s := &RemoteSession{Remote: r, Write: true}
	s.Push(AreaAction, "k1", t.TempDir())
	s.Push(AreaAction, "k2", t.TempDir())
	if res := s.Wait(10 * time.Second); res.Pushed != 2 || len(res.Failed) != 0 || res.Summary("test://remote") != "remote cache: pushed 2 entries to test://remote" {
		t.Fatalf("Wait = %+v (%s)", res, res.Summary("test://remote"))
	}
	slow := &countingRemote{block: make(chan struct{})}
	s = &RemoteSession{Remote: slow, Write: true}
	s.Push(AreaRuntime, "i-0123456789abcdef0123", t.TempDir())
	start := time.Now()
	res := s.Wait(100 * time.Millisecond)
	if time.Since(start) > 5*time.Second || res.Pushed != 0 || len(res.Failed) != 1 {
		t.Fatalf("Wait on a stuck push = %+v after %s", res, time.Since(start))
	}
	if got := res.Summary("x"); got != "remote cache: pushed 0 entries to x; 1 entry not pushed (runtime i-0123456789abcdef0123: context canceled)" {
		t.Fatalf("summary %q", got)
	}
}
