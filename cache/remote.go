package cache

// The remote cache: a store shared by many machines (a CI fleet's OCI
// registry) that the action cache and the runtime cache read through on a
// local miss and write back to after one. This file holds only the contract
// and the run's bookkeeping; the store itself (stages/remotecache, on
// stages/oci) is handed in by the command through the context, so neither
// the engine nor this package links a registry client.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"piship.dev/piship/cache/canon"
)

// The areas of the remote cache: the action cache's entries and the runtime
// cache's (i- and b- keys).
const (
	AreaAction  = "action"
	AreaRuntime = "runtime"
)

// Remote is a store of cache entries shared between machines. An entry is
// moved as its local on-disk form: for AreaAction the directory holding
// entry.json and files/, for AreaRuntime the one holding manifest.json and
// tree/. Whatever Pull places is verified again by the local cache before
// it is used: a remote is never trusted more than the local disk.
type Remote interface {
	// Pull writes the entry for key into dstDir, which does not exist
	// yet (its parent does), and returns the digest of every regular file
	// it wrote, checked while the bytes arrived. A miss (absent, unsigned,
	// untrusted, damaged, incomplete, evicted, the store unreachable) is a
	// *RemoteMiss.
	Pull(ctx context.Context, area, key, dstDir string) (Pulled, error)
	// Push stores the entry in srcDir under key.
	Push(ctx context.Context, area, key, srcDir string) error
	// String names the store for messages (oci://host/repo).
	String() string
}

// Pulled is the sha256 (hex) of each regular file a Pull wrote, by its
// slash path in the entry's directory, each checked against the signed
// listing as it was written. The local cache compares its own listing
// with these rather than reading every file again; a file missing here,
// or with another digest, is read and hashed as any.
type Pulled map[string]string

// RemoteMiss is a remote lookup that found nothing it may use, and why.
type RemoteMiss struct {
	Reason string
}

func (m *RemoteMiss) Error() string { return "remote cache miss: " + m.Reason }

// Misses builds a *RemoteMiss.
func Misses(format string, a ...any) error {
	return &RemoteMiss{Reason: fmt.Sprintf(format, a...)}
}

// RemoteOutcome is what one remote lookup gave.
type RemoteOutcome struct {
	Hit    bool
	Reason string // why it missed
}

// String is how spans and explain say it: "remote hit", "remote miss: WHY".
func (o RemoteOutcome) String() string {
	if o.Hit {
		return "remote hit"
	}
	return "remote miss: " + o.Reason
}

// RemoteSession is a run's use of a Remote: what was looked up (each key
// once per run), and the pushes started after misses, which the command
// waits for at the end (Wait). Safe for concurrent use.
type RemoteSession struct {
	Remote Remote
	// Write pushes new entries (--remote-cache-mode readwrite).
	Write bool
	// Parallel bounds the pushes in flight (4 when zero).
	Parallel int

	mu       sync.Mutex
	log      io.Writer
	outcomes map[string]RemoteOutcome
	wg       sync.WaitGroup
	sem      chan struct{}
	pushed   int
	failed   []string
	ctx      context.Context
	cancel   context.CancelFunc
}

// SetLog sets where Warn writes (the run's log, so a live progress view
// redraws below the line); stderr until it is set.
func (s *RemoteSession) SetLog(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = w
}

// Warn prints a warning of the remote cache (the registry given up on) on
// the run's log.
func (s *RemoteSession) Warn(msg string) {
	s.mu.Lock()
	w := s.log
	s.mu.Unlock()
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "piship: warning: remote cache: %s\n", msg)
}

type remoteKey struct{}

// WithRemote returns ctx carrying s (nil: none).
func WithRemote(ctx context.Context, s *RemoteSession) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, remoteKey{}, s)
}

// RemoteFrom returns the run's remote session, or nil.
func RemoteFrom(ctx context.Context) *RemoteSession {
	s, _ := ctx.Value(remoteKey{}).(*RemoteSession)
	return s
}

// Outcome returns the outcome of the remote lookup of key in area in this
// run, if there was one.
func (s *RemoteSession) Outcome(area, key string) (RemoteOutcome, bool) {
	if s == nil {
		return RemoteOutcome{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.outcomes[area+"/"+key]
	return o, ok
}

// Describe is the remote's part in a lookup of key in area that hit or
// not: "remote hit" when the entry came from the remote in this run,
// "remote miss: WHY" on a miss it could not serve, "" when the remote was
// not asked or a hit is an entry made locally after a remote miss.
func (s *RemoteSession) Describe(area, key string, hit bool) string {
	o, ok := s.Outcome(area, key)
	if !ok || hit && !o.Hit {
		return ""
	}
	return o.String()
}

func (s *RemoteSession) record(area, key string, o RemoteOutcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outcomes == nil {
		s.outcomes = map[string]RemoteOutcome{}
	}
	s.outcomes[area+"/"+key] = o
}

// Fetch pulls the entry for key into the local cache whose root is root,
// at final (a path inside root that does not exist): into a temporary
// directory inside root first, then renamed into place. It reports whether
// an entry now stands at final; the caller then looks it up locally as
// any entry, with every local check, and may take the digests Pull
// verified (nil when the entry at final is another writer's). A key is
// tried once per run: a second Fetch of a key that missed misses again
// without asking the store.
func (s *RemoteSession) Fetch(ctx context.Context, area, key, root, final string) (Pulled, bool) {
	if s == nil || s.Remote == nil {
		return nil, false
	}
	if o, ok := s.Outcome(area, key); ok && !o.Hit {
		return nil, false
	}
	o, pulled := s.fetch(ctx, area, key, root, final)
	s.record(area, key, o)
	return pulled, o.Hit
}

func (s *RemoteSession) fetch(ctx context.Context, area, key, root, final string) (RemoteOutcome, Pulled) {
	miss := func(err error) (RemoteOutcome, Pulled) {
		var m *RemoteMiss
		if errors.As(err, &m) {
			return RemoteOutcome{Reason: m.Reason}, nil
		}
		return RemoteOutcome{Reason: err.Error()}, nil
	}
	if err := os.MkdirAll(root, 0o777); err != nil {
		return miss(err)
	}
	tmp, err := os.MkdirTemp(root, tempPrefix+"remote-")
	if err != nil {
		return miss(err)
	}
	defer os.RemoveAll(tmp)
	dst := filepath.Join(tmp, "entry")
	pulled, err := s.Remote.Pull(ctx, area, key, dst)
	if err != nil {
		return miss(err)
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o777); err != nil {
		return miss(err)
	}
	if err := os.Rename(dst, final); err != nil {
		if _, serr := os.Lstat(final); serr == nil {
			return RemoteOutcome{Hit: true}, nil // a concurrent writer placed it: nothing of it verified here
		}
		return miss(fmt.Errorf("placing the pulled entry: %w", err))
	}
	return RemoteOutcome{Hit: true}, pulled
}

// Rejected records that the entry Fetch placed for key failed the local
// checks (the caller removed it): the lookup was a remote miss after all.
func (s *RemoteSession) Rejected(area, key, why string) {
	if s != nil {
		s.record(area, key, RemoteOutcome{Reason: "the pulled entry failed verification and was discarded: " + why})
	}
}

// Push starts a push of the local entry in dir to the store, in the
// background, when the session writes. It never blocks on the push; Wait
// does.
func (s *RemoteSession) Push(area, key, dir string) {
	if s == nil || s.Remote == nil || !s.Write {
		return
	}
	s.mu.Lock()
	if s.sem == nil {
		n := s.Parallel
		if n <= 0 {
			n = 4
		}
		s.sem = make(chan struct{}, n)
		// The pushes outlive the stage that started them (never its
		// cancellation), not the session's Wait.
		s.ctx, s.cancel = context.WithCancel(context.Background())
	}
	ctx := s.ctx
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sem <- struct{}{}
		defer func() { <-s.sem }()
		err := s.Remote.Push(ctx, area, key, dir)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.failed = append(s.failed, fmt.Sprintf("%s %s: %v", area, key, err))
		} else {
			s.pushed++
		}
	}()
}

// PushResult is what Wait reports.
type PushResult struct {
	Pushed int
	// Failed says, for each entry not pushed, why.
	Failed []string
	// Waited is how long Wait waited.
	Waited time.Duration
}

// Wait waits for the pushes started so far, at most limit (then they are
// cancelled and counted as failed), and reports them.
func (s *RemoteSession) Wait(limit time.Duration) PushResult {
	if s == nil {
		return PushResult{}
	}
	start := time.Now()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		s.mu.Lock()
		if s.cancel != nil {
			s.cancel()
		}
		s.mu.Unlock()
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return PushResult{Pushed: s.pushed, Failed: append([]string(nil), s.failed...), Waited: time.Since(start)}
}

// Summary is the line a command prints after Wait: how many entries were
// pushed to where, and the first failure.
func (r PushResult) Summary(where string) string {
	msg := fmt.Sprintf("remote cache: pushed %s to %s", canon.Count(r.Pushed, "entry", "entries"), where)
	if n := len(r.Failed); n > 0 {
		msg += fmt.Sprintf("; %s not pushed (%s)", canon.Count(n, "entry", "entries"), r.Failed[0])
	}
	return msg
}

// EntryDir returns the directory of the action entry for key (its local
// on-disk form, what a Remote moves).
func (a *Actions) EntryDir(key string) string { return a.entryDir(key) }

// PullRemote fetches the action entry for key from the run's remote cache
// (RemoteFrom(ctx)) into the store on a local miss; the caller looks it up
// again. It reports whether an entry was placed.
func (a *Actions) PullRemote(ctx context.Context, key string) bool {
	if checkKey(key) != nil {
		return false
	}
	if _, err := os.Stat(a.entryDir(key)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	_, placed := RemoteFrom(ctx).Fetch(ctx, AreaAction, key, a.root, a.entryDir(key))
	return placed
}
