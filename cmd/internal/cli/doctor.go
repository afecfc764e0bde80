package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
)

// DoctorAll runs doctor for id, or with id empty for every distribution
// the install home knows, one after another, and prints the reports to
// stdout: for people, or as JSON (the report object with id, an array of
// them without; see home.DoctorReport for the piship-doctor/v1 format).
// It returns the exit code: the worst of the runs' (ExitFailed, with an
// INTEGRITY_FAILED line on stderr, for a report that found damage, even
// when doctor repaired it all).
func DoctorAll(ctx context.Context, c pipelines.Config, stdout io.Writer, id string, asJSON bool) int {
	if id != "" {
		d, err := pipelines.Doctor(ctx, c, id)
		code := pipelines.ExitCode(err)
		if d != nil {
			if asJSON {
				WriteJSON(stdout, json.RawMessage(d.JSON()))
			} else if !writeDoctor(c, stdout, d) {
				return ExitFailed
			}
		}
		return code
	}
	homes, err := receipt.ResolveHomes(c.Getenv)
	if err != nil {
		fmt.Fprintf(c.Stderr, "piship: %v\n", err)
		return ExitUsage
	}
	ids, err := receipt.IDs(homes.Install)
	if err != nil {
		fmt.Fprintf(c.Stderr, "piship: doctor: %v\n", err)
		return ExitFailed
	}
	code := ExitOK
	var reps []json.RawMessage
	for _, id := range ids {
		d, err := pipelines.Doctor(ctx, c, id)
		dc := pipelines.ExitCode(err)
		code = max(code, dc)
		switch {
		case d == nil:
		case asJSON:
			reps = append(reps, json.RawMessage(d.JSON()))
		case !writeDoctor(c, stdout, d):
			code = max(code, ExitFailed)
		}
	}
	if asJSON {
		if reps == nil {
			reps = []json.RawMessage{}
		}
		WriteJSON(stdout, reps)
	} else if len(ids) == 0 {
		fmt.Fprintf(stdout, "nothing is installed in %s\n", homes.Install)
	}
	return code
}

// writeDoctor prints a doctor report for people; false when it does not
// decode (the problem is printed).
func writeDoctor(c pipelines.Config, w io.Writer, d *pipelines.Doctored) bool {
	r, err := d.Report()
	if err != nil {
		fmt.Fprintf(c.Stderr, "piship: doctor report: %v\n", err)
		return false
	}
	WriteDoctorReport(w, r)
	return true
}

// WriteDoctorReport prints a doctor report for people: the verdict line,
// what doctor found (damage), what it repaired or refreshed, its
// warnings (not damage), then the state of the installation.
func WriteDoctorReport(w io.Writer, r home.DoctorReport) {
	switch {
	case r.Damaged():
		fmt.Fprintf(w, "%s: DAMAGED: found %d problem(s), repaired %d\n", r.ID, len(r.Found), len(r.Repaired))
	case r.NotInstalled:
		fmt.Fprintf(w, "%s: not installed; apps/%s held leftovers of a failed install\n", r.ID, r.ID)
	case len(r.Repaired) > 0:
		fmt.Fprintf(w, "%s: verified; refreshed what was outdated\n", r.ID)
	default:
		fmt.Fprintf(w, "%s: verified, nothing to repair\n", r.ID)
	}
	for _, f := range r.Found {
		fmt.Fprintf(w, "  found: %s\n", f)
	}
	for _, d := range r.Repaired {
		fmt.Fprintf(w, "  repaired: %s\n", d)
	}
	for _, d := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", d)
	}
	if !r.NotInstalled {
		fmt.Fprintf(w, "  active %s, previous %s\n", cmp.Or(r.Active, "none"), cmp.Or(r.Previous, "none"))
	}
	fmt.Fprintf(w, "  reclaimed: %d", len(r.Reclaimed))
	if len(r.Remaining) > 0 {
		fmt.Fprintf(w, " (%d left for the next doctor: time budget)", len(r.Remaining))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  leases: %d live", len(r.Leases))
	for _, l := range r.Leases {
		fmt.Fprintf(w, "; %s pid %d on %s since %s", l.Version, l.PID, l.Host, l.StartTime().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if !r.NotInstalled {
		fmt.Fprintf(w, "  trust: %s\n", r.Trust)
	}
	if r.TrustFile != "" {
		fmt.Fprintf(w, "  trust state file: %s\n", r.TrustFile)
	}
	if r.TUF.Dir != "" {
		fmt.Fprintf(w, "  tuf trust: %s\n", r.TUF)
	}
	for _, l := range r.PiPackages {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if r.DiskBytes > 0 || !r.NotInstalled {
		fmt.Fprintf(w, "  disk: %s in apps/%s\n", pipelines.HumanBytes(r.DiskBytes), r.ID)
	}
	if s := r.Store; s != nil {
		fmt.Fprintf(w, "  store: %s: %s, %d no longer linked removed (%s)", s.Dir, canon.Count(s.Objects, "object"), s.Removed, pipelines.HumanBytes(s.Bytes))
		switch {
		case s.Problem != "":
			fmt.Fprintf(w, "; %s", s.Problem)
		case s.Exhausted:
			fmt.Fprintf(w, "; the rest waits for the next doctor (time budget)")
		}
		fmt.Fprintln(w)
	}
}
