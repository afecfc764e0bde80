package payload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

// Staging is a payload under construction: a directory inside the output
// directory that is renamed to <out>/<id> only when complete, so nothing
// half-built ever stands at the final path. One build at a time may stage
// a given id in a given output directory (a lock file guards it); the
// leftovers of a killed build are swept by the next one.
type Staging struct {
	Out, ID string
	Dir     string // the staging directory
	Final   string // <out>/<id>
	lock    *os.File
}

var (
	openMu  sync.Mutex
	openSet = map[string]*Staging{} // by Dir, so later stages find it
)

// Begin takes the build lock for <out>/<id> (waiting while another build
// holds it, until ctx ends), sweeps stale staging and replaced directories
// of earlier builds, and creates a fresh staging directory.
func Begin(ctx context.Context, out, id string) (*Staging, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot create output directory %s: %v", out, err)
	}
	lock, err := lockFile(ctx, filepath.Join(out, "."+id+".build.lock"))
	if err != nil {
		return nil, err
	}
	s := &Staging{Out: out, ID: id, Final: filepath.Join(out, id), lock: lock}
	if err := s.sweep(); err != nil {
		s.Close()
		return nil, err
	}
	s.Dir = filepath.Join(out, ".staging-"+id+"-"+canon.RandomHex(6))
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		s.Close()
		return nil, err
	}
	openMu.Lock()
	openSet[s.Dir] = s
	openMu.Unlock()
	return s, nil
}

// Sweep removes the leftovers of killed builds of <out>/<id> under the
// build lock, for a build that reuses the payload and stages nothing.
func Sweep(ctx context.Context, out, id string) error {
	lock, err := lockFile(ctx, filepath.Join(out, "."+id+".build.lock"))
	if err != nil {
		return err
	}
	defer unlockFile(lock)
	return (&Staging{Out: out, ID: id}).sweep()
}

// Lookup returns the open staging with directory dir.
func Lookup(dir string) (*Staging, bool) {
	openMu.Lock()
	defer openMu.Unlock()
	s, ok := openSet[dir]
	return s, ok
}

// sweep removes what killed builds left: staging directories and replaced
// payloads that were not yet deleted.
func (s *Staging) sweep() error {
	entries, err := os.ReadDir(s.Out)
	if err != nil {
		return err
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, ".staging-"+s.ID+"-") || strings.HasPrefix(n, ".old-"+s.ID+"-") {
			if err := os.RemoveAll(filepath.Join(s.Out, n)); err != nil {
				return fmt.Errorf("cannot remove the leftover %s of an earlier build: %v", n, err)
			}
		}
	}
	return nil
}

// Publish moves the staging directory to the final path. An existing
// payload is first renamed aside and removed after the new one stands.
func (s *Staging) Publish() error {
	old := ""
	if _, err := os.Lstat(s.Final); err == nil {
		old = filepath.Join(s.Out, ".old-"+s.ID+"-"+canon.RandomHex(6))
		if err := rename(s.Final, old); err != nil {
			return fmt.Errorf("cannot move the previous payload aside: %v", err)
		}
	}
	if err := rename(s.Dir, s.Final); err != nil {
		if old != "" {
			_ = rename(old, s.Final) // put the previous payload back
		}
		return err
	}
	s.Dir = ""
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// Published reports whether Publish succeeded.
func (s *Staging) Published() bool { return s.Dir == "" }

// Close removes an unpublished staging directory and releases the lock.
func (s *Staging) Close() error {
	var err error
	if s.Dir != "" {
		openMu.Lock()
		delete(openSet, s.Dir)
		openMu.Unlock()
		err = os.RemoveAll(s.Dir)
		s.Dir = ""
	}
	if s.lock != nil {
		unlockFile(s.lock)
		s.lock = nil
	}
	return err
}

// Forget drops the registry entry of a published staging (its directory is
// now the final payload) and releases the lock.
func (s *Staging) Forget(dir string) {
	openMu.Lock()
	delete(openSet, dir)
	openMu.Unlock()
	s.Close()
}

// rename retries on Windows with the build output's schedule
// (atomicfs.CacheDelays, about 4.5 s), where a scanner's open handle makes a
// directory rename fail for a moment; elsewhere it fails at once.
func rename(from, to string) error {
	return atomicfs.DefaultRenamer(atomicfs.CacheDelays).Do(from, to)
}
