package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"piship.dev/piship/stages/buildstate"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/audit"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/payload"
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

func (Audit) Attrs() []Attr {
	return []Attr{
		{Name: "distribution", Type: cty.String, Required: true},
		{Name: "release_dir", Type: cty.String, Required: true, Doc: "where vulnerabilities.json is written"},
	}
}

func (Audit) Outputs() []Output {
	return []Output{{Name: "verdict", Type: cty.String}, {Name: "findings", Type: cty.Number}}
}

// Run implements Kind.
func (Audit) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	d, pl, err := distAndLock(inv)
	if err != nil {
		return nil, err
	}
	rep, err := audit.Audit(ctx, audit.PackagesFromLock(pl), d.Audit, audit.Options{
		Registry: npm.Registry(d.RuntimeDir()), Now: time.Now(), DistDir: d.Dir,
	})
	if err != nil {
		return nil, err
	}
	data, err := payload.CanonicalJSON(rep)
	if err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(stringOr(inv.Get("release_dir"), ""), VulnerabilitiesName), data, 0o644); err != nil {
		return nil, err
	}
	if err := rep.Failure(); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"verdict": cty.StringVal(rep.Verdict), "findings": cty.NumberIntVal(int64(len(rep.Findings)))}, nil
}

// distAndLock decodes the distribution and its runtime's package-lock.json.
func distAndLock(inv *Invocation) (*dist.Distribution, *dist.PackageLock, error) {
	d, err := buildstate.LoadManifest(Resolve(inv.Dir, stringOr(inv.Get("distribution"), "")))
	if err != nil {
		return nil, nil, err
	}
	pl, _, err := dist.ReadPackageLock(filepath.Join(d.RuntimeDir(), "package-lock.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("CONFIG_INVALID: %v", err)
	}
	return d, pl, nil
}
