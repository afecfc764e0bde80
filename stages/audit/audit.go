package audit

import (
	"context"
	"slices"
	"strings"
	"time"

	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/release/vulnreport"
	"piship.dev/piship/stages/stage/errcode"
)

// The verdicts of a report, a source and a signature check: one
// vocabulary, vulnerabilities.json's.
const (
	Passed      = vulnreport.Passed
	Failed      = vulnreport.Failed
	Unavailable = vulnreport.Unavailable
)

// Audit looks the packages up in the policy's advisory sources, in
// parallel, and applies the policy: a finding at or above fail_on fails
// unless a current allow entry accepts it. A source that cannot be
// consulted (unreachable, timed out, an error status, a malformed answer,
// a missing or corrupt database) is "unavailable" in the report, never
// passed. The error is only for a policy Audit cannot apply (an unknown
// severity or source).
//
// npm: the registry's bulk advisory endpoint is asked about the registry
// packages (local ones are never named to it); an advisory counts only
// when its vulnerable_versions contains the locked version, evaluated as
// npm audit does (node-semver with includePrerelease). osv:<path>: the
// records of ecosystem npm in the database that affect the version, local
// packages included (a vendored copy of a public package is still that
// package; a name that only collides can be allowed).
func Audit(ctx context.Context, pkgs []Package, pol distribution.Audit, o Options) (*vulnreport.Report, error) {
	o = o.withDefaults()
	failOn := pol.FailOn
	if failOn == "" {
		failOn = distribution.SeverityHigh
	}
	if distribution.SeverityRank(failOn) == 0 {
		return nil, errcode.Newf(errcode.ConfigInvalid, "audit.fail_on %q is not one of %s", failOn, strings.Join(distribution.Severities, ", "))
	}
	sources := pol.Sources
	if len(sources) == 0 {
		sources = []string{distribution.SourceNPM}
	}
	for _, s := range sources {
		if s != distribution.SourceNPM && !strings.HasPrefix(s, distribution.SourceOSVPrefix) {
			return nil, errcode.Newf(errcode.ConfigInvalid, "audit source %q is neither %q nor %s<path>", s, distribution.SourceNPM, distribution.SourceOSVPrefix)
		}
	}

	outcomes := make([]outcome, len(sources))
	_ = par.ForEach(context.Background(), len(sources), len(sources), func(i int) error {
		if s := sources[i]; s == distribution.SourceNPM {
			outcomes[i] = o.npmSource(ctx, pkgs)
		} else {
			outcomes[i] = osvSource(o.DistDir, strings.TrimPrefix(s, distribution.SourceOSVPrefix), pkgs)
		}
		return nil
	})

	r := &vulnreport.Report{Schema: vulnreport.ReportSchema, FailOn: failOn, AllowUnavailable: pol.AllowUnavailable, Packages: len(pkgs), Counts: map[string]int{}}
	for _, sev := range distribution.Severities {
		r.Counts[sev] = 0
	}
	var all []vulnreport.Finding
	for i, oc := range outcomes {
		for j := range oc.findings {
			oc.findings[j].Source = sources[i]
		}
		all = merge(all, oc.findings)
	}
	for i := range all {
		applyPolicy(&all[i], failOn, pol.Allow, o.Now)
		r.Counts[all[i].Severity]++
	}
	sortFindings(all)
	r.Findings = all

	anyFails, anyUnavailable := false, false
	for i, oc := range outcomes {
		sr := vulnreport.SourceResult{Name: sources[i], Verdict: Passed, Reason: oc.note, Findings: len(oc.findings)}
		if oc.unavailable != "" {
			sr.Verdict, sr.Reason = Unavailable, oc.unavailable
			anyUnavailable = true
		}
		for _, f := range all {
			if f.Fails && sr.Verdict == Passed && slices.Contains(strings.Split(f.Source, ", "), sources[i]) {
				sr.Verdict = Failed
			}
		}
		anyFails = anyFails || sr.Verdict == Failed
		r.Sources = append(r.Sources, sr)
	}
	r.Verdict = vulnreport.VerdictOf(anyFails, anyUnavailable)
	return r, nil
}

// outcome is what one source gave: findings, or why it is unavailable.
type outcome struct {
	findings    []vulnreport.Finding
	unavailable string
	note        string
}

// merge adds findings to all, folding one into an existing finding of the
// same package version when their ids or aliases meet (the same advisory
// from two sources).
func merge(all, more []vulnreport.Finding) []vulnreport.Finding {
	for _, f := range more {
		i := slices.IndexFunc(all, func(g vulnreport.Finding) bool {
			return g.Package == f.Package && g.Version == f.Version && sameAdvisory(g, f)
		})
		if i < 0 {
			all = append(all, f)
			continue
		}
		g := &all[i]
		for _, a := range append([]string{f.ID}, f.Aliases...) {
			if !strings.EqualFold(a, g.ID) && !containsFold(g.Aliases, a) {
				g.Aliases = append(g.Aliases, a)
			}
		}
		slices.Sort(g.Aliases)
		for _, p := range f.Paths {
			if !slices.Contains(g.Paths, p) {
				g.Paths = append(g.Paths, p)
			}
		}
		slices.Sort(g.Paths)
		if rank(f.Severity) > rank(g.Severity) || g.Unrated && !f.Unrated {
			g.Severity, g.Unrated = f.Severity, f.Unrated
		}
		if !strings.Contains(", "+g.Source+", ", ", "+f.Source+", ") {
			g.Source += ", " + f.Source
		}
		for _, s := range []struct {
			dst *string
			v   string
		}{{&g.Title, f.Title}, {&g.URL, f.URL}, {&g.Range, f.Range}} {
			if *s.dst == "" {
				*s.dst = s.v
			}
		}
	}
	return all
}

func sameAdvisory(a, b vulnreport.Finding) bool {
	for _, x := range append([]string{a.ID}, a.Aliases...) {
		if strings.EqualFold(x, b.ID) || containsFold(b.Aliases, x) {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(x string) bool { return strings.EqualFold(x, s) })
}

func rank(sev string) int { return distribution.SeverityRank(sev) }

// applyPolicy decides whether f fails: at or above failOn and not accepted
// by a current allow entry naming its id or an alias.
func applyPolicy(f *vulnreport.Finding, failOn string, allow []distribution.Allow, now time.Time) {
	f.Fails = vulnreport.Fails(f.Severity, failOn, false)
	for _, a := range allow {
		if !strings.EqualFold(a.ID, f.ID) && !containsFold(f.Aliases, a.ID) {
			continue
		}
		if a.Expired(now) {
			f.AllowExpired = a.Expires.Format(time.DateOnly)
			f.AllowReason = a.Reason
			continue
		}
		f.Allowed, f.AllowReason, f.AllowExpired = true, a.Reason, ""
		f.Fails = false
		return
	}
}

func sortFindings(fs []vulnreport.Finding) {
	slices.SortFunc(fs, func(a, b vulnreport.Finding) int {
		if c := rank(b.Severity) - rank(a.Severity); c != 0 {
			return c
		}
		for _, c := range []int{strings.Compare(a.Package, b.Package), compareVersionStrings(a.Version, b.Version), strings.Compare(a.ID, b.ID)} {
			if c != 0 {
				return c
			}
		}
		return 0
	})
}

func compareVersionStrings(a, b string) int {
	va, errA := parseVersion(a)
	vb, errB := parseVersion(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	if c := compareVersions(va, vb); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}
