package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage"
)

// Doctor verifies an installation and reclaims what it no longer needs.
type Doctor struct{}

func (Doctor) Name() string    { return "doctor" }
func (Doctor) Version() string { return "1" }
func (Doctor) Doc() string {
	return "Verifies the active payload against its inventory and the receipt, reclaims obsolete versions and .retained-* directories within " +
		"PISHIP_RECLAIM_BUDGET_MS (default 5000; never active, previous or leased versions), refreshes an outdated shim, and reports leases, trust and disk use."
}

// DoctorConfig is the configuration of a doctor stage.
type DoctorConfig struct {
	ID string `cty:"id" required:"true"`
}

// DoctorOutputs is what a doctor stage produces.
type DoctorOutputs struct {
	Report   home.DoctorReport `cty:"report" doc:"the report (piship doctor --json prints it as JSON)"`
	Verified bool              `cty:"verified"`
	Problems []string          `cty:"problems"`
}

// Run implements stage.Typed.
func (Doctor) Run(ctx context.Context, inv *stage.Invocation, cfg DoctorConfig) (DoctorOutputs, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return DoctorOutputs{}, err
	}
	if o.Store, err = cache.OpenStore(inv.Getenv); err != nil {
		return DoctorOutputs{}, err
	}
	rep, err := home.Doctor(ctx, o, cfg.ID, reclaimBudget(inv, 5*time.Second))
	if err != nil {
		return DoctorOutputs{}, err
	}
	// An outdated kept launcher (piship was updated since the install) is
	// replaced; the shims name the kept one, so they need nothing.
	if src := launcherBeside(); src != "" && rep.Active != "" {
		if _, serr := os.Stat(filepath.Dir(keptLauncher(src, o.Homes.Install))); serr == nil {
			replaced, err := keepLauncherFrom(src, o.Homes.Install)
			if err != nil {
				fmt.Fprintf(inv.Log, "%s: warning: %v\n", inv.Pipeline, err)
			}
			rep.LauncherReplaced = replaced
		}
	}
	if len(rep.Problems) > 0 {
		return DoctorOutputs{}, fmt.Errorf("INTEGRITY_FAILED: %s: %s", rep.ID, strings.Join(rep.Problems, "; "))
	}
	return DoctorOutputs{Report: *rep, Verified: rep.Verified, Problems: rep.Problems}, nil
}
