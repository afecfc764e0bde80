package stages

import (
	"context"
	"path/filepath"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/audit"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
)

// Audit checks the locked runtime against the advisory sources the
// distribution names and writes vulnerabilities.json.
type Audit struct{}

func (Audit) Name() string    { return "audit" }
func (Audit) Version() string { return "1" }
func (Audit) Doc() string {
	return "Audits the locked runtime packages against the sources of distribution.hcl's audit block (the npm bulk advisory endpoint, offline OSV databases) " +
		"and writes vulnerabilities.json. Findings at or above fail_on fail the stage unless allowed (with a reason, until an expiry); a source that cannot " +
		"be reached, times out or answers malformed data is unavailable, which fails unless allow_unavailable = true."
}

// AuditConfig is audit's configuration.
type AuditConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory (its audit block and piship.lock)"`
	ReleaseDir   string `cty:"release_dir" required:"true" doc:"where vulnerabilities.json is written"`
}

// AuditOutputs are audit's outputs.
type AuditOutputs struct {
	Verdict  string `cty:"verdict" doc:"passed, failed or unavailable (written to vulnerabilities.json)"`
	Findings int    `cty:"findings" doc:"advisories found, allowed ones included"`
}

// Run implements stage.Typed.
func (Audit) Run(ctx context.Context, inv *stage.Invocation, cfg AuditConfig) (AuditOutputs, error) {
	d, pl, err := loadWithPackageLock(inv, cfg.Distribution)
	if err != nil {
		return AuditOutputs{}, err
	}
	rep, err := audit.Audit(ctx, audit.PackagesFromLock(pl), d.Audit, audit.Options{
		Registry: npm.Registry(d.RuntimeDir()), Now: time.Now(), DistDir: d.Dir,
	})
	if err != nil {
		return AuditOutputs{}, err
	}
	data, err := canon.JSON(rep)
	if err != nil {
		return AuditOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(cfg.ReleaseDir, release.VulnerabilitiesName), data, 0o644); err != nil {
		return AuditOutputs{}, err
	}
	if err := rep.Failure(); err != nil {
		return AuditOutputs{}, err
	}
	return AuditOutputs{Verdict: rep.Verdict, Findings: len(rep.Findings)}, nil
}
