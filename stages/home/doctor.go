package home

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/tracing/phase"
)

// DefaultReclaimBudget is doctor's time budget for removing obsolete
// versions (PISHIP_RECLAIM_BUDGET_MS, which the caller reads).
const DefaultReclaimBudget = 5 * time.Second

// reclaimCheckEvery is how many unlinks pass between budget checks.
const reclaimCheckEvery = 64

// DoctorReport is what Doctor found and did. It travels as the doctor
// stage's `report` output (the cty tags) and is printed by `piship doctor
// --json` (the json names: the Go field names unless tagged; see JSON).
type DoctorReport struct {
	ID       string `cty:"id"`
	Active   string `cty:"active"`
	Previous string `cty:"previous"`
	// NotInstalled is set when id has no receipt, only apps/<id> (what a
	// failed first install set aside): doctor reclaimed what it could and
	// verified nothing.
	NotInstalled bool `json:",omitempty" cty:"not_installed"`
	// Verified is set when the active payload matched its inventory and
	// its lock the digest the receipt recorded.
	Verified bool `cty:"verified"`
	// Problems are what needs a repair or a reinstall.
	Problems []string `cty:"problems"`
	// Reclaimed lists what was removed (directories, dead leases);
	// Remaining what the budget left for the next doctor.
	Reclaimed []string `cty:"reclaimed"`
	Remaining []string `cty:"remaining"`
	// Leases are the live runtime leases.
	Leases []DoctorLease `cty:"leases"`
	// DiskBytes is the size of apps/<id> after reclaiming.
	DiskBytes int64 `cty:"disk_bytes"`
	// Trust is what updates of the active release trust: the channel and
	// keys its lock records and the replay floor the receipt keeps.
	Trust TrustState `cty:"trust"`
	// TrustFile is trust/<id>.json when it exists, else "".
	TrustFile string `json:",omitempty" cty:"trust_file"`
	// ShimRefreshed is set when the command shim was outdated (another
	// launcher or homes) and was rewritten.
	ShimRefreshed bool `cty:"shim_refreshed"`
	// LauncherReplaced is set when the launcher kept in the install home
	// differed from the one beside this piship and was replaced.
	LauncherReplaced bool `json:",omitempty" cty:"launcher_replaced"`
	// Store is what the store's GC did (nil without a store).
	Store *StoreReport `json:",omitempty" cty:"store"`
}

// JSON is the report as `piship doctor --json` prints it (indented, one
// line per field, a newline at the end). Doctor leaves a list it found
// nothing for nil, written as null; a report that travelled as a stage
// output holds empty lists instead, so they are written as null too and
// the JSON is the same either way.
func (r DoctorReport) JSON() ([]byte, error) {
	for _, l := range []*[]string{&r.Problems, &r.Reclaimed, &r.Remaining} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(r.Leases) == 0 {
		r.Leases = nil
	}
	return canon.JSON(r)
}

// DoctorLease is a live runtime lease as the report carries it: the
// fields of its lease file (receipt.Lease), the start time in RFC 3339
// with nanoseconds, the form the lease file and the JSON report write it
// in.
type DoctorLease struct {
	Schema   string `json:"schema" cty:"schema"`
	App      string `json:"app" cty:"app"`
	Version  string `json:"version" cty:"version"`
	PID      int    `json:"pid" cty:"pid"`
	Host     string `json:"host" cty:"host"`
	Start    string `json:"start" cty:"start"`
	Instance string `json:"instance" cty:"instance"`
}

// StartTime is the lease's start (the zero time when it cannot be read).
func (l DoctorLease) StartTime() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, l.Start)
	return t
}

// doctorLeases turns live leases into the report's (nil for none).
func doctorLeases(ls []receipt.Lease) []DoctorLease {
	var out []DoctorLease
	for _, l := range ls {
		out = append(out, DoctorLease{Schema: l.Schema, App: l.App, Version: l.Version, PID: l.PID, Host: l.Host,
			Start: l.Start.Format(time.RFC3339Nano), Instance: l.Instance})
	}
	return out
}

// StoreReport is the content-addressed store as doctor left it.
type StoreReport struct {
	Dir       string `cty:"dir"`
	Objects   int    `cty:"objects"`   // objects looked at
	Removed   int    `cty:"removed"`   // objects nothing linked any more, past the grace
	Bytes     int64  `cty:"bytes"`     // bytes those held
	Exhausted bool   `cty:"exhausted"` // the budget ran out first
	Problem   string `json:",omitempty" cty:"problem"`
}

// TrustState is the update trust of an installation.
type TrustState struct {
	// Channel, Source, Keys and Threshold come from the active release's
	// lock (its updates block); empty when it has none, and then updates
	// are refused.
	Channel   string                       `json:",omitempty" cty:"channel"`
	Source    string                       `json:",omitempty" cty:"source"`
	Keys      []distribution.LockUpdateKey `json:",omitempty" cty:"keys"`
	Threshold int                          `json:",omitempty" cty:"threshold"`
	// Sequences is the replay floor: the highest channel sequence
	// installed, per channel.
	Sequences map[string]int64 `json:",omitempty" cty:"sequences"`
	// Problem says why the lock could not be read.
	Problem string `json:",omitempty" cty:"problem"`
}

func trustState(rc *receipt.Receipt) TrustState {
	ts := TrustState{Sequences: rc.Sequences}
	a := rc.Find(rc.Active)
	if a == nil {
		return ts
	}
	raw, err := readSmall(filepath.Join(a.Payload, distribution.LockFileName))
	var l *distribution.Lock
	if err == nil {
		l, err = distribution.ParseLock(raw)
	}
	if err != nil {
		ts.Problem = err.Error()
		return ts
	}
	if u := l.Updates; u != nil {
		ts.Channel, ts.Source, ts.Keys, ts.Threshold = u.Channel, u.Source, u.Keys, u.Threshold
	}
	return ts
}

// String is the one-line form doctor prints.
func (t TrustState) String() string {
	if t.Problem != "" {
		return "unknown: " + t.Problem
	}
	var b strings.Builder
	if t.Channel == "" {
		b.WriteString("no updates block in the active lock (updates are refused)")
	} else {
		fmt.Fprintf(&b, "channel %s from %s, threshold %d of %d key(s):", t.Channel, t.Source, t.Threshold, len(t.Keys))
		for _, k := range t.Keys {
			fmt.Fprintf(&b, " %s (%s)", k.ID, k.Fingerprint)
		}
	}
	if len(t.Sequences) > 0 {
		b.WriteString("; replay floor:")
		chans := make([]string, 0, len(t.Sequences))
		for c := range t.Sequences {
			chans = append(chans, c)
		}
		sort.Strings(chans)
		for _, c := range chans {
			fmt.Fprintf(&b, " %s >= %d", c, t.Sequences[c])
		}
	}
	return b.String()
}

// Doctor runs the full verification of the active release (every payload
// file against the inventory, as payload.Verify does, and the lock against
// the receipt), checks that the previous release and the command shim
// stand, removes dead leases and the temporary receipts a killed commit
// left (receipts/.<id>.json.tmp-*) and reclaims obsolete versions and .retained-*
// directories within budget (DefaultReclaimBudget when 0), never the
// active or previous version nor one a live lease holds. Problems are
// reported, not returned as errors.
func Doctor(ctx context.Context, o Options, id string, budget time.Duration) (*DoctorReport, error) {
	o.setDefaults()
	if err := receipt.CheckID(id); err != nil {
		return nil, err
	}
	if err := o.Homes.Check(); err != nil {
		return nil, err
	}
	start := time.Now()
	home := o.Homes.Install
	unlock, err := receipt.TakeMaintenance(ctx, home, id, o.LockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rc, err := receipt.Read(home, id)
	notInstalled := errors.Is(err, receipt.ErrNotInstalled)
	if notInstalled {
		if _, serr := os.Stat(receipt.AppDir(home, id)); serr != nil {
			return nil, err
		}
		// No receipt, but apps/<id> stands: a failed first install's
		// leftovers. Nothing to verify; reclaim them.
		rc, err = receipt.New(id), nil
	}
	if err != nil {
		return nil, err
	}
	rep := &DoctorReport{ID: id, Active: rc.Active, Previous: rc.Previous, NotInstalled: notInstalled}
	switch a := rc.Find(rc.Active); {
	case rep.NotInstalled:
		// Nothing to verify: only leftovers to reclaim, below.
	case a == nil:
		rep.Problems = append(rep.Problems, fmt.Sprintf("%s has no active release: install it", id))
	default:
		rep.Verified = true
		if err := phase.Run(ctx, "verify", func(ctx context.Context) error { return payload.Verify(ctx, a.Payload) }); err != nil {
			rep.Verified = false
			rep.Problems = append(rep.Problems, fmt.Sprintf("active %s %s: %v", id, a.Version, err))
		}
		if a.LockSHA256 != "" {
			if got, err := cache.HashFile(filepath.Join(a.Payload, "piship.lock")); err != nil || got != a.LockSHA256 {
				rep.Verified = false
				rep.Problems = append(rep.Problems, fmt.Sprintf("active %s %s: payload/piship.lock is not the lock installed (sha256 %s, recorded %s)", id, a.Version, got, a.LockSHA256))
			}
		}
		shim := shimPaths(o.Homes.Bin, a.Command)[0]
		if !isShimOf(shim, id) {
			rep.Problems = append(rep.Problems, fmt.Sprintf("the command shim %s is missing or not piship's: install again to restore it", shim))
		} else if launcher, err := o.launcher(); err == nil {
			// An outdated shim (an older launcher, moved homes) is
			// replaced by what an install would write now.
			if b, err := os.ReadFile(shim); err == nil && string(b) != ShimScript(launcher, id, o.Homes) {
				if _, err := o.writeShims(id, a.Command, a.Target); err == nil {
					rep.ShimRefreshed = true
				} else {
					rep.Problems = append(rep.Problems, fmt.Sprintf("the command shim %s is outdated and could not be rewritten: %v", shim, err))
				}
			}
		}
	}
	if p := rc.Find(rc.Previous); p != nil {
		if _, err := os.Stat(filepath.Join(p.Payload, "piship.lock")); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("previous %s %s is no longer complete: a rollback would fail", id, p.Version))
		}
	}
	rep.Trust = trustState(rc)
	if _, err := os.Stat(receipt.TrustPath(home, id)); err == nil {
		rep.TrustFile = receipt.TrustPath(home, id)
	}

	if budget <= 0 {
		budget = DefaultReclaimBudget
	}
	rctx, ph := phase.Start(ctx, "reclaim")
	rr, err := o.reclaimLocked(rctx, id, start.Add(budget))
	ph.End(err)
	if err != nil {
		return rep, err
	}
	rep.Reclaimed, rep.Remaining, rep.Leases = rr.Reclaimed, rr.Remaining, doctorLeases(rr.Leases)
	if o.Store != nil {
		// What the budget leaves goes to the store; a slow store never
		// fails doctor.
		_, ph = phase.Start(ctx, "store gc")
		g, err := o.Store.GC(start.Add(budget), cache.StoreGrace)
		ph.End(err)
		rep.Store = &StoreReport{Dir: o.Store.Dir(), Objects: g.Objects, Removed: g.Removed, Bytes: g.Bytes, Exhausted: g.Exhausted}
		if err != nil {
			rep.Store.Problem = err.Error()
		}
	}
	if rep.NotInstalled && len(rep.Remaining) == 0 && len(rep.Leases) == 0 {
		removeEmptyAppDir(receipt.AppDir(home, id))
	}
	_, ph = phase.Start(ctx, "disk usage")
	rep.DiskBytes = diskUsage(receipt.AppDir(home, id))
	ph.End(nil)
	return rep, nil
}

// ReclaimResult says what Reclaim removed and left.
type ReclaimResult struct {
	Reclaimed []string
	Remaining []string
	Leases    []receipt.Lease // live
	Unlinks   int
	// Exhausted is set when the budget ran out.
	Exhausted bool
}

// Reclaim removes dead leases and obsolete version directories of id
// within budget, under the maintenance lock: doctor's sweep on its own.
// Install and update call it after their commit with a 1.5 s budget; a
// launch never does, so the hot path deletes nothing.
func Reclaim(ctx context.Context, o Options, id string, budget time.Duration) (*ReclaimResult, error) {
	o.setDefaults()
	if err := receipt.CheckID(id); err != nil {
		return nil, err
	}
	start := time.Now()
	unlock, err := receipt.TakeMaintenance(ctx, o.Homes.Install, id, o.LockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if budget <= 0 {
		budget = DefaultReclaimBudget
	}
	return o.reclaimLocked(ctx, id, start.Add(budget))
}

// reclaimLocked decides the victims under the launch gate (dropping their
// records from the receipt first, so a half-removed directory is never
// reused), then removes them until the deadline, checking it every 64
// unlinks.
func (o *Options) reclaimLocked(ctx context.Context, id string, deadline time.Time) (*ReclaimResult, error) {
	home := o.Homes.Install
	app := receipt.AppDir(home, id)
	res := &ReclaimResult{}
	var victims []string

	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return nil, err
	}
	err = func() error {
		defer release()
		rc, err := receipt.Read(home, id)
		if errors.Is(err, receipt.ErrNotInstalled) {
			rc, err = receipt.New(id), nil
		}
		if err != nil {
			return err
		}
		leases, err := receipt.ListLeases(home, id)
		if err != nil {
			return err
		}
		leased := map[string]bool{}
		for _, l := range leases {
			if l.Live {
				leased[l.Version] = true
				res.Leases = append(res.Leases, l)
				continue
			}
			if os.Remove(l.Path) == nil {
				res.Reclaimed = append(res.Reclaimed, fmt.Sprintf("lease %s (%s)", l.Path, l.Reason))
				os.Remove(filepath.Dir(l.Path)) // the version's lease directory, once empty
			}
		}
		res.Reclaimed = append(res.Reclaimed, removeTempReceipts(home, id)...)
		keep := map[string]bool{}
		for _, v := range []string{rc.Active, rc.Previous} {
			if r := rc.Find(v); r != nil {
				keep[filepath.Clean(r.Dir)] = true
			}
		}
		// apps/.<id>.uninstalling-*: what a killed uninstall had renamed
		// away (a reinstall followed it).
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(app), receipt.UninstallingPrefix(id)+"*")); len(left) > 0 {
			victims = append(victims, left...)
		}
		entries, err := os.ReadDir(app)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return receipt.Errorf(receipt.CodeUnavailable, "cannot list %s: %w", app, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || name == receipt.LeasesName || name == receipt.DownloadsName {
				continue
			}
			dir := filepath.Join(app, name)
			if keep[dir] {
				continue
			}
			version := name
			if strings.HasPrefix(name, ".") {
				version = receipt.RetainedVersion(name)
			}
			if version != "" && leased[version] {
				continue
			}
			if !receipt.ValidVersion(name) && !strings.HasPrefix(name, receipt.RetainedPrefix) && !strings.HasPrefix(name, receipt.StagingPrefix) {
				continue // not ours
			}
			victims = append(victims, dir)
		}
		drop := map[string]bool{}
		for _, v := range victims {
			drop[v] = true
		}
		changed := false
		filter := func(list []receipt.Release) []receipt.Release {
			out := list[:0:0]
			for _, r := range list {
				if drop[filepath.Clean(r.Dir)] {
					changed = true
					continue
				}
				out = append(out, r)
			}
			return out
		}
		rc.Releases, rc.Retained = filter(rc.Releases), filter(rc.Retained)
		if changed {
			rc.UpdatedAt = o.Now().UTC()
			return receipt.WriteWith(home, rc, *o.Renamer)
		}
		return nil
	}()
	if err != nil {
		return nil, err
	}

	sort.Strings(victims)
	sw := &sweeper{ctx: ctx, deadline: deadline}
	for _, v := range victims {
		if sw.exhausted || !sw.remove(v) {
			res.Remaining = append(res.Remaining, v)
			continue
		}
		res.Reclaimed = append(res.Reclaimed, v)
	}
	res.Unlinks, res.Exhausted = sw.unlinks, sw.exhausted
	if len(res.Remaining) > 0 {
		o.logf("%s: reclaim budget spent after %d removals; %d directories wait for the next doctor", id, sw.unlinks, len(res.Remaining))
	}
	return res, nil
}

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

func diskUsage(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
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
