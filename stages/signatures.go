package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/audit"
	"piship.dev/piship/stages/npm"
)

// Signatures verifies the npm registry signatures of the locked packages.
type Signatures struct{}

func (Signatures) Name() string    { return "signatures" }
func (Signatures) Version() string { return "1" }
func (Signatures) Doc() string {
	return "Verifies each registry package's dist.signatures (ECDSA P-256 over <name>@<version>:<integrity>) with the registry's keys from " +
		"/-/npm/v1/keys. failed: an invalid signature or expired key; unavailable: no keys endpoint, or packuments without signatures (fails unless " +
		"signatures { allow_unavailable = true }); local file: packages are exempt. The verdict goes into release.json."
}

func (Signatures) Attrs() []Attr {
	return []Attr{{Name: "distribution", Type: cty.String, Required: true}}
}

func (Signatures) Outputs() []Output {
	return []Output{
		{Name: "verdict", Type: cty.String},
		{Name: "report", Type: cty.String, Doc: "JSON {verdict, missing, reason} for release.json"},
	}
}

// Run implements Kind.
func (Signatures) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	d, pl, err := distAndLock(inv)
	if err != nil {
		return nil, err
	}
	rep := audit.VerifySignatures(ctx, audit.PackagesFromLock(pl), audit.Options{
		Registry: npm.Registry(d.RuntimeDir()), Now: time.Now(), DistDir: d.Dir,
	})
	missing := rep.Missing
	if missing == nil {
		missing = []string{}
	}
	summary, _ := json.Marshal(SignatureSummary{Verdict: rep.Verdict, Missing: missing, Reason: rep.Reason})
	switch {
	case rep.Verdict == "failed":
		return nil, fmt.Errorf("POLICY_DENIED: registry signatures failed: %s", rep.Reason)
	case rep.Verdict == "unavailable" && !d.Signatures.AllowUnavailable:
		return nil, fmt.Errorf("POLICY_DENIED: registry signatures unavailable: %s (set signatures { allow_unavailable = true } to release anyway; release.json records it)", rep.Reason)
	}
	return map[string]cty.Value{"verdict": cty.StringVal(rep.Verdict), "report": cty.StringVal(string(summary))}, nil
}
