package home

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// UninstallResult says what an uninstall removed and kept.
type UninstallResult struct {
	Removed []string
	Kept    []string
}

// Uninstall removes id: refused while a live runtime lease exists
// (CONFIG_UNAVAILABLE naming the pid). Under the launch gate it checks the
// leases and removes the receipt, so from then on nothing is installed and
// no launch can start; then it removes the command shims (only files that
// are piship shims of id) and apps/<id> (renamed to
// apps/.<id>.uninstalling-<rand> first, then removed) and the trusted TUF
// metadata trust/<id>/ (likewise, to trust/.<id>.uninstalling-<rand>).
// The state directory (<state>/<id>) and the channel trust state
// trust/<id>.json are kept unless purge, which also removes the lock files. Nothing installed and nothing to purge is
// CONFIG_UNAVAILABLE.
func Uninstall(ctx context.Context, o Options, id string, purge bool) (*UninstallResult, error) {
	unlock, err := o.maintain(ctx, id)
	if err != nil {
		return nil, err
	}
	home := o.Homes.Install
	res := &UninstallResult{}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()

	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return nil, err
	}
	live, err := receipt.LiveLeases(home, id)
	if err != nil {
		release()
		return nil, err
	}
	if len(live) > 0 {
		release()
		var who []string
		for _, l := range live {
			who = append(who, l.String())
		}
		return nil, receipt.Errorf(receipt.CodeUnavailable, "%s is running (%s): quit it, then uninstall", id, strings.Join(who, "; "))
	}
	rc, err := receipt.Read(home, id)
	installed := err == nil
	if err != nil && !errors.Is(err, receipt.ErrNotInstalled) {
		// A damaged receipt does not stop an uninstall.
		o.logf("warning: %v", err)
	}
	if err := os.Remove(receipt.ReceiptPath(home, id)); err == nil {
		res.Removed = append(res.Removed, receipt.ReceiptPath(home, id))
		installed = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		release()
		return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot remove the receipt of %s: %w", id, err)
	}
	release()

	commands := map[string]bool{}
	if rc != nil {
		for _, r := range append(append([]receipt.Release(nil), rc.Releases...), rc.Retained...) {
			commands[r.Command] = true
		}
	}
	if rc == nil {
		// No readable receipt: find the shims of id by their marker.
		if entries, err := os.ReadDir(o.Homes.Bin); err == nil {
			for _, e := range entries {
				if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() <= 8<<10 {
					commands[strings.TrimSuffix(e.Name(), ".cmd")] = true
				}
			}
		}
	}
	for c := range commands {
		if c != "" {
			res.Removed = append(res.Removed, o.removeShims(id, c)...)
		}
	}
	// apps/<id> is renamed away in one step, then removed: an update
	// still downloading into apps/<id>/.downloads then either fails or
	// writes into a new apps/<id>, which its install removes on finding
	// no receipt; it never makes the removal fail half way. What an
	// interrupted uninstall left renamed is removed too.
	app := receipt.AppDir(home, id)
	if _, err := os.Lstat(app); err == nil {
		installed = true
		gone := filepath.Join(filepath.Dir(app), receipt.UninstallingPrefix(id)+canon.RandomHex(4))
		if err := o.Renamer.Do(app, gone); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %w", app, err)
		}
		if err := os.RemoveAll(gone); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s (renamed from %s): %w; run piship uninstall %s again", gone, app, err, id)
		}
		res.Removed = append(res.Removed, app)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(app), receipt.UninstallingPrefix(id)+"*"))
	for _, p := range left {
		installed = true
		if err := os.RemoveAll(p); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %w", p, err)
		}
		res.Removed = append(res.Removed, p)
	}
	// trust/<id>/, the trusted TUF metadata, goes with the installation,
	// purge or not: a reinstall starts again from the root its lock pins,
	// and a store left behind would be trusted by an unrelated later
	// install of the same id. Renamed away in one step like apps/<id>, so
	// a kill leaves either the whole store (the retry removes it) or a
	// trust/.<id>.uninstalling-* that the retry or doctor removes, never a
	// half store where an update reads.
	tdir := receipt.TrustDir(home, id)
	if fi, err := os.Lstat(tdir); err == nil && fi.IsDir() {
		installed = true
		gone := filepath.Join(filepath.Dir(tdir), receipt.UninstallingPrefix(id)+canon.RandomHex(4))
		if err := o.Renamer.Do(tdir, gone); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %w; run piship uninstall %s again", tdir, err, id)
		}
		if err := os.RemoveAll(gone); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s (renamed from %s): %w; run piship uninstall %s again", gone, tdir, err, id)
		}
		res.Removed = append(res.Removed, tdir)
	}
	tleft, _ := filepath.Glob(filepath.Join(filepath.Dir(tdir), receipt.UninstallingPrefix(id)+"*"))
	stages := tuf.StaleStages(tdir) // a killed update's copy of the store
	tleft = append(tleft, stages...)
	for _, p := range tleft {
		installed = true
		if err := os.RemoveAll(p); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %w; run piship uninstall %s again", p, err, id)
		}
		res.Removed = append(res.Removed, p)
	}
	state, trust := o.Homes.StateDir(id), receipt.TrustPath(home, id)
	purged := false
	for _, p := range []string{state, trust} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if !purge {
			res.Kept = append(res.Kept, p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return res, receipt.Errorf(receipt.CodeUnavailable, "cannot remove %s: %w", p, err)
		}
		res.Removed = append(res.Removed, p)
		purged = true
	}
	if purge {
		unlock()
		locked = false
		for _, p := range []string{receipt.GatePath(home, id), receipt.MaintenancePath(home, id)} {
			if os.Remove(p) == nil {
				res.Removed = append(res.Removed, p)
			}
		}
	}
	if !installed && !purged {
		return res, receipt.Errorf(receipt.CodeUnavailable, "%s is not installed in %s", id, home)
	}
	o.progressf("%s uninstalled", id)
	return res, nil
}
