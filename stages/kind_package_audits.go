package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/audit"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
)

// PackageAudits audits the package lock of every vendored Pi package
// (package blocks) with the distribution's audit policy: the same sources,
// fail_on, allow entries and allow_unavailable as the runtime's audit, so
// a registry that cannot be consulted is unavailable here too. With no
// vendored packages it reads no lock and says so: not-applicable, never
// passed (releasejson.CheckPackageAudits refuses a verdict about audits
// without a lock read).
type PackageAudits struct{}

func (PackageAudits) Name() string    { return "package_audits" }
func (PackageAudits) Version() string { return "2" }
func (PackageAudits) Doc() string {
	return "Audits each vendored Pi package's own package-lock.json with the audit block's policy (sources, fail_on, allow, allow_unavailable), " +
		"naming each lock, its digest and its verdict in the report; the verdict is failed if one fails (the stage fails), else unavailable if a source " +
		"could not be consulted for one, else passed. Without package blocks it reads no lock and reports not-applicable with the reason (never passed)."
}

// PackageAuditsConfig is package_audits' configuration.
type PackageAuditsConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory (its package blocks and audit block)"`
}

// PackageAuditsOutputs are package_audits' outputs.
type PackageAuditsOutputs struct {
	Verdict string `cty:"verdict" doc:"passed, failed, unavailable or not-applicable"`
	Locks   int    `cty:"locks" doc:"package locks audited"`
	Report  string `cty:"report" doc:"JSON {verdict, locks, reason, packages} for release.json"`
}

// Run implements stage.Typed.
func (PackageAudits) Run(ctx context.Context, inv *stage.Invocation, cfg PackageAuditsConfig) (PackageAuditsOutputs, error) {
	var none PackageAuditsOutputs
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, cfg.Distribution))
	if err != nil {
		return none, err
	}
	res := releasejson.PackageAudits{Verdict: releasejson.AuditNotApplicable, Reason: "the distribution vendors no packages, so there is no package lock to audit"}
	var failures []string
	if len(d.Packages) > 0 {
		res = releasejson.PackageAudits{Verdict: releasejson.AuditPassed}
		var unavailable []string
		for _, p := range d.Packages {
			lockPath := path.Join(p.Dir, "package-lock.json")
			pl, raw, err := distribution.ReadPackageLock(filepath.Join(d.Dir, filepath.FromSlash(lockPath)))
			if err != nil {
				return none, err
			}
			rep, err := audit.Audit(ctx, audit.PackagesFromLock(pl), d.Audit, audit.Options{
				Registry: npm.Registry(d.PackageDir(p)), Now: time.Now(), DistDir: d.Dir,
			})
			if err != nil {
				return none, fmt.Errorf("Pi package %s: %w", p.Name, err)
			}
			pa := releasejson.PackageAudit{Name: p.Name, Lock: lockPath, LockSHA256: canon.SHA256Hex(raw), Verdict: rep.Verdict, Packages: rep.Packages, Findings: len(rep.Findings)}
			switch rep.Verdict {
			case audit.Unavailable:
				var why []string
				for _, s := range rep.Sources {
					if s.Verdict == audit.Unavailable {
						why = append(why, s.Name+": "+s.Reason)
					}
				}
				pa.Reason = strings.Join(why, "; ")
				unavailable = append(unavailable, p.Name)
			}
			if ferr := rep.Failure(); ferr != nil {
				pa.Verdict = releasejson.AuditFailed
				failures = append(failures, fmt.Sprintf("Pi package %s (%s): %v", p.Name, lockPath, ferr))
			}
			res.Packages = append(res.Packages, pa)
			res.Locks++
		}
		switch {
		case len(failures) > 0:
			res.Verdict = releasejson.AuditFailed
		case len(unavailable) > 0:
			res.Verdict = releasejson.AuditUnavailable
			res.Reason = "an audit source could not be consulted for " + strings.Join(unavailable, ", ") + " (see each package's reason)"
		}
	}
	if err := releasejson.CheckPackageAudits(res); err != nil {
		return none, fmt.Errorf("package audits: %v", err) // a bug of this stage: never record it
	}
	report, err := json.Marshal(res)
	if err != nil {
		return none, err
	}
	if len(failures) > 0 {
		return none, fmt.Errorf("%s", strings.Join(failures, "; "))
	}
	return PackageAuditsOutputs{Verdict: res.Verdict, Locks: res.Locks, Report: string(report)}, nil
}
