package stages

import (
	"context"
	"encoding/json"

	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
)

// PackageAudits audits the package locks a distribution vendors besides its
// runtime. Distributions declare none yet (vendored packages come later),
// so it reads no lock and says so: not-applicable, never passed (a passed
// verdict without a lock read would be a false statement in release.json;
// releasejson.Parse refuses one). The stage and its verdict position
// exist so release pipelines need no change when packages arrive.
type PackageAudits struct{}

func (PackageAudits) Name() string    { return "package_audits" }
func (PackageAudits) Version() string { return "1" }
func (PackageAudits) Doc() string {
	return "Runs the audit for every vendored package lock the distribution declares. None are declared yet, so it reads no lock and reports not-applicable with the reason (never passed)."
}

// PackageAuditsConfig is package_audits' configuration.
type PackageAuditsConfig struct {
	Distribution string `cty:"distribution" required:"true"`
}

// PackageAuditsOutputs are package_audits' outputs.
type PackageAuditsOutputs struct {
	Verdict string `cty:"verdict"`
	Locks   int    `cty:"locks"`
	Report  string `cty:"report" doc:"JSON {verdict, locks, reason} for release.json"`
}

// Run implements stage.Typed.
func (PackageAudits) Run(ctx context.Context, inv *stage.Invocation, cfg PackageAuditsConfig) (PackageAuditsOutputs, error) {
	if _, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, cfg.Distribution)); err != nil {
		return PackageAuditsOutputs{}, err
	}
	// Each lock audited would count here; with none, no verdict but
	// not-applicable can be true.
	locks := 0
	verdict, reason := releasejson.AuditNotApplicable, "the distribution vendors no packages, so there is no package lock to audit"
	report, err := json.Marshal(releasejson.PackageAudits{Verdict: verdict, Locks: locks, Reason: reason})
	if err != nil {
		return PackageAuditsOutputs{}, err
	}
	return PackageAuditsOutputs{Verdict: verdict, Locks: locks, Report: string(report)}, nil
}
