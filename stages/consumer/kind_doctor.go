package consumer

import (
	"context"
	"time"

	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage"
)

// Doctor verifies an installation, repairs what it can and reclaims what
// it no longer needs.
type Doctor struct{}

func (Doctor) Name() string    { return "doctor" }
func (Doctor) Version() string { return "3" }
func (Doctor) Doc() string {
	return "Checks the active release (inside apps/<id>/; inventory, lock and release.json against the receipt; every payload file against the inventory; " +
		"the record's entry and command against the lock's), the previous release's lock, the command shim, the kept launcher and the launch gate, and the modes of everything that decides what runs " +
		"(the install home, receipts, apps/<id>/, the active and previous version directories, trust state, the kept launcher, the shims: no setuid, setgid, sticky or group/world-writable mode, executable bits as install recorded them); " +
		"recreates or rewrites a missing, modified or outdated shim or launcher and removes a launch gate that is a directory; reclaims obsolete " +
		"versions and .retained-* directories within PISHIP_RECLAIM_BUDGET_MS (default 5000; never active, previous or leased versions), and " +
		"reports what it found apart from what it did, and the trusted TUF metadata of trust/<id>/ when it exists (versions, expiry; a timestamp or snapshot expiring within a week is a warning, not damage). Damage found (repaired or not) fails the stage with INTEGRITY_FAILED unless fail_on_damage = false."
}

// DoctorConfig is the configuration of a doctor stage.
type DoctorConfig struct {
	ID string `cty:"id" required:"true" doc:"the installed distribution to check"`
	// FailOnDamage (default true) fails the stage when doctor found
	// damage; false succeeds with the report (what `piship doctor` runs,
	// so it can print the report and then exit 1).
	FailOnDamage *bool `cty:"fail_on_damage" doc:"fail with INTEGRITY_FAILED when damage was found (default true); false returns the report and leaves the verdict to the reader"`
}

// DoctorOutputs is what a doctor stage produces.
type DoctorOutputs struct {
	Report   home.DoctorReport `cty:"report" doc:"the report (piship doctor --json prints it as JSON)"`
	Verified bool              `cty:"verified" doc:"the active release passed every check"`
	// Problems is the report's Found, one line each.
	Problems []string `cty:"problems" doc:"what doctor found, one line each (CODE path: detail); empty when healthy"`
}

// Run implements stage.Typed.
func (Doctor) Run(ctx context.Context, inv *stage.Invocation, cfg DoctorConfig) (DoctorOutputs, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return DoctorOutputs{}, err
	}
	if o.Store, err = home.OpenStore(inv.Getenv); err != nil {
		return DoctorOutputs{}, err
	}
	rep, err := home.Doctor(ctx, o, cfg.ID, reclaimBudget(inv, 5*time.Second))
	if err != nil {
		return DoctorOutputs{}, err
	}
	home.CheckKeptLauncher(rep, o)
	out := DoctorOutputs{Report: *rep, Verified: rep.Verified, Problems: []string{}}
	for _, f := range rep.Found {
		out.Problems = append(out.Problems, f.String())
	}
	if rep.Damaged() && (cfg.FailOnDamage == nil || *cfg.FailOnDamage) {
		return DoctorOutputs{}, home.DamageError(*rep)
	}
	return out, nil
}
