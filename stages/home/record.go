package home

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
)

// DoctorReceiptModified: a release record's entry or command is not its
// lock's (payload/piship.lock, whose digest the record holds): the
// receipt was edited to run another file. Launch refuses it
// (INTEGRITY_FAILED); piship repair restores the record from the lock.
const DoctorReceiptModified = "RECEIPT_MODIFIED"

// recordDrift is what of a release record disagrees with its lock.
type recordDrift struct {
	// Entry and Command are the lock's; Fields what differs, in words.
	Entry, Command string
	Fields         []string
}

// errLockModified: payload/piship.lock is not the lock the record holds
// the digest of.
var errLockModified = errors.New("the lock is not the one installed")

// installedLock reads r's payload/piship.lock and holds it to the digest
// the record holds (an older record holds none: the lock is then taken as
// it stands); another lock is errLockModified.
func installedLock(r *receipt.Release) ([]byte, error) {
	raw, err := readSmall(filepath.Join(r.Payload, distribution.LockFileName))
	if err == nil && r.LockSHA256 != "" && !strings.EqualFold(canon.SHA256Hex(raw), r.LockSHA256) {
		return nil, errLockModified
	}
	return raw, err
}

// lockDrift compares r's entry and command with its installed lock's, as
// a start reads them (launch.LockNames). It says nothing (nil) when they agree, and
// when the lock is not the one installed or does not parse: that is
// LOCK_MODIFIED, found by its digest, and restoring the lock comes first.
func lockDrift(r *receipt.Release) *recordDrift {
	raw, err := installedLock(r)
	if err != nil {
		return nil
	}
	entry, command, err := launch.LockNames(raw)
	if err != nil {
		return nil
	}
	d := &recordDrift{Entry: entry, Command: command}
	if r.Entry != d.Entry {
		d.Fields = append(d.Fields, fmt.Sprintf("entry %q (the lock's is %q)", r.Entry, d.Entry))
	}
	if r.Command != d.Command {
		d.Fields = append(d.Fields, fmt.Sprintf("command %q (the lock's is %q)", r.Command, d.Command))
	}
	if len(d.Fields) == 0 {
		return nil
	}
	return d
}

// checkRecord reports a record of the receipt whose entry or command is
// not its lock's. It returns whether it found nothing.
func (o *Options) checkRecord(rep *DoctorReport, id, role string, r *receipt.Release) bool {
	d := lockDrift(r)
	if d == nil {
		return true
	}
	rep.found(DoctorReceiptModified, receipt.ReceiptPath(o.Homes.Install, id), "%s %s %s: the receipt names %s: it was edited to run something else, and launch refuses it; run piship repair %s, which restores the record from the lock (or reinstall %s %s)",
		role, id, r.Version, strings.Join(d.Fields, " and "), id, id, r.Version)
	return false
}

// drifted is a record of the receipt and what its lock says instead.
type drifted struct {
	rec   *receipt.Release
	drift *recordDrift
}

// driftedRecords returns the records of the active and previous release
// (inside apps/<id>/) whose entry or command is not their lock's.
func driftedRecords(home, id string, rc *receipt.Receipt) []drifted {
	var out []drifted
	for _, v := range []string{rc.Active, rc.Previous} {
		if r := rc.Find(v); r != nil && receipt.CheckInside(home, id, r) == nil {
			if d := lockDrift(r); d != nil {
				out = append(out, drifted{r, d})
			}
		}
	}
	return out
}

// restoreRecords gives every record of active and previous whose entry or
// command drifted from its lock the lock's, in one receipt write under
// the launch gate (the receipt is replaced atomically: a kill leaves the
// old or the restored one), then writes the command shim of the active
// release's command and removes a shim of id the wrong command had. It
// returns what it restored, in words.
func (o *Options) restoreRecords(ctx context.Context, id string) ([]string, error) {
	home := o.Homes.Install
	release, err := receipt.TakeGate(ctx, home, id, o.GateWait)
	if err != nil {
		return nil, err
	}
	rc, err := receipt.Read(home, id)
	if err != nil {
		release()
		return nil, err
	}
	var done []string
	var oldCommand string
	for _, dr := range driftedRecords(home, id, rc) {
		r, d := dr.rec, dr.drift
		if r.Version == rc.Active && r.Command != d.Command {
			oldCommand = r.Command
		}
		done = append(done, fmt.Sprintf("%s %s: %s", id, r.Version, strings.Join(d.Fields, " and ")))
		r.Entry, r.Command = d.Entry, d.Command
	}
	if len(done) > 0 {
		rc.UpdatedAt = o.Now().UTC()
		err = receipt.WriteWith(home, rc, *o.Renamer)
	}
	release()
	if err != nil || len(done) == 0 {
		return nil, err
	}
	if a := rc.Find(rc.Active); a != nil && oldCommand != "" {
		if _, err := o.writeShims(id, a.Command, a.Target); err != nil {
			return done, err
		}
		if receipt.ValidName(oldCommand) {
			o.removeShims(id, oldCommand)
		}
	}
	return done, nil
}
