package home

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs/swap"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/tracing/phase"
)

// foreignTarget refuses a release built for another target than the
// host's: which archive to take instead, and how to inspect this one.
func foreignTarget(id, version, target, host string) error {
	return receipt.Errorf(receipt.CodeConfigInvalid, "%s %s is built for %s, and this machine is %s: install the %s archive (piship install %s picks it from the release set), or inspect this one with piship verify-release",
		id, version, target, host, host, release.SumsName(id, version))
}

// Install installs o.Source and makes it the active version (see the
// package documentation for what it checks and in which order).
func Install(ctx context.Context, o InstallOptions) (_ *InstallResult, err error) {
	o.setDefaults()
	if o.TrustStage != "" {
		// Committed by activate (CommitStaged moves it away), else dropped.
		defer os.RemoveAll(o.TrustStage)
	}
	if o.HostTarget == "" {
		o.HostTarget = distribution.HostTarget().String() // linux-x64-musl on a musl linux
	}
	if o.FreeSpace == nil {
		o.FreeSpace = freeSpace
	}
	if err := o.Homes.Check(); err != nil {
		return nil, err
	}
	home := o.Homes.Install
	// Everything from here to the commit is decided under the maintenance
	// lock, on the receipt read after taking it: a command that committed
	// meanwhile is seen. An update knows its id and locks before it reads
	// its download, so an uninstall that ran meanwhile is reported as such.
	var unlock func()
	if o.ID != "" && o.Update != nil {
		if unlock, err = receipt.TakeMaintenance(ctx, home, o.ID, o.LockWait); err != nil {
			return nil, err
		}
		defer unlock()
		defer func() {
			if err != nil {
				o.removeRefusedDownload(o.ID) // under the lock: runs before unlock
			}
		}()
		if err := o.checkStillInstalled(o.ID); err != nil {
			return nil, err
		}
		if o.Delta != nil {
			// A delta is of no use once tried: repair restores from the
			// archive, which the update keeps when it downloads one.
			d := o.Delta.Path
			defer func() {
				if within(receipt.DownloadsDir(o.Homes.Install, o.ID), d) {
					os.Remove(d)
				}
			}()
		}
	}
	_, ph := phase.Start(ctx, "identify")
	s, err := identify(&o)
	ph.End(err)
	if err != nil {
		return nil, err
	}
	defer s.close()
	for _, w := range s.warnings {
		o.logf("warning: %s", w)
	}
	if s.target != "" && s.target != o.HostTarget {
		return nil, foreignTarget(s.id, s.version, s.target, o.HostTarget)
	}
	id := s.id
	appDir := receipt.AppDir(home, id)
	// A first install checks free space before it takes the lock, whose
	// file is the first thing it writes, so a refusal leaves the home as
	// it was. Any other install checks under the lock once it knows it is
	// neither reusing a release nor up to date.
	spaceChecked := false
	if unlock == nil {
		if _, err := receipt.Read(home, id); errors.Is(err, receipt.ErrNotInstalled) {
			if err := o.checkSpace(s, appDir); err != nil {
				return nil, err
			}
			spaceChecked = true
		}
	}
	if unlock == nil {
		if unlock, err = receipt.TakeMaintenance(ctx, home, id, o.LockWait); err != nil {
			return nil, err
		}
		defer unlock()
	}

	rc, err := readOrNew(home, id)
	if err != nil {
		return nil, err
	}
	if o.Update != nil {
		if err := o.checkStillInstalled(id); err != nil {
			return nil, err
		}
		if err := o.Update(rc.Active); errors.Is(err, ErrUpToDate) {
			o.progressf("%s %s is active: already up to date, nothing installed", id, rc.Active)
			return &InstallResult{ID: id, Version: rc.Active, Target: s.target, Source: s.recorded(), UpToDate: true}, nil
		} else if err != nil {
			return nil, err
		}
	}
	res := &InstallResult{ID: id, Version: s.version, Target: s.target, Source: s.recorded(), Warnings: s.warnings}

	// A recorded release of the same bytes is activated as it stands, once
	// it is checked as doctor checks it: a damaged one (a file, a mode,
	// its record) is not reused but installed again below.
	intact := func(r *receipt.Release) bool {
		damage := o.recordedDamage(ctx, id, r)
		for _, d := range damage {
			res.Damaged = append(res.Damaged, d.String())
		}
		if len(damage) > 0 {
			o.logf("%s %s: the installed copy in %s is damaged (%s): installing it again", id, r.Version, r.Dir, damage[0])
		}
		return len(damage) == 0
	}
	if rec := reusable(home, rc, s, intact); rec != nil {
		if err := checkReusedKey(s, rec); err != nil {
			return nil, err
		}
		if err := checkSignedLock(s, o.LockSHA256, rec.LockSHA256); err != nil {
			return nil, err
		}
		o.progressf("%s %s: reusing %s (same %s)", id, s.version, rec.Dir, map[bool]string{true: "archive digest", false: "inventory"}[s.fromArchive()])
		res.Reused, res.Dir, res.Payload, res.Command, res.ArchiveSHA256 = true, rec.Dir, rec.Payload, rec.Command, rec.ArchiveSHA256
		prev, shims, err := o.activate(ctx, id, *rec)
		if err != nil {
			return nil, err
		}
		res.Previous, res.Shims = prev, shims
		return res, nil
	}

	if !spaceChecked {
		if err := o.checkSpace(s, appDir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(appDir, 0o755); err != nil {
		return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot create %s: %w", appDir, err)
	}

	dest := receipt.VersionDir(home, id, s.version)
	// placeAt is where the release is written: dest, or beside it when a
	// damaged recorded copy of the same bytes stands there (the two then
	// change places in one exchange, so a kill never leaves the receipt
	// naming a directory that is gone).
	placeAt := dest
	// A refusal to replace a damaged copy that runs names what helps.
	damagedHint := func(err error) error {
		if len(res.Damaged) == 0 {
			return err
		}
		return fmt.Errorf("%w; the installed copy is damaged (%s): piship repair %s restores it while it runs when only modes or missing files are damaged", err, res.Damaged[0], id)
	}
	if _, err := os.Lstat(dest); err == nil && len(res.Damaged) > 0 && swap.Supported {
		if err := o.refuseIfRunning(id, s.version, "installing it again"); err != nil {
			return nil, damagedHint(err)
		}
		placeAt = filepath.Join(appDir, receipt.StagingPrefix+s.version+"-"+canon.RandomHex(4))
	} else if err == nil {
		moved, err := o.moveAside(ctx, id, s.version, dest)
		if err != nil {
			return nil, damagedHint(err)
		}
		res.MovedAside = moved
		o.logf("%s %s: moved the directory standing at %s aside to %s", id, s.version, dest, moved)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot inspect %s: %w", dest, err)
	}

	put, in, err := placeAndCheck(ctx, &o, s, placeAt)
	if err != nil && s.kind == sourceDelta {
		// Once: the archive, verified as any download, installs instead.
		res.DeltaFallback = err.Error()
		var ns *source
		if ns, err = o.deltaFallback(ctx, s, placeAt, err); err == nil {
			s = ns
			defer s.close()
			res.Source = s.recorded()
			put, in, err = placeAndCheck(ctx, &o, s, placeAt)
		}
	}
	res.FromDelta = err == nil && s.kind == sourceDelta
	if err == nil && s.target != o.HostTarget {
		// Known only now when the archive's name did not say it.
		err = foreignTarget(id, s.version, s.target, o.HostTarget)
	}
	if err != nil {
		o.discard(ctx, id, s.version, placeAt)
		return nil, err
	}
	if placeAt != dest {
		// The checked copy takes the damaged one's place; the damaged one,
		// now at placeAt and named by nothing, goes as a failed install's.
		if err := o.exchange(ctx, id, placeAt, dest); err != nil {
			o.discard(ctx, id, s.version, placeAt)
			return nil, err
		}
		defer func() {
			if aside, removed, err := o.removeUnreferenced(ctx, id, s.version, placeAt); err == nil && !removed {
				o.progressf("%s %s: the damaged copy is set aside in %s, which `piship doctor` reclaims", id, s.version, aside)
			}
		}()
	}
	channel := o.Channel
	if channel == "" {
		channel = in.channel
	}
	rec := receipt.Release{
		Version: s.version, Dir: dest, Payload: filepath.Join(dest, "payload"), InstalledAt: o.Now().UTC(),
		LockSHA256: in.lockSHA, ArchiveSHA256: put.SHA256, InventorySHA256: in.inventorySHA,
		ReleaseSHA256: in.releaseSHA,
		Target:        s.target, Channel: channel, Command: in.command, Entry: in.entry,
		VerifyAtLaunch: in.verifyAtLaunch, Source: s.recorded(), SearchTools: in.searchTools, Node: in.node,
		Executables: executables(put.Executables), TreeSHA256: treeDigest(dest, put),
	}
	prev, shims, err := o.activate(ctx, id, rec)
	if err != nil {
		// A failed commit (a shim in the way, no space for the launcher
		// or the receipt) leaves the new directory unreferenced too.
		o.discard(ctx, id, s.version, dest)
		return nil, err
	}
	res.Dir, res.Payload, res.Command, res.ArchiveSHA256 = rec.Dir, rec.Payload, rec.Command, put.SHA256
	res.Files, res.Bytes, res.Previous, res.Shims, res.Linked = in.files, put.Bytes, prev, shims, put.Linked
	return res, nil
}

// placeAndCheck writes the release s into dest (place) and checks it
// against its inventory and release rules (checkInstalled), each a phase.
func placeAndCheck(ctx context.Context, o *InstallOptions, s *source, dest string) (*archive.Extracted, *installed, error) {
	what := map[string]string{receipt.SourceArchive: "extract", sourceDelta: "apply delta"}[s.kind]
	pctx, ph := phase.Start(ctx, cmp.Or(what, "copy"))
	put, err := place(pctx, o, s, dest)
	if err == nil {
		ph.SetInt("files", int64(len(put.Files)))
		ph.SetInt("bytes", put.Bytes)
		ph.SetInt("linked", int64(put.Linked))
	}
	ph.End(err)
	if err != nil {
		return nil, nil, err
	}
	_, ph = phase.Start(ctx, "verify")
	in, err := checkInstalled(dest, s, put.Files, put.SHA256, o.LockSHA256)
	ph.End(err)
	return put, in, err
}

// executables is the receipt's record of the executable files: never
// nil, so that a receipt says it recorded modes even when none is.
func executables(paths []string) *[]string {
	out := append([]string{}, paths...)
	slices.Sort(out)
	return &out
}

// ErrUpToDate is what InstallOptions.Update returns when the active
// version is the one the update would install: Install then writes
// nothing and reports UpToDate.
var ErrUpToDate = errors.New("already up to date")

// checkStillInstalled refuses an update of id when there is no receipt
// (an uninstall ran since the update read it), removing what the update
// downloaded into apps/<id>/.downloads, and apps/<id> when nothing else is
// left in it, so that the uninstall stays complete. The caller holds the
// maintenance lock.
func (o *InstallOptions) checkStillInstalled(id string) error {
	home := o.Homes.Install
	_, err := receipt.Read(home, id)
	if !errors.Is(err, receipt.ErrNotInstalled) {
		return nil // installed, or a damaged receipt the install reports itself
	}
	if dl := o.downloaded(); dl != "" && within(receipt.DownloadsDir(home, id), dl) {
		os.Remove(dl)
	}
	dropTrustOfUninstalled(home, id) // the update's refresh may have committed one
	removeEmptyAppDir(receipt.AppDir(home, id))
	return receipt.Errorf(receipt.CodeUpdate, "%s is not installed in %s any more (it was uninstalled while the update ran): nothing was installed; run piship install to install it again", id, home)
}

// within reports whether path lies strictly inside dir.
func within(dir, path string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// discardBudget bounds the removal of a directory an install wrote and
// did not activate; what is left then is doctor's.
const discardBudget = 1500 * time.Millisecond

// discard sets aside the directory an install wrote at dest and failed to
// activate, in one rename to .retained-<version>-<rand>, and removes it
// within discardBudget: nothing references it (the caller holds the
// maintenance lock, and the receipt is checked not to name it), so a
// retry does not pile up copies. What the budget leaves stays set aside
// for doctor.
func (o *InstallOptions) discard(ctx context.Context, id, version, dest string) {
	if _, err := os.Lstat(dest); err != nil {
		return
	}
	home := o.Homes.Install
	rc, err := receipt.Read(home, id)
	if errors.Is(err, receipt.ErrNotInstalled) {
		// A failed first install: nothing of id is left either.
		defer removeEmptyAppDir(receipt.AppDir(home, id))
	}
	if err == nil {
		for _, list := range [][]receipt.Release{rc.Releases, rc.Retained} {
			for _, r := range list {
				if samePath(r.Dir, dest) {
					return // the commit reached the receipt after all
				}
			}
		}
	} else if !errors.Is(err, receipt.ErrNotInstalled) {
		o.logf("%s %s: the unreferenced directory %s stays (cannot read the receipt: %v); the next install moves it aside", id, version, dest, err)
		return
	}
	switch aside, removed, err := o.removeUnreferenced(ctx, id, version, dest); {
	case err != nil:
		o.logf("%s %s: the unreferenced directory %s stays (%v); the next install moves it aside", id, version, dest, err)
	case removed:
		o.logf("%s %s: nothing was activated; what was written is removed", id, version)
	default:
		o.logf("%s %s: nothing was activated; what was written is set aside in %s, which `piship doctor` reclaims", id, version, aside)
	}
}

// removeUnreferenced sets the directory dir, which the receipt does not
// name, aside in one rename to .retained-<version>-<rand> and removes it
// within discardBudget; what the budget leaves stays set aside for doctor.
func (o *InstallOptions) removeUnreferenced(ctx context.Context, id, version, dir string) (aside string, removed bool, err error) {
	aside = filepath.Join(receipt.AppDir(o.Homes.Install, id), receipt.RetainedPrefix+version+"-"+canon.RandomHex(4))
	if err := o.Renamer.Do(dir, aside); err != nil {
		return "", false, err
	}
	sw := &sweeper{ctx: context.WithoutCancel(ctx), deadline: time.Now().Add(discardBudget)}
	return aside, sw.remove(aside), nil
}

func readOrNew(home, id string) (*receipt.Receipt, error) {
	rc, err := receipt.Read(home, id)
	if errors.Is(err, receipt.ErrNotInstalled) {
		return receipt.New(id), nil
	}
	return rc, err
}

// reusable returns a recorded release of s's version holding the same
// bytes, whose directory still stands inside apps/<id>/
// (receipt.CheckInside), or nil.
func reusable(home string, rc *receipt.Receipt, s *source, intact func(*receipt.Release) bool) *receipt.Release {
	var cands []receipt.Release
	if r := rc.Find(s.version); r != nil {
		cands = append(cands, *r)
	}
	for _, r := range rc.Retained {
		if r.Version == s.version {
			cands = append(cands, r)
		}
	}
	for _, r := range cands {
		switch {
		case s.fromArchive() && (s.expectSHA == "" || r.ArchiveSHA256 != s.expectSHA):
			continue
		case !s.fromArchive() && (s.inventorySHA == "" || r.InventorySHA256 != s.inventorySHA):
			continue
		}
		if receipt.CheckInside(home, s.id, &r) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.Payload, "piship.lock")); err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(r.Payload, filepath.FromSlash(r.Entry))); err != nil {
			continue
		}
		if !intact(&r) {
			continue
		}
		return &r
	}
	return nil
}

// recordedDamage checks a recorded release as doctor checks the active
// one (its place; its inventory, lock and release.json against the
// record's digests; every file under the release rules; its record's
// entry and command against its lock; every mode of its directory) and
// returns what it found (nothing when it is intact).
func (o *Options) recordedDamage(ctx context.Context, id string, r *receipt.Release) []DoctorItem {
	rep := &DoctorReport{}
	if !o.checkRelease(ctx, rep, id, "installed", r, true) {
		return rep.Found
	}
	o.checkRecord(rep, id, "installed", r)
	for _, f := range modeFindings([]surfaceEntry{{path: r.Dir, what: fmt.Sprintf("the installed release %s %s", id, r.Version), walk: true, rel: r}}) {
		rep.found(f.code, f.path, "%s", modeAdvice(id, f))
	}
	return rep.Found
}

// archiveLimits are an install's extraction limits: its writers and store
// under the default ceilings.
func (o *InstallOptions) archiveLimits() archive.Limits {
	lim := archive.Limits{Writers: o.Writers}
	if o.Store != nil { // a nil *contentstore.Store would be a non-nil Store
		lim.Store = o.Store
	}
	return lim
}

// place writes the release into dest and says what it wrote: the digests
// (slash paths relative to dest), the bytes, and for an archive its digest
// and the files linked from the store.
func place(ctx context.Context, o *InstallOptions, s *source, dest string) (*archive.Extracted, error) {
	switch s.kind {
	case receipt.SourceArchive:
		if s.archive == nil { // opened by checkSpace, which sized on its declaration
			if err := s.open(o.archiveLimits()); err != nil {
				return nil, err
			}
		}
		o.progressf("%s %s: extracting %s into %s", s.id, s.version, filepath.Base(s.path), dest)
		// The same read the space check sized on: the extraction stops at
		// the first entry or byte beyond that declaration.
		ex, err := s.archive.Extract(ctx, dest)
		s.close()
		if err != nil {
			if _, ok := archive.IsIntegrity(err); ok {
				return nil, receipt.Errorf(receipt.CodeIntegrity, "%s: %w", filepath.Base(s.path), err)
			}
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot extract %s: %w", filepath.Base(s.path), err)
		}
		return ex, nil
	case sourceDelta:
		return placeDelta(ctx, o, s, dest)
	case receipt.SourceRelease:
		o.progressf("%s %s: copying %s into %s", s.id, s.version, s.path, dest)
		d, err := copyTree(ctx, s.tree, s.path, dest, "", o.Writers)
		if err != nil {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot copy %s: %w", s.path, err)
		}
		return &archive.Extracted{Files: d, Bytes: s.tree.bytes, Executables: s.tree.executables("")}, nil
	default:
		o.progressf("%s %s: copying %s into %s", s.id, s.version, s.path, filepath.Join(dest, "payload"))
		if err := os.Mkdir(dest, 0o755); err != nil {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot create %s: %w", dest, err)
		}
		d, err := copyTree(ctx, s.tree, s.path, filepath.Join(dest, "payload"), "payload/", o.Writers)
		if err != nil {
			return nil, receipt.Errorf(receipt.CodeUnavailable, "cannot copy %s: %w", s.path, err)
		}
		return &archive.Extracted{Files: d, Bytes: s.tree.bytes, Executables: s.tree.executables("payload/")}, nil
	}
}

// refuseIfRunning refuses to replace the recorded copy of id version
// (doing what) while a start of that version holds a lease on it.
func (o *Options) refuseIfRunning(id, version, what string) error {
	live, err := receipt.LiveLeasesOf(o.Homes.Install, id, version)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return receipt.Errorf(receipt.CodeUnavailable, "%s %s is running (pid %d on %s): quit it before %s", id, version, live[0].PID, live[0].Host, what)
	}
	return nil
}

// exchange puts the checked copy at staged in the place of the recorded
// copy at dest in one exchange, under the launch gate (no start is
// between reading the receipt and opening the payload).
func (o *InstallOptions) exchange(ctx context.Context, id, staged, dest string) error {
	release, err := receipt.TakeGate(ctx, o.Homes.Install, id, o.GateWait)
	if err != nil {
		return err
	}
	defer release()
	if err := swap.Exchange(staged, dest); err != nil {
		return receipt.Errorf(receipt.CodeUnavailable, "cannot put the new copy %s in the place of %s: %w", staged, dest, err)
	}
	return nil
}

// moveAside renames the directory standing at dest to
// .retained-<version>-<rand>, under the launch gate, and points any record
// of it at its new place in the same gate hold, so a launch always sees a
// receipt and directories that agree. A directory a running launch uses is
// refused.
func (o *Options) moveAside(ctx context.Context, id, version, dest string) (string, error) {
	home := o.Homes.Install
	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return "", err
	}
	defer release()
	rc, err := readOrNew(home, id)
	if err != nil {
		return "", err
	}
	referenced := false
	for _, list := range [][]receipt.Release{rc.Releases, rc.Retained} {
		for i := range list {
			if samePath(list[i].Dir, dest) {
				referenced = true
			}
		}
	}
	if referenced {
		if err := o.refuseIfRunning(id, version, "installing other bytes of the same version"); err != nil {
			return "", err
		}
	}
	aside := filepath.Join(receipt.AppDir(home, id), receipt.RetainedPrefix+version+"-"+canon.RandomHex(4))
	if err := o.Renamer.Do(dest, aside); err != nil {
		return "", receipt.Errorf(receipt.CodeUnavailable, "cannot move %s aside: %w", dest, err)
	}
	if referenced {
		for _, list := range [][]receipt.Release{rc.Releases, rc.Retained} {
			for i := range list {
				if samePath(list[i].Dir, dest) {
					list[i].Dir, list[i].Payload = aside, filepath.Join(aside, "payload")
				}
			}
		}
		rc.UpdatedAt = o.Now().UTC()
		if err := receipt.WriteWith(home, rc, *o.Renamer); err != nil {
			// Put it back: the receipt still names dest.
			if rerr := o.Renamer.Do(aside, dest); rerr != nil {
				return "", fmt.Errorf("%w (and moving %s back failed: %v)", err, aside, rerr)
			}
			return "", err
		}
	}
	return aside, nil
}

// activate commits rec with the install's channel and sequence, once
// BeforeCommit (if any) has succeeded. An update's staged trust store is
// committed first (the archive is accepted by now) and put back when the
// receipt's commit fails.
func (o *InstallOptions) activate(ctx context.Context, id string, rec receipt.Release) (string, []string, error) {
	if o.BeforeCommit != nil {
		if err := o.BeforeCommit(); err != nil {
			return "", nil, err
		}
	}
	if o.TrustStage == "" {
		return o.commit(ctx, id, rec)
	}
	trustDir := receipt.TrustDir(o.Homes.Install, id)
	prev, err := tuf.CommitStaged(trustDir, o.TrustStage)
	if err != nil {
		return "", nil, receipt.Errorf(receipt.CodeUnavailable, "cannot replace the trusted metadata in %s by the verified store %s: %w; nothing was activated, run the update again", trustDir, o.TrustStage, err)
	}
	prevActive, shims, err := o.commit(ctx, id, rec)
	if err != nil {
		if rerr := tuf.RestoreStaged(trustDir, prev); rerr != nil {
			o.logf("%s: cannot put the previous trusted metadata back in %s (%v): the next update verifies the store from its trusted root", id, trustDir, rerr)
		}
		return "", nil, err
	}
	if prev != "" {
		os.RemoveAll(prev)
	}
	return prevActive, shims, nil
}

// removeRefusedDownload removes the archive a refused update downloaded
// into apps/<id>/.downloads (Source), unless a release the receipt
// records came from the same bytes under the same name (it is then that
// release's kept archive, which repair takes). The caller holds the maintenance lock.
func (o *InstallOptions) removeRefusedDownload(id string) {
	home := o.Homes.Install
	if o.Source == "" || !within(receipt.DownloadsDir(home, id), o.Source) {
		return
	}
	named, _ := release.ParseArchiveName(filepath.Base(o.Source))
	if rc, err := receipt.Read(home, id); err == nil && o.SHA256 != "" {
		for _, list := range [][]receipt.Release{rc.Releases, rc.Retained} {
			for _, r := range list {
				if strings.EqualFold(r.ArchiveSHA256, o.SHA256) && r.Version == named.Version {
					return
				}
			}
		}
	}
	if os.Remove(o.Source) == nil {
		o.logf("%s: the refused download %s is removed", id, o.Source)
	}
	os.Remove(o.Source + ".sha256")
	os.Remove(receipt.DownloadsDir(home, id)) // when empty
}

func samePath(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b) || (caseInsensitive() && strings.EqualFold(filepath.Clean(a), filepath.Clean(b)))
}

// commit makes rec the active release under the launch gate: shims first
// (they do not depend on the version), then the receipt, the commit point.
// It returns the version active before and the shims written.
func (o *Options) commit(ctx context.Context, id string, rec receipt.Release) (_ string, _ []string, err error) {
	ctx, ph := phase.Start(ctx, "commit")
	defer func() { ph.End(err) }()
	home := o.Homes.Install
	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return "", nil, err
	}
	defer release()
	rc, err := readOrNew(home, id)
	if err != nil {
		return "", nil, err
	}
	prevActive := rc.Active
	var oldCommand string
	if a := rc.Find(prevActive); a != nil {
		oldCommand = a.Command
	}

	// rec replaces the record of its version; a replaced record whose
	// directory still stands is kept among the retained.
	retained := rc.Retained[:0:0]
	for _, r := range rc.Retained {
		if !samePath(r.Dir, rec.Dir) {
			retained = append(retained, r)
		}
	}
	if old := rc.Find(rec.Version); old != nil && !samePath(old.Dir, rec.Dir) {
		if _, err := os.Stat(old.Dir); err == nil {
			retained = append(retained, *old)
		}
	}
	rc.Retained = retained
	rc.Put(rec)
	if rc.Active != rec.Version {
		rc.Previous = rc.Active
		rc.Active = rec.Version
	}
	rc.RolledBackFrom = ""
	rc.UpdatedAt = o.Now().UTC()

	shims, err := o.writeShims(id, rec.Command, rec.Target)
	if err != nil {
		return "", nil, err
	}
	if err := receipt.WriteWith(home, rc, *o.Renamer); err != nil {
		return "", nil, err
	}
	if oldCommand != "" && oldCommand != rec.Command {
		o.removeShims(id, oldCommand)
	}
	o.progressf("%s %s is active (previous: %s)", id, rec.Version, cmp.Or(rc.Previous, "none"))
	return prevActive, shims, nil
}
