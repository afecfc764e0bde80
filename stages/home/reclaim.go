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

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// DefaultReclaimBudget is doctor's time budget for removing obsolete
// versions (PISHIP_RECLAIM_BUDGET_MS, which the caller reads).
const DefaultReclaimBudget = 5 * time.Second

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
		notInstalled := errors.Is(err, receipt.ErrNotInstalled)
		if notInstalled {
			rc, err = receipt.New(id), nil
		}
		if err != nil {
			return err
		}
		victims = append(victims, o.trustLeftovers(id, notInstalled)...)
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
		o.logf("%s: reclaim budget spent after %s; %s for the next doctor", id, canon.Count(sw.unlinks, "removal"), canon.Count(len(res.Remaining), "directory waits", "directories wait"))
	}
	return res, nil
}

// trustLeftovers is what of trust/ reclaim removes: what a killed
// uninstall left renamed (trust/.<id>.uninstalling-*), what a killed
// update left of its new store (trust/.<id>.updating-*) and, when id is not
// installed (no receipt), trust/<id>/ itself, renamed away first so that
// a kill while removing it never leaves a half store at the path an update
// reads. The caller holds the maintenance lock; an update running beside
// it writes only its own stage, which is not stale while it runs.
func (o *Options) trustLeftovers(id string, notInstalled bool) []string {
	dir := receipt.TrustDir(o.Homes.Install, id)
	if notInstalled {
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			gone := filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix(id)+canon.RandomHex(4))
			o.Renamer.Do(dir, gone) // a failure leaves it for the next doctor
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix(id)+"*"))
	stages := tuf.StaleStages(dir) // a killed update's copy of the store
	return append(left, stages...)
}
