package stages

import (
	"context"
	"encoding/json"
	"time"

	"piship.dev/piship/stages/audit"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
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

// SignaturesConfig is signatures' configuration.
type SignaturesConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory (its signatures policy and piship.lock)"`
}

// SignaturesOutputs are signatures' outputs.
type SignaturesOutputs struct {
	Verdict string `cty:"verdict" doc:"passed, failed, unavailable or not-applicable"`
	Report  string `cty:"report" doc:"JSON {verdict, missing, reason} for release.json"`
}

// Run implements stage.Typed.
func (Signatures) Run(ctx context.Context, inv *stage.Invocation, cfg SignaturesConfig) (SignaturesOutputs, error) {
	d, pl, err := loadWithPackageLock(inv, cfg.Distribution)
	if err != nil {
		return SignaturesOutputs{}, err
	}
	rep := audit.VerifySignatures(ctx, audit.PackagesFromLock(pl), audit.Options{
		Registry: npm.Registry(d.RuntimeDir()), Now: time.Now(), DistDir: d.Dir,
	})
	missing := rep.Missing
	if missing == nil {
		missing = []string{}
	}
	summary, _ := json.Marshal(releasejson.SignatureSummary{Verdict: rep.Verdict, Missing: missing, Reason: rep.Reason})
	switch {
	case rep.Verdict == "failed":
		return SignaturesOutputs{}, errcode.Newf(errcode.PolicyDenied, "registry signatures failed: %s", rep.Reason)
	case rep.Verdict == "unavailable" && !d.Signatures.AllowUnavailable:
		return SignaturesOutputs{}, errcode.Newf(errcode.PolicyDenied, "registry signatures unavailable: %s (set signatures { allow_unavailable = true } to release anyway; release.json records it)", rep.Reason)
	}
	return SignaturesOutputs{Verdict: rep.Verdict, Report: string(summary)}, nil
}
