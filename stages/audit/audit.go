package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	par "piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// ReportSchema identifies vulnerabilities.json.
const ReportSchema = "piship-vulnerabilities/v1"

// Verdicts of a report, a source and a signature check.
const (
	Passed      = "passed"
	Failed      = "failed"
	Unavailable = "unavailable"
)

// Finding is an advisory that affects an installed package version.
type Finding struct {
	// ID is the advisory's id: its GHSA id when the source gives one (npm
	// gives it in the URL), else the source's own (an OSV id, an npm
	// advisory number).
	ID string `json:"id"`
	// Aliases are the advisory's other ids (CVE-..., the npm number).
	Aliases []string `json:"aliases"`
	Package string   `json:"package"`
	Version string   `json:"version"`
	// Paths are the package-lock.json keys installing this version.
	Paths []string `json:"paths"`
	// Severity is low, moderate, high or critical.
	Severity string `json:"severity"`
	// Unrated marks an advisory that gave no severity: it counts as high,
	// as npm audit counts it.
	Unrated bool   `json:"unrated,omitempty"`
	Title   string `json:"title"`
	URL     string `json:"url"`
	// Range is the affected versions as the source states them.
	Range string `json:"range"`
	// Source names the sources that reported it, comma-separated: "npm",
	// "npm, osv:osv".
	Source string `json:"source"`
	// Allowed is true when a current allow entry accepts the advisory.
	Allowed     bool   `json:"allowed"`
	AllowReason string `json:"allowReason,omitempty"`
	// AllowExpired is the expiry (YYYY-MM-DD) of an allow entry that
	// matched but has expired; the finding is not allowed.
	AllowExpired string `json:"allowExpired,omitempty"`
	// Fails is true when the finding fails the release: at or above
	// fail_on and not allowed.
	Fails bool `json:"fails"`
}

// SourceResult is what one advisory source said.
type SourceResult struct {
	// Name is the source as written in distribution.hcl: "npm",
	// "osv:osv".
	Name string `json:"name"`
	// Verdict is passed, failed (it reported a failing finding) or
	// unavailable (it could not be consulted).
	Verdict string `json:"verdict"`
	// Reason says why a source is unavailable, or notes about its answer.
	Reason string `json:"reason"`
	// Findings counts the package versions it reported affected, one per
	// advisory.
	Findings int `json:"findings"`
}

// Report is a release's vulnerabilities.json.
type Report struct {
	Schema string `json:"schema"`
	FailOn string `json:"failOn"`
	// Verdict is failed when a finding fails, else unavailable when a
	// source could not be consulted, else passed.
	Verdict          string         `json:"verdict"`
	AllowUnavailable bool           `json:"allowUnavailable"`
	Sources          []SourceResult `json:"sources"`
	// Packages counts the installed packages audited.
	Packages int `json:"packages"`
	// Counts the findings by severity, allowed ones included; every
	// severity is present.
	Counts map[string]int `json:"counts"`
	// Findings are sorted by severity (highest first), package, version
	// and id.
	Findings []Finding `json:"findings"`
}

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
func Audit(ctx context.Context, pkgs []Package, pol distribution.Audit, o Options) (*Report, error) {
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

	r := &Report{Schema: ReportSchema, FailOn: failOn, AllowUnavailable: pol.AllowUnavailable, Packages: len(pkgs), Counts: map[string]int{}}
	for _, sev := range distribution.Severities {
		r.Counts[sev] = 0
	}
	var all []Finding
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
		sr := SourceResult{Name: sources[i], Verdict: Passed, Reason: oc.note, Findings: len(oc.findings)}
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
	r.Verdict = verdictOf(anyFails, anyUnavailable)
	return r, nil
}

// verdictOf is the rule of a report's verdict: failed when a finding
// fails, else unavailable when a source was, else passed. Audit writes it
// and Disagreements holds a report read back to it.
func verdictOf(anyFails, anyUnavailable bool) string {
	switch {
	case anyFails:
		return Failed
	case anyUnavailable:
		return Unavailable
	}
	return Passed
}

// fails is the rule of a finding: at or above failOn and not allowed.
func fails(severity, failOn string, allowed bool) bool {
	return !allowed && rank(severity) >= rank(failOn)
}

// outcome is what one source gave: findings, or why it is unavailable.
type outcome struct {
	findings    []Finding
	unavailable string
	note        string
}

// merge adds findings to all, folding one into an existing finding of the
// same package version when their ids or aliases meet (the same advisory
// from two sources).
func merge(all, more []Finding) []Finding {
	for _, f := range more {
		i := slices.IndexFunc(all, func(g Finding) bool {
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

func sameAdvisory(a, b Finding) bool {
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
func applyPolicy(f *Finding, failOn string, allow []distribution.Allow, now time.Time) {
	f.Fails = fails(f.Severity, failOn, false)
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

func sortFindings(fs []Finding) {
	slices.SortFunc(fs, func(a, b Finding) int {
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

// Failure returns nil when the audit lets the release go on (passed, or
// unavailable with allow_unavailable), else an error naming the first
// failing advisory and package (or the expired allow entry that no longer
// accepts it), or the unavailable source and why.
func (r *Report) Failure() error {
	switch r.Verdict {
	case Passed:
		return nil
	case Unavailable:
		if r.AllowUnavailable {
			return nil
		}
		for _, s := range r.Sources {
			if s.Verdict == Unavailable {
				return errcode.Newf(errcode.PolicyDenied, "vulnerability audit: the source %s is unavailable: %s; a release needs every audit source to answer (or audit.allow_unavailable = true in %s)",
					s.Name, s.Reason, distribution.FileName)
			}
		}
	}
	var failing []Finding
	for _, f := range r.Findings {
		if f.Fails {
			failing = append(failing, f)
		}
	}
	if len(failing) == 0 {
		return errcode.Newf(errcode.PolicyDenied, "vulnerability audit verdict %q", r.Verdict)
	}
	f := failing[0]
	what := f.ID
	if f.Title != "" {
		what += " (" + f.Title + ")"
	}
	if f.URL != "" {
		what += ", " + f.URL
	}
	var msg string
	if f.AllowExpired != "" {
		msg = fmt.Sprintf("vulnerability audit: the allow entry for %s expired on %s, and %s@%s is still affected by %s: %s severity, at or above audit.fail_on %q; upgrade the package, or renew the entry's expires if the reason (%q) still holds",
			f.ID, f.AllowExpired, f.Package, f.Version, what, f.Severity, r.FailOn, f.AllowReason)
	} else {
		msg = fmt.Sprintf("vulnerability audit: %s@%s is affected by %s: %s severity, at or above audit.fail_on %q; upgrade the package, or accept the advisory with an allow %q block (reason, expires) in the audit block of %s",
			f.Package, f.Version, what, f.Severity, r.FailOn, f.ID, distribution.FileName)
	}
	if n := len(failing) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more failing %s in vulnerabilities.json)", n, canon.Noun(n, "finding"))
	}
	return errcode.New(errcode.PolicyDenied, msg)
}

// Marshal returns the canonical bytes of the report: keys sorted,
// two-space indent, no HTML escaping, a trailing newline; empty lists are
// written as [].
func (r *Report) Marshal() []byte { return canonicalJSON(r) }

// reportJSON is Report without its MarshalJSON.
type reportJSON Report

// MarshalJSON writes the report with sorted keys and empty lists as [],
// so any JSON encoder gives Marshal's content.
func (r Report) MarshalJSON() ([]byte, error) {
	c := r
	if c.Sources == nil {
		c.Sources = []SourceResult{}
	}
	c.Findings = slices.Clone(c.Findings)
	if c.Findings == nil {
		c.Findings = []Finding{}
	}
	for i := range c.Findings {
		if c.Findings[i].Aliases == nil {
			c.Findings[i].Aliases = []string{}
		}
		if c.Findings[i].Paths == nil {
			c.Findings[i].Paths = []string{}
		}
	}
	if c.Counts == nil {
		c.Counts = map[string]int{}
	}
	return sortedJSON((*reportJSON)(&c))
}

// sortedJSON marshals v with its object keys sorted.
func sortedJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// canonicalJSON writes v with sorted keys, two-space indent, no HTML
// escaping and a trailing newline.
func canonicalJSON(v any) []byte {
	generic, err := sortedJSON(v)
	if err != nil {
		panic(err) // strings, bools, ints, lists and maps of them
	}
	var out bytes.Buffer
	if err := json.Indent(&out, generic, "", "  "); err != nil {
		panic(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// Disagreements lists where the report does not follow from its own
// findings (empty: it does), so that a consumer reading
// vulnerabilities.json recomputes its verdict instead of trusting it: the
// schema and failOn are known; every severity is counted as the findings
// are; each finding has a known severity, says allowed only where
// allowed(f) (the policy's allow entries name it), and fails exactly when
// it is at or above failOn and not allowed; and the verdict is failed when
// a finding fails, else unavailable when a source was, else passed.
func (r *Report) Disagreements(allowed func(Finding) bool) []string {
	var out []string
	if r.Schema != ReportSchema {
		out = append(out, fmt.Sprintf("schema is %q, not %s", r.Schema, ReportSchema))
	}
	if rank(r.FailOn) == 0 {
		return append(out, fmt.Sprintf("failOn %q is not one of %s", r.FailOn, strings.Join(distribution.Severities, ", ")))
	}
	counts := map[string]int{}
	anyFails := false
	for _, f := range r.Findings {
		if rank(f.Severity) == 0 {
			out = append(out, fmt.Sprintf("finding %s has severity %q", f.ID, f.Severity))
			continue
		}
		counts[f.Severity]++
		if f.Allowed && !allowed(f) {
			out = append(out, fmt.Sprintf("finding %s (%s@%s) says allowed, and no allow entry of the policy names it", f.ID, f.Package, f.Version))
		}
		want := fails(f.Severity, r.FailOn, f.Allowed)
		if f.Fails != want {
			out = append(out, fmt.Sprintf("finding %s (%s@%s, %s) says fails %t under failOn %s", f.ID, f.Package, f.Version, f.Severity, f.Fails, r.FailOn))
		}
		anyFails = anyFails || want
	}
	for _, sev := range distribution.Severities {
		if r.Counts[sev] != counts[sev] {
			out = append(out, fmt.Sprintf("counts %s %d, the findings hold %d", sev, r.Counts[sev], counts[sev]))
		}
	}
	for sev := range r.Counts {
		if rank(sev) == 0 {
			out = append(out, fmt.Sprintf("counts an unknown severity %q", sev))
		}
	}
	verdict := verdictOf(anyFails, slices.ContainsFunc(r.Sources, func(s SourceResult) bool { return s.Verdict == Unavailable }))
	if r.Verdict != verdict {
		var fails []string
		for sev, n := range counts {
			if n > 0 && rank(sev) >= rank(r.FailOn) {
				fails = append(fails, fmt.Sprintf("%d %s", n, sev))
			}
		}
		slices.Sort(fails)
		what := "its findings and sources"
		if len(fails) > 0 {
			what = "findings " + strings.Join(fails, ", ")
		}
		out = append(out, fmt.Sprintf("verdict %q, but %s under failOn %s make it %q", r.Verdict, what, r.FailOn, verdict))
	}
	return out
}
