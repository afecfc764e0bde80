package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/payload"
)

// Doctor verifies an installation and reclaims what it no longer needs.
type Doctor struct{}

func (Doctor) Name() string    { return "doctor" }
func (Doctor) Version() string { return "1" }
func (Doctor) Doc() string {
	return "Verifies the active payload against its inventory and the receipt, reclaims obsolete versions and .retained-* directories within " +
		"PISHIP_RECLAIM_BUDGET_MS (default 5000; never active, previous or leased versions), refreshes an outdated shim, and reports leases, trust and disk use."
}

func (Doctor) Attrs() []Attr { return []Attr{{Name: "id", Type: cty.String, Required: true}} }

func (Doctor) Outputs() []Output {
	return []Output{
		{Name: "report", Type: cty.String, Doc: "the report as JSON"}, {Name: "verified", Type: cty.Bool},
		{Name: "problems", Type: cty.List(cty.String)},
	}
}

// Run implements Kind.
func (Doctor) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	if o.Store, err = cache.OpenStore(inv.Getenv); err != nil {
		return nil, err
	}
	rep, err := home.Doctor(ctx, o, stringOr(inv.Get("id"), ""), reclaimBudget(inv, 5*time.Second))
	if err != nil {
		return nil, err
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
	data, _ := payload.CanonicalJSON(rep)
	out := map[string]cty.Value{"report": cty.StringVal(string(data)), "verified": cty.BoolVal(rep.Verified), "problems": stringListVal(rep.Problems)}
	if len(rep.Problems) > 0 {
		return nil, fmt.Errorf("INTEGRITY_FAILED: %s: %s", rep.ID, strings.Join(rep.Problems, "; "))
	}
	return out, nil
}
