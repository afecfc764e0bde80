package receipt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/proc"
)

// LeaseSchema identifies a lease record.
const LeaseSchema = "piship-lease/v1"

// StartTolerance is how far a recorded process start may be from the
// system's before the pid counts as reused. 30 s, not 5: on Windows a first
// launch can spend seconds loading and scanning before it records itself.
const StartTolerance = 30 * time.Second

// freshLease is how long an unreadable lease file counts as being written.
const freshLease = 10 * time.Second

// Lease is a runtime lease: a launch of version is running in process
// PID on Host, started at Start. Instance is random, and names the file.
type Lease struct {
	Schema   string    `json:"schema"`
	App      string    `json:"app"`
	Version  string    `json:"version"`
	PID      int       `json:"pid"`
	Host     string    `json:"host"`
	Start    time.Time `json:"start"`
	Instance string    `json:"instance"`

	Path   string `json:"-"` // the lease file
	Live   bool   `json:"-"` // decided by ListLeases
	Reason string `json:"-"` // why it is live or dead
}

func (l Lease) String() string {
	return fmt.Sprintf("version %s, pid %d on %s (%s)", l.Version, l.PID, l.Host, l.Reason)
}

var (
	hostOnce sync.Once
	hostName string
)

// Hostname is this machine's name as leases record it.
func Hostname() string {
	hostOnce.Do(func() {
		hostName, _ = os.Hostname()
		if hostName == "" {
			hostName = "unknown"
		}
	})
	return hostName
}

// SelfStart is this process's start time: from the system where it gives
// it for free (Linux, Windows), else the time of the first call.
var SelfStart = sync.OnceValue(func() time.Time {
	if t, ok := proc.StartTime(os.Getpid()); ok {
		return t
	}
	return time.Now()
})

// WriteLease records that this process runs version of id:
// apps/<id>/.runtime-leases/<version>/<instance>.json, written in one
// write and not flushed. When the install home refuses it (full,
// read-only), the lease goes to the first of FallbackLeaseRoots that takes
// it (Lease.Path says where). Only when none does is the error returned
// (CONFIG_UNAVAILABLE, naming every place tried): the run is then
// unregistered, and only a process scan (Linux) finds it. remove deletes
// the lease (safe to call more than once).
func WriteLease(installHome, id, version string) (*Lease, func(), error) {
	if err := CheckID(id); err != nil {
		return nil, nil, err
	}
	if !ValidVersion(version) {
		return nil, nil, Errorf(CodeConfigInvalid, "%q is not a version", version)
	}
	l := &Lease{Schema: LeaseSchema, App: id, Version: version, PID: os.Getpid(), Host: Hostname(),
		Start: SelfStart().UTC(), Instance: canon.RandomHex(8)}
	data, _ := json.Marshal(l)
	l.Path = filepath.Join(LeasesDir(installHome, id), version, l.Instance+".json")
	l.Live, l.Reason = true, "this process"
	err := writeLeaseFile(l.Path, data)
	if err == nil {
		var once sync.Once
		return l, func() { once.Do(func() { os.Remove(l.Path) }) }, nil
	}
	path, errs := writeFallbackLease(l, data, installHome)
	if path == "" {
		return nil, nil, Errorf(CodeUnavailable, "cannot write the runtime lease: %w", errors.New(strings.Join(append([]string{err.Error()}, errs...), "; ")))
	}
	l.Path, l.Reason = path, "this process (registered outside the install home: "+err.Error()+")"
	var once sync.Once
	return l, func() {
		once.Do(func() {
			os.Remove(l.Path)
			os.Remove(filepath.Dir(l.Path)) // the version's directory, once empty
		})
	}, nil
}

// writeLeaseFile creates path (and its directory if missing) holding data
// in one write; a failed write leaves no file.
func writeLeaseFile(path string, data []byte) error {
	write := func() error {
		if err := fault(path); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
		return err
	}
	err := write()
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
			err = write()
		}
	}
	return err
}

// ListLeases returns every lease of id, each with Live and Reason decided,
// sorted by version and path: those in apps/<id>/.runtime-leases, those
// in the fallback roots (FallbackLeaseRoots) and, on Linux, one live record
// (with no Path) for each process found running from a version of
// apps/<id> that no live lease holds: a run that could register nowhere
// (see WriteLease). Nothing is started to decide liveness.
func ListLeases(installHome, id string) ([]Lease, error) {
	if err := CheckID(id); err != nil {
		return nil, err
	}
	out, err := listLeasesIn(LeasesDir(installHome, id))
	if err != nil {
		return nil, Errorf(CodeUnavailable, "cannot list the runtime leases of %s: %w", id, err)
	}
	for _, root := range fallbackLeaseDirs(installHome, id) {
		more, _ := listLeasesIn(root)
		for _, l := range more {
			l.Reason += "; registered outside the install home, in " + root
			out = append(out, l)
		}
	}
	held := map[string]bool{}
	for _, l := range out {
		if l.Live {
			held[l.Version] = true
		}
	}
	out = append(out, unregisteredUses(installHome, id, held)...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Version != out[j].Version {
			return out[i].Version < out[j].Version
		}
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].PID < out[j].PID
	})
	return out, nil
}

// listLeasesIn reads root/<version>/*.json; a missing root holds none.
func listLeasesIn(root string) ([]Lease, error) {
	versions, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Lease
	now := time.Now()
	for _, v := range versions {
		if !v.IsDir() {
			continue
		}
		dir := filepath.Join(root, v.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name(), ".json") {
				continue
			}
			out = append(out, readLease(filepath.Join(dir, f.Name()), v.Name(), now))
		}
	}
	return out, nil
}

// LiveLeasesOf returns the live leases of id's version: the starts that
// may have its files open.
func LiveLeasesOf(installHome, id, version string) ([]Lease, error) {
	live, err := LiveLeases(installHome, id)
	return slices.DeleteFunc(live, func(l Lease) bool { return l.Version != version }), err
}

// LiveLeases returns the live leases of id.
func LiveLeases(installHome, id string) ([]Lease, error) {
	all, err := ListLeases(installHome, id)
	if err != nil {
		return nil, err
	}
	live := all[:0]
	for _, l := range all {
		if l.Live {
			live = append(live, l)
		}
	}
	return live, nil
}

func readLease(path, version string, now time.Time) Lease {
	l := Lease{Path: path, Version: version}
	data, err := atomicfs.ReadRegular(path, 1<<20) // a pipe there must not hang every start
	if err == nil {
		err = json.Unmarshal(data, &l)
		l.Path = path
		if l.Version == "" {
			l.Version = version
		}
	}
	if err != nil || l.Schema != LeaseSchema || l.PID <= 0 {
		// Written in one write, so an unreadable lease is either being
		// written this instant or garbage; only a young one counts.
		if fi, serr := os.Stat(path); serr == nil && now.Sub(fi.ModTime()) < freshLease {
			l.Live, l.Reason = true, "unreadable, being written"
		} else {
			l.Live, l.Reason = false, "unreadable"
		}
		return l
	}
	l.Live, l.Reason = ProcessLive(l.PID, l.Host, l.Start)
	return l
}

// ProcessLive decides whether the process a record names still runs. A
// record of another host is live (it cannot be checked from here). Else
// the pid must exist and, where the system tells a process's start time
// without starting a process (Linux /proc, Windows GetProcessTimes), start
// within StartTolerance of the recorded start: a pid in use by a process
// started at another time was reused, and the record is dead.
func ProcessLive(pid int, host string, start time.Time) (bool, string) {
	if host != "" && host != Hostname() {
		return true, "another host (" + host + "), not checked"
	}
	if pid <= 0 || !proc.Exists(pid) {
		return false, fmt.Sprintf("pid %d is not running", pid)
	}
	if pid == os.Getpid() {
		if d := SelfStart().Sub(start); !start.IsZero() && (d > StartTolerance || d < -StartTolerance) {
			return false, fmt.Sprintf("pid %d is this process, started at another time", pid)
		}
		return true, "this process"
	}
	if st, ok := proc.StartTime(pid); ok && !start.IsZero() {
		if d := st.Sub(start); d > StartTolerance || d < -StartTolerance {
			return false, fmt.Sprintf("pid %d was reused (started %s, recorded %s)", pid, st.UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339))
		}
		return true, fmt.Sprintf("pid %d running", pid)
	}
	return true, fmt.Sprintf("pid %d running (start not checked)", pid)
}
