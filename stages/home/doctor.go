package home

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/contentstore"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/footprint/report"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/tracing/phase"
)

// DefaultReclaimBudget is doctor's time budget for removing obsolete
// versions (PISHIP_RECLAIM_BUDGET_MS, which the caller reads).
const DefaultReclaimBudget = 5 * time.Second

// reclaimCheckEvery is how many unlinks pass between budget checks.
const reclaimCheckEvery = 64

// DoctorSchema names the format of the doctor report (`piship doctor
// --json`).
const DoctorSchema = "piship-doctor/v1"

// The codes of what doctor finds (DoctorReport.Found) and does
// (DoctorReport.Repaired). Every found item is damage: doctor then ends
// with INTEGRITY_FAILED (exit 1), whether it repaired it or not. The two
// *_OUTDATED codes are routine refreshes: they appear in Repaired only.
const (
	DoctorReceiptInvalid     = "RECEIPT_INVALID"     // the receipt does not parse; nothing else is checked
	DoctorNoActive           = "NO_ACTIVE_RELEASE"   // the receipt names no active release
	DoctorPayloadOutside     = "PAYLOAD_OUTSIDE"     // a record's directory or payload is outside apps/<id>/
	DoctorPayloadModified    = "PAYLOAD_MODIFIED"    // the payload does not match its inventory
	DoctorInventoryModified  = "INVENTORY_MODIFIED"  // the inventory is not the one installed (receipt digest)
	DoctorLockModified       = "LOCK_MODIFIED"       // payload/piship.lock is not the one installed
	DoctorReleaseModified    = "RELEASE_MODIFIED"    // release.json is not the one installed
	DoctorReleaseInvalid     = "RELEASE_INVALID"     // the version directory breaks a release rule (stages/release) other than the inventory's
	DoctorModeUnsafe         = "MODE_UNSAFE"         // setuid, setgid, sticky, or writable by group or others, anywhere of what decides what runs (runSurface)
	DoctorModeModified       = "MODE_MODIFIED"       // an executable bit added or removed since install (receipts that record the executables)
	DoctorPreviousIncomplete = "PREVIOUS_INCOMPLETE" // the rollback target lost its lock
	DoctorShimMissing        = "SHIM_MISSING"        // the command shim was deleted (recreated)
	DoctorShimModified       = "SHIM_MODIFIED"       // the shim is not what piship writes (rewritten)
	DoctorShimForeign        = "SHIM_FOREIGN"        // a file that is not a piship shim of id stands there (left alone)
	DoctorShimOutdated       = "SHIM_OUTDATED"       // routine: a piship shim naming another launcher or homes (rewritten)
	DoctorLauncherModified   = "LAUNCHER_MODIFIED"   // the kept launcher is not what piship wrote (replaced)
	DoctorLauncherOutdated   = "LAUNCHER_OUTDATED"   // routine: piship was updated since the launcher was kept (replaced)
	DoctorLaunchLockInvalid  = "LAUNCH_LOCK_INVALID" // receipts/.<id>.launch.lock is not a file (removed or set aside)
	DoctorTrustInvalid       = "TRUST_INVALID"       // a file of trust/<id>/ does not read or parse as its TUF role (not repaired: the next update re-fetches it)
)

// The codes of doctor's warnings (DoctorReport.Warnings): not damage, so
// they leave the exit code alone, but what the publisher must act on
// before updates stop.
const (
	DoctorTrustExpiring = "TRUST_EXPIRING" // the trusted timestamp or snapshot expires within TrustWarnWithin
	DoctorTrustExpired  = "TRUST_EXPIRED"  // the trusted timestamp or snapshot has expired
	// DoctorToolDownloadsDeferred: a Pi release that bundles no search
	// tool, with none in Pi's agent bin directory or on PATH: its starts
	// run Pi offline (launch.ToolDownloadsDeferred).
	DoctorToolDownloadsDeferred = "TOOL_DOWNLOADS_DEFERRED"
	// DoctorSearchToolStale: a bundled search tool is missing from Pi's
	// agent bin directory or changed since a start placed it; the next
	// start places it again (launch.CheckSearchTools).
	DoctorSearchToolStale = "SEARCH_TOOL_STALE"
	// DoctorSearchToolForeign: the agent bin directory holds another fd
	// or rg that piship did not place (Pi's download, the user's); Pi
	// uses it instead of the bundled one, and starts leave it alone.
	DoctorSearchToolForeign = "SEARCH_TOOL_FOREIGN"
)

// TrustWarnWithin is how far ahead doctor warns of a timestamp or
// snapshot expiry: a week, half the default timestamp lifetime
// (stages/tuf's DefaultExpiry), so a weekly refresh that stopped is
// noticed before updates are refused.
const TrustWarnWithin = 7 * 24 * time.Hour

// DoctorItem is one thing doctor found or did: a code above, the path it
// is about and what happened, in words.
type DoctorItem struct {
	Code   string `json:"code" cty:"code"`
	Path   string `json:"path" cty:"path"`
	Detail string `json:"detail" cty:"detail"`
}

// String is the one-line form doctor prints.
func (i DoctorItem) String() string {
	if i.Path == "" {
		return i.Code + ": " + i.Detail
	}
	return i.Code + " " + i.Path + ": " + i.Detail
}

// DoctorReport is what Doctor found and did. It travels as the doctor
// stage's `report` output (the cty tags) and is printed by `piship doctor
// --json` (the json tags: schema piship-doctor/v1, camelCase keys, every
// list an array, never null).
type DoctorReport struct {
	Schema   string `json:"schema" cty:"schema"`
	ID       string `json:"id" cty:"id"`
	Active   string `json:"active" cty:"active"`
	Previous string `json:"previous" cty:"previous"`
	// NotInstalled is set when id has no receipt, only apps/<id> (what a
	// failed first install set aside): doctor reclaimed what it could and
	// verified nothing.
	NotInstalled bool `json:"notInstalled" cty:"not_installed"`
	// Verified is set when the active release passed every check: inside
	// apps/<id>, its inventory, lock and release.json the files the
	// receipt recorded, every payload file the inventory's, no unsafe mode.
	Verified bool `json:"verified" cty:"verified"`
	// Found is the damage doctor found (empty when healthy); Repaired what
	// it did about it, and the routine refreshes (*_OUTDATED). A found
	// item without a repair needs what its detail says (a reinstall).
	Found    []DoctorItem `json:"found" cty:"found"`
	Repaired []DoctorItem `json:"repaired" cty:"repaired"`
	// Reclaimed lists what was removed (directories, dead leases);
	// Remaining what the budget left for the next doctor.
	Reclaimed []string `json:"reclaimed" cty:"reclaimed"`
	Remaining []string `json:"remaining" cty:"remaining"`
	// Leases are the live runtime leases.
	Leases []DoctorLease `json:"leases" cty:"leases"`
	// DiskBytes is the size of apps/<id> after reclaiming.
	DiskBytes int64 `json:"diskBytes" cty:"disk_bytes"`
	// PiPackages are the active release's two footprint lines (its
	// vendored Pi packages' closures and shared dependencies, from
	// metadata/pi-package-footprint.json), empty when it vendors none.
	PiPackages []string `json:"piPackages" cty:"pi_packages"`
	// Trust is what updates of the active release trust: the channel,
	// source and pinned initial TUF root its lock records.
	Trust TrustState `json:"trust" cty:"trust"`
	// TrustFile is trust/<id>.json when it exists, else "".
	TrustFile string `json:"trustFile" cty:"trust_file"`
	// TUF is the trusted TUF metadata in trust/<id>/ (Dir "" and no roles
	// when that directory does not exist).
	TUF TUFTrust `json:"tuf" cty:"tuf"`
	// Warnings are what needs attention but is not damage (TRUST_EXPIRING,
	// TRUST_EXPIRED): they do not make doctor fail.
	Warnings []DoctorItem `json:"warnings" cty:"warnings"`
	// Store is what the store's GC did (absent without a store).
	Store *StoreReport `json:"store,omitempty" cty:"store"`
}

// Damaged reports whether doctor found anything wrong.
func (r DoctorReport) Damaged() bool { return len(r.Found) > 0 }

func (r *DoctorReport) found(code, path, format string, args ...any) {
	r.Found = append(r.Found, DoctorItem{Code: code, Path: path, Detail: fmt.Sprintf(format, args...)})
}

func (r *DoctorReport) repaired(code, path, format string, args ...any) {
	r.Repaired = append(r.Repaired, DoctorItem{Code: code, Path: path, Detail: fmt.Sprintf(format, args...)})
}

// JSON is the report as `piship doctor --json` prints it (indented, one
// line per field, a newline at the end). Every list is an array, empty
// when there is nothing in it, whether the report came from Doctor or
// travelled as a stage output.
func (r DoctorReport) JSON() ([]byte, error) {
	r.Schema = DoctorSchema
	for _, l := range []*[]string{&r.Reclaimed, &r.Remaining, &r.PiPackages} {
		if *l == nil {
			*l = []string{}
		}
	}
	for _, l := range []*[]DoctorItem{&r.Found, &r.Repaired, &r.Warnings} {
		if *l == nil {
			*l = []DoctorItem{}
		}
	}
	if r.Leases == nil {
		r.Leases = []DoctorLease{}
	}
	if r.TUF.Roles == nil {
		r.TUF.Roles = []TUFRole{}
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
	Dir       string `json:"dir" cty:"dir"`
	Objects   int    `json:"objects" cty:"objects"`     // objects looked at
	Removed   int    `json:"removed" cty:"removed"`     // objects nothing linked any more, past the grace
	Bytes     int64  `json:"bytes" cty:"bytes"`         // bytes those held
	Exhausted bool   `json:"exhausted" cty:"exhausted"` // the budget ran out first
	Problem   string `json:"problem" cty:"problem"`
}

// TrustState is the update trust of an installation.
type TrustState struct {
	// Channel, Source and RootSHA256 (the pinned initial TUF root) come
	// from the active release's lock (its updates block); empty when it
	// has none, and then updates are refused.
	Channel    string `json:"channel" cty:"channel"`
	Source     string `json:"source" cty:"source"`
	RootSHA256 string `json:"rootSha256" cty:"root_sha256"`
	// Problem says why the lock could not be read.
	Problem string `json:"problem" cty:"problem"`
}

func trustState(rc *receipt.Receipt) TrustState {
	ts := TrustState{}
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
		ts.Channel, ts.Source, ts.RootSHA256 = u.Channel, u.Source, u.RootSHA256
	}
	return ts
}

// TUFTrust is the trusted TUF metadata of an installation
// (stages/tuf.ReadTrustState of trust/<id>/).
type TUFTrust struct {
	// Dir is trust/<id>/ when it exists, else "".
	Dir string `json:"dir" cty:"dir"`
	// Roles are root, timestamp, snapshot and targets as far as they were
	// read (a role not fetched yet is missing).
	Roles []TUFRole `json:"roles" cty:"roles"`
}

// TUFRole is one trusted role: its version and expiry (RFC 3339, UTC).
type TUFRole struct {
	Role    string `json:"role" cty:"role"`
	Version int64  `json:"version" cty:"version"`
	Expires string `json:"expires" cty:"expires"`
}

// String is the one-line form doctor prints.
func (t TUFTrust) String() string {
	parts := make([]string, 0, len(t.Roles))
	for _, r := range t.Roles {
		parts = append(parts, fmt.Sprintf("%s %d (expires %s)", r.Role, r.Version, r.Expires))
	}
	if len(parts) == 0 {
		return t.Dir + ": no trusted root yet (the next update starts from the root the lock pins)"
	}
	return t.Dir + ": " + strings.Join(parts, ", ")
}

// checkTUF reports trust/<id>/ when it exists: each trusted role's
// version and expiry, a warning for a timestamp or snapshot that expires
// within TrustWarnWithin or has expired, and TRUST_INVALID for a file
// that does not read or parse. Doctor repairs none of it: the next update
// verifies the store against the pinned root again and re-fetches what
// does not fit, and only the publisher can renew an expiry.
func checkTUF(rep *DoctorReport, home, id string, now time.Time) {
	dir := receipt.TrustDir(home, id)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return // today's installations: nothing to say
	}
	rep.TUF.Dir = dir
	st, err := tuf.ReadTrustState(dir)
	for _, r := range st.Roles {
		rep.TUF.Roles = append(rep.TUF.Roles, TUFRole{Role: r.Role, Version: r.Version, Expires: r.Expires.UTC().Format(time.RFC3339)})
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No root.json yet: what a first update killed before go-tuf wrote
		// it leaves. Not damage: the next update starts from the pinned
		// root, as it would without the directory.
		return
	case err != nil:
		msg := err.Error()
		if te, ok := err.(*tuf.Error); ok {
			msg = te.Msg // the finding has a code of its own
		}
		rep.found(DoctorTrustInvalid, dir, "%s; doctor does not repair trust metadata: run piship update %s, which re-fetches it and verifies it from the trusted root (or, if root.json is the damaged one, remove %s so the next update starts from the root the lock pins)", msg, id, dir)
	}
	for _, r := range st.ExpiringWithin(now, TrustWarnWithin) {
		code, verb := DoctorTrustExpiring, "expires"
		if !r.Expires.After(now) {
			code, verb = DoctorTrustExpired, "expired"
		}
		rep.Warnings = append(rep.Warnings, DoctorItem{Code: code, Path: filepath.Join(dir, r.Role+".json"),
			Detail: fmt.Sprintf("the trusted %s (version %d) %s on %s: updates of %s are refused once it has expired until the publisher refreshes the repository (piship repo refresh) and piship update %s fetches the new one", r.Role, r.Version, verb, r.Expires.UTC().Format(time.RFC3339), id, id)})
	}
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
		fmt.Fprintf(&b, "channel %s from %s, initial root %s", t.Channel, t.Source, t.RootSHA256)
	}
	return b.String()
}

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
	aside := gate + ".aside-" + receipt.RandomHex(4)
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

// UnsafeMode says what is unsafe about the mode of an installed file or
// directory ("" when nothing): the one rule doctor checks modes by.
func UnsafeMode(m fs.FileMode) string {
	var why []string
	if m&fs.ModeSetuid != 0 {
		why = append(why, "setuid")
	}
	if m&fs.ModeSetgid != 0 {
		why = append(why, "setgid")
	}
	if m&fs.ModeSticky != 0 {
		why = append(why, "sticky")
	}
	// Windows has no group or other bits: Go reports every writable file
	// as 0666 there.
	if m&fs.ModeSymlink == 0 && m.Perm()&0o022 != 0 && runtime.GOOS != "windows" {
		why = append(why, "writable by group or others")
	}
	return strings.Join(why, ", ")
}

// checkShims checks the command shim(s) of the active release r: a
// missing one is recreated, one that is not what piship writes (though it
// carries piship's marker) rewritten, both reported as found and
// repaired; one that piship wrote for another launcher or homes is
// rewritten as a routine refresh; a file that is not a piship shim of id
// is reported and left alone.
func (o *Options) checkShims(rep *DoctorReport, id string, r *receipt.Release) {
	launcher, err := o.launcher()
	if err != nil {
		rep.found(DoctorShimMissing, o.Homes.Bin, "cannot tell what the shim of %s should be: %v", id, err)
		return
	}
	paths := shimPaths(o.Homes.Bin, r.Command)
	type want struct {
		path, text string
		parse      func(string) (string, receipt.Homes, bool)
		write      func(string, receipt.Homes) string
	}
	ws := []want{{paths[0], ShimScript(launcher, id, o.Homes), func(s string) (string, receipt.Homes, bool) { return parseShimScript(s, id) }, func(l string, h receipt.Homes) string { return ShimScript(l, id, h) }}}
	if strings.HasPrefix(r.Target, "win32-") {
		ws = append(ws, want{paths[1], ShimCmd(launcher, id, o.Homes), func(s string) (string, receipt.Homes, bool) { return parseShimCmd(s, id) }, func(l string, h receipt.Homes) string { return ShimCmd(l, id, h) }})
	}
	var rewrite []DoctorItem
	for _, w := range ws {
		b, err := atomicfs.ReadRegular(w.path, 0)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			rep.found(DoctorShimMissing, w.path, "the command shim of %s is missing: the command does not run", id)
			rewrite = append(rewrite, DoctorItem{DoctorShimMissing, w.path, "recreated"})
		case err != nil:
			rep.found(DoctorShimModified, w.path, "cannot read the command shim of %s: %v", id, err)
		case string(b) == w.text:
		case !bytes.Contains(b, []byte(shimMarker(id))):
			rep.found(DoctorShimForeign, w.path, "this is not a piship command shim of %s, so %s does not run it: remove or rename it, then run piship doctor %s", id, r.Command, id)
		default:
			if l, h, ok := w.parse(string(b)); ok && w.write(l, h) == string(b) {
				rewrite = append(rewrite, DoctorItem{DoctorShimOutdated, w.path, fmt.Sprintf("rewritten: it ran %s with homes %s, %s, %s", l, h.Install, h.Bin, h.State)})
				continue
			}
			rep.found(DoctorShimModified, w.path, "the command shim of %s is not what piship writes: something changed it", id)
			rewrite = append(rewrite, DoctorItem{DoctorShimModified, w.path, "rewritten"})
		}
	}
	if len(rewrite) == 0 {
		return
	}
	if _, err := o.writeShims(id, r.Command, r.Target); err != nil {
		for _, it := range rewrite {
			rep.found(it.Code, it.Path, "could not be rewritten: %v", err)
		}
		return
	}
	rep.Repaired = append(rep.Repaired, rewrite...)
}

// parseShimScript reads the launcher and homes out of a POSIX sh shim of
// id as ShimScript writes it (false when it is not one).
func parseShimScript(s, id string) (string, receipt.Homes, bool) {
	var h receipt.Homes
	var launcher string
	vals := map[string]*string{receipt.EnvInstallHome: &h.Install, receipt.EnvBinHome: &h.Bin, receipt.EnvStateHome: &h.State}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && vals[k] != nil {
			if u, ok := shUnquote(v); ok {
				*vals[k] = u
			}
		}
		if rest, ok := strings.CutPrefix(line, "exec "); ok {
			if l, _, ok := shWord(rest); ok {
				launcher = l
			}
		}
	}
	ok := launcher != "" && h.Install != "" && h.Bin != "" && h.State != ""
	return launcher, h, ok
}

// shUnquote undoes shQuote ("" and false when s is not its output).
func shUnquote(s string) (string, bool) {
	w, rest, ok := shWord(s)
	return w, ok && rest == ""
}

// shWord reads one word of shQuote's output from the start of s: quoted
// runs and escaped quotes, up to a space or the end. It returns the word
// and what follows it.
func shWord(s string) (string, string, bool) {
	var b strings.Builder
	i := 0
	for i < len(s) && s[i] != ' ' {
		switch {
		case s[i] == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case strings.HasPrefix(s[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		default:
			return "", "", false
		}
	}
	return b.String(), s[i:], i > 0
}

// parseShimCmd reads the launcher and homes out of a Windows shim of id as
// ShimCmd writes it.
func parseShimCmd(s, id string) (string, receipt.Homes, bool) {
	var h receipt.Homes
	var launcher string
	unesc := func(v string) string { return strings.ReplaceAll(v, "%%", "%") }
	vals := map[string]*string{receipt.EnvInstallHome: &h.Install, receipt.EnvBinHome: &h.Bin, receipt.EnvStateHome: &h.State}
	for _, line := range strings.Split(s, "\r\n") {
		if rest, ok := strings.CutPrefix(line, `set "`); ok {
			if k, v, ok := strings.Cut(strings.TrimSuffix(rest, `"`), "="); ok && vals[k] != nil {
				*vals[k] = unesc(v)
			}
		}
		if rest, ok := strings.CutPrefix(line, `"`); ok {
			if l, _, ok := strings.Cut(rest, `"`); ok {
				launcher = unesc(l)
			}
		}
	}
	ok := launcher != "" && h.Install != "" && h.Bin != "" && h.State != ""
	return launcher, h, ok
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
			gone := filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix(id)+receipt.RandomHex(4))
			o.Renamer.Do(dir, gone) // a failure leaves it for the next doctor
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), receipt.UninstallingPrefix(id)+"*"))
	stages := tuf.StaleStages(dir) // a killed update's copy of the store
	return append(left, stages...)
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
