package home

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/contentstore"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/footprint/report"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing/phase"
)

// Doctor checks an installation and repairs what it can (see the package
// documentation, "Doctor"): the active release in full (inside
// apps/<id>/; inventory, lock and release.json against the digests the
// receipt recorded; every payload file against the inventory; no unsafe
// mode), the previous release's lock, the command shim(s) (a deleted shim
// is recreated, a modified or outdated one rewritten) and the launch gate
// (a directory there is removed or set aside); it removes dead leases and
// the temporary receipts a killed commit left (receipts/.<id>.json.tmp-*) and
// reclaims obsolete versions and .retained-* directories within budget
// (DefaultReclaimBudget when 0), never the active or previous version nor
// one a live lease holds. The active release is held to the release rules
// of stages/release on every file of its directory, as install applied
// them, once the three files the receipt vouches for are the ones
// installed (one damage, one finding). What it finds is reported (DoctorReport.Found),
// apart from what it did (Repaired, Reclaimed), not returned as an error:
// an error means doctor could not run (a lock held, an unreadable home).
func Doctor(ctx context.Context, o Options, id string, budget time.Duration) (*DoctorReport, error) {
	start := time.Now()
	unlock, err := o.maintain(ctx, id)
	if err != nil {
		return nil, err
	}
	home := o.Homes.Install
	defer unlock()
	rep := &DoctorReport{Schema: DoctorSchema, ID: id}
	gateOK := repairGate(rep, home, id)
	rc, err := receipt.Read(home, id)
	notInstalled := errors.Is(err, receipt.ErrNotInstalled)
	if notInstalled {
		_, appErr := os.Stat(receipt.AppDir(home, id))
		_, trustErr := os.Lstat(receipt.TrustDir(home, id))
		if appErr != nil && trustErr != nil && len(rep.Found) == 0 {
			return nil, err
		}
		// No receipt, but apps/<id> or trust/<id>/ stands: a failed first
		// install's leftovers, or the trusted metadata of an uninstall
		// killed after its receipt went. Nothing to verify; reclaim them.
		rc, err = receipt.New(id), nil
	}
	if receipt.CodeOf(err) == receipt.CodeConfigInvalid {
		rep.found(DoctorReceiptInvalid, receipt.ReceiptPath(home, id), "%v: nothing else was checked or reclaimed; reinstall %s (piship install) to write a new receipt", err, id)
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	rep.Active, rep.Previous, rep.NotInstalled = rc.Active, rc.Previous, notInstalled
	a := rc.Find(rc.Active)
	switch {
	case rep.NotInstalled:
		// Nothing to verify: only leftovers to reclaim, below.
	case a == nil:
		rep.found(DoctorNoActive, receipt.ReceiptPath(home, id), "%s has no active release: install it", id)
	default:
		_, ph := phase.Start(ctx, "verify")
		rep.Verified = o.checkRelease(ctx, rep, id, "active", a, true)
		recordOK := receipt.CheckInside(home, id, a) != nil || o.checkRecord(rep, id, "active", a)
		rep.Verified = rep.Verified && recordOK
		if recordOK && a.Node != nil {
			// Starts check the pinned Node by fingerprint; doctor hashes it.
			if msg := launch.CheckNode(a); msg != "" {
				rep.found(DoctorNodeModified, filepath.Join(a.Payload, filepath.FromSlash(a.Node.Path)), "%s %s ships Node %s: %s; a start refuses it: run piship repair %s", id, a.Version, a.Node.Version, msg, id)
				rep.Verified = false
			}
		}
		ph.End(nil)
		if recordOK {
			// Not for a record whose command is not the lock's: its shim
			// would be the edited command's (repair restores both).
			o.checkShims(rep, id, a)
		}
	}
	if p := rc.Find(rc.Previous); p != nil {
		if o.checkRelease(ctx, rep, id, "previous", p, false) {
			o.checkRecord(rep, id, "previous", p)
		}
	}
	if !rep.NotInstalled && !o.checkModes(rep, id, rc) {
		rep.Verified = false
	}
	if a != nil && receipt.CheckInside(home, id, a) == nil {
		rep.Trust = trustState(rc)
		rep.PiPackages = piPackageLines(a.Payload)
		o.checkSearchTools(rep, id, a)
	} else {
		rep.Trust = TrustState{}
	}
	if _, err := os.Stat(receipt.TrustPath(home, id)); err == nil {
		rep.TrustFile = receipt.TrustPath(home, id)
	}
	if !rep.NotInstalled {
		// Not for leftovers of a distribution that is not installed: the
		// reclaim below removes their trust/<id>/.
		checkTUF(rep, home, id, o.Now())
	}
	if !gateOK {
		// Reclaiming needs the gate: it waits for the next doctor.
		return rep, nil
	}
	for i, f := range rep.Found {
		if f.Code == DoctorPayloadOutside {
			// The receipt is not to be trusted about what to keep: it
			// could name a copy elsewhere so that the real directory looks
			// obsolete. Nothing is reclaimed until it is reinstalled.
			rep.Found[i].Detail += " (nothing was reclaimed: the receipt does not say what apps/" + id + " must keep)"
			return rep, nil
		}
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
		g, err := o.Store.GC(start.Add(budget), contentstore.Grace)
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

// checkSearchTools warns when the active Pi release's starts defer the
// search tools' download (the launcher's own test, on doctor's
// environment).
func (o *Options) checkSearchTools(rep *DoctorReport, id string, a *receipt.Release) {
	if !launch.IsPi(a.Entry) {
		return
	}
	if len(a.SearchTools) > 0 {
		o.checkPlacedSearchTools(rep, id, a)
		return
	}
	bin, err := launch.AgentBinDir(o.Getenv)
	if err != nil || !launch.ToolDownloadsDeferred(o.Getenv, bin) {
		return
	}
	rep.Warnings = append(rep.Warnings, DoctorItem{Code: DoctorToolDownloadsDeferred, Path: bin,
		Detail: fmt.Sprintf("%s %s bundles no search tools (fd, rg), and neither is in Pi's agent bin directory or on PATH: each start runs Pi offline (PI_OFFLINE=1) so that it does not wait for Pi's download; install fd and ripgrep, release with a search_tools block, or set %s=1 to let Pi download them", id, a.Version, launch.EnvAllowToolDownload)})
}

// checkPlacedSearchTools warns of the bundled tools a start would place
// again, or that Pi takes from elsewhere (the launcher's own rule, read
// only: doctor changes nothing in the agent bin directory).
func (o *Options) checkPlacedSearchTools(rep *DoctorReport, id string, a *receipt.Release) {
	_, findings, err := launch.CheckSearchTools(a, o.Getenv)
	if err != nil {
		return // no agent directory to look in: Pi fails the same way at its start
	}
	for _, f := range findings {
		item := DoctorItem{Code: DoctorSearchToolStale, Path: f.Path,
			Detail: fmt.Sprintf("%s %s bundles %s, and this copy is missing or changed since a start placed it: the next start of %s places the bundled one again", id, a.Version, f.Name, id)}
		if f.Foreign {
			item = DoctorItem{Code: DoctorSearchToolForeign, Path: f.Path,
				Detail: fmt.Sprintf("%s %s bundles %s, but this file is another one that piship did not place (Pi's download or yours): Pi uses it instead; remove it to use the bundled %s", id, a.Version, f.Name, f.Name)}
		}
		rep.Warnings = append(rep.Warnings, item)
	}
}

// repairGate finds a launch gate that is not a file (a directory stands
// at receipts/.<id>.launch.lock, so no launch or commit can take it) and
// removes it when empty or sets it aside beside itself. It reports
// whether the gate can be taken now.
func repairGate(rep *DoctorReport, home, id string) bool {
	gate := receipt.GatePath(home, id)
	fi, err := os.Lstat(gate)
	if err != nil || fi.Mode().IsRegular() {
		return true // missing (created when taken) or a file
	}
	rep.found(DoctorLaunchLockInvalid, gate, "the launch gate is a %s, not a file: no launch, install or rollback of %s could take it", kindOf(fi.Mode()), id)
	if fi.IsDir() && os.Remove(gate) == nil {
		rep.repaired(DoctorLaunchLockInvalid, gate, "removed (it was an empty directory)")
		return true
	}
	aside := gate + ".aside-" + canon.RandomHex(4)
	if err := os.Rename(gate, aside); err != nil {
		rep.Found[len(rep.Found)-1].Detail += fmt.Sprintf("; it could not be set aside (%v): remove it by hand", err)
		return false
	}
	rep.repaired(DoctorLaunchLockInvalid, gate, "set aside to %s (it was not empty: look at it, then remove it)", aside)
	return true
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}

// checkRelease checks one release record and reports what is wrong with
// it: its place (receipt.CheckInside, before anything of it is read), its
// inventory, lock and release.json against the receipt's digests, and in
// full (every payload file against the inventory, and every mode) for
// the active release. It returns whether nothing was found.
func (o *Options) checkRelease(ctx context.Context, rep *DoctorReport, id, role string, r *receipt.Release, full bool) bool {
	home := o.Homes.Install
	n := len(rep.Found)
	what := fmt.Sprintf("%s %s %s", role, id, r.Version)
	if err := receipt.CheckInside(home, id, r); err != nil {
		rep.found(DoctorPayloadOutside, r.Payload, "%s: %v", what, err)
		return false
	}
	digest := func(code, path, want, name string) {
		if want == "" {
			return // an older receipt recorded none
		}
		got, err := cache.HashFile(path)
		switch {
		case err != nil:
			fix := fmt.Sprintf("reinstall %s %s", id, r.Version)
			if full {
				fix = fmt.Sprintf("run piship repair %s (or reinstall %s %s)", id, id, r.Version)
			}
			rep.found(code, path, "%s: cannot read %s (%v): %s", what, name, err, fix)
		case !strings.EqualFold(got, want):
			fix := fmt.Sprintf("reinstall %s %s", id, r.Version)
			if full {
				fix = fmt.Sprintf("run piship repair %s (or reinstall %s %s)", id, id, r.Version)
			}
			rep.found(code, path, "%s: %s is not the one installed (sha256 %s, the receipt recorded %s): %s", what, name, got, want, fix)
		}
	}
	lock := filepath.Join(r.Payload, distribution.LockFileName)
	if !full {
		// The rollback target: its lock, what a rollback activates.
		if _, err := os.Stat(lock); err != nil {
			rep.found(DoctorPreviousIncomplete, r.Payload, "%s is no longer complete (%v): a rollback would fail", what, err)
			return false
		}
		digest(DoctorLockModified, lock, r.LockSHA256, "payload/"+distribution.LockFileName)
		if len(rep.Found) > n {
			rep.Found[n].Detail += "; a rollback to it would fail"
		}
		return len(rep.Found) == n
	}
	digest(DoctorLockModified, lock, r.LockSHA256, "payload/"+distribution.LockFileName)
	digest(DoctorInventoryModified, filepath.Join(r.Payload, filepath.FromSlash(payload.InventoryName)), r.InventorySHA256, "payload/"+payload.InventoryName)
	digest(DoctorReleaseModified, filepath.Join(r.Dir, "release.json"), r.ReleaseSHA256, "release.json")
	// Every file of the version directory under the release rules, as
	// install applied them (the payload against its inventory included),
	// unless one of the three files the receipt vouches for was named:
	// the rules start from those (checksums.txt and release.json bind the
	// inventory, the inventory every payload file, the lock among them), so
	// they would only name it again, and reinstalling is the remedy anyway.
	if len(rep.Found) == n {
		if err := checkRecorded(ctx, id, r); err != nil {
			code := DoctorReleaseInvalid
			if e, ok := release.AsError(err); ok && e.Rule == release.RuleInventory {
				code = DoctorPayloadModified
			}
			msg := err.Error()
			if c, ok := err.(errcode.Coder); ok && c.ErrorCode() == receipt.CodeIntegrity {
				msg = strings.TrimPrefix(msg, c.ErrorCode()+": ") // the finding has a code of its own
			}
			rep.found(code, r.Dir, "%s: %s; run piship repair %s to restore the release's files", what, msg, id)
		}
	}
	return len(rep.Found) == n
}

// checkModes reports every mode of the run surface (runSurface: the one
// list of what decides what runs) that piship does not write. It returns
// whether it found none.
func (o *Options) checkModes(rep *DoctorReport, id string, rc *receipt.Receipt) bool {
	found := modeFindings(o.runSurface(id, rc))
	for _, f := range found {
		rep.found(f.code, f.path, "%s", modeAdvice(id, f))
	}
	return len(found) == 0
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

// piPackageLines reads the footprint report of a payload: its two lines,
// or none when the release vendors no Pi packages. A report that does not
// read says so in the first line (the inventory check reports the damage).
func piPackageLines(payload string) []string {
	var r report.Report
	err := canon.ReadJSON(filepath.Join(payload, filepath.FromSlash(report.Name)), &r)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return []string{}
	case err != nil:
		return []string{fmt.Sprintf("Pi packages: %s does not read: %v", report.Name, err)}
	}
	return r.Lines()
}
