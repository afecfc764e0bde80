package home

import (
	"fmt"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
)

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
	DoctorNodeModified       = "NODE_MODIFIED"       // the release's pinned Node (node/bin/node) is not the executable install recorded (full digest)
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
