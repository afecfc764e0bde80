// Package vulnreport is vulnerabilities.json (piship-vulnerabilities/v1),
// the report stages/audit writes into a release and every consumer reads
// back: its document types and canonical encoding, and the rules that read
// it (Disagreements: does the verdict follow from the findings; Failure:
// does it stop a release). It lives apart from stages/audit so that
// install, verify-release and doctor check the claim without linking the
// audit client (npm, OSV, HTTP).
package vulnreport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
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

// VerdictOf is the rule of a report's verdict: failed when a finding
// fails, else unavailable when a source was, else passed. stages/audit
// writes it and Disagreements holds a report read back to it.
func VerdictOf(anyFails, anyUnavailable bool) string {
	switch {
	case anyFails:
		return Failed
	case anyUnavailable:
		return Unavailable
	}
	return Passed
}

// Fails is the rule of a finding: at or above failOn and not allowed.
func Fails(severity, failOn string, allowed bool) bool {
	return !allowed && rank(severity) >= rank(failOn)
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
func (r *Report) Marshal() []byte { return CanonicalJSON(r) }

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
	return SortedJSON((*reportJSON)(&c))
}

// SortedJSON marshals v with its object keys sorted, struct fields too
// (canon.JSON sorts map keys only): the encoding of this report and of
// stages/audit's signature report.
func SortedJSON(v any) ([]byte, error) {
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

// CanonicalJSON writes v with sorted keys, two-space indent, no HTML
// escaping and a trailing newline. v is plain data (strings, bools, ints,
// lists and maps of them): an encoding error panics.
func CanonicalJSON(v any) []byte {
	generic, err := SortedJSON(v)
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
		want := Fails(f.Severity, r.FailOn, f.Allowed)
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
	verdict := VerdictOf(anyFails, slices.ContainsFunc(r.Sources, func(s SourceResult) bool { return s.Verdict == Unavailable }))
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

func rank(sev string) int { return distribution.SeverityRank(sev) }
