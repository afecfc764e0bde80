package vulnreport

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func report() Report {
	return Report{Schema: ReportSchema, FailOn: "high", Verdict: Passed, Sources: []SourceResult{{Name: "npm", Verdict: Passed}},
		Counts: map[string]int{"low": 0, "moderate": 0, "high": 0, "critical": 0}}
}

// A report whose verdict does not follow from its findings is caught, as
// a consumer must recompute it rather than trust it.
func TestDisagreements(t *testing.T) {
	r := report()
	if d := r.Disagreements(func(Finding) bool { return false }); len(d) != 0 {
		t.Fatalf("a clean report disagrees: %q", d)
	}
	r.Findings = []Finding{{ID: "GHSA-1", Package: "p", Version: "1.0.0", Severity: "critical"}}
	r.Counts["critical"] = 1
	d := r.Disagreements(func(Finding) bool { return false })
	want := []string{
		`finding GHSA-1 (p@1.0.0, critical) says fails false under failOn high`,
		`verdict "passed", but findings 1 critical under failOn high make it "failed"`,
	}
	if !slices.Equal(d, want) {
		t.Errorf("Disagreements =\n%q\nwant\n%q", d, want)
	}
	r.Findings[0].Allowed = true
	if d := r.Disagreements(func(Finding) bool { return false }); len(d) == 0 || !strings.Contains(d[0], "says allowed, and no allow entry") {
		t.Errorf("an allowed finding no entry names: %q", d)
	}
	if d := r.Disagreements(func(Finding) bool { return true }); len(d) != 0 {
		t.Errorf("an allowed finding an entry names: %q", d)
	}
}

// Empty lists are written as [] by any encoder, and Marshal is canonical.
func TestMarshal(t *testing.T) {
	r := Report{Schema: ReportSchema, Findings: []Finding{{ID: "x<y"}}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"sources":[]`, `"aliases":[]`, `"paths":[]`, `"counts":{}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("%s lacks %s", b, s)
		}
	}
	if m := r.Marshal(); !strings.HasPrefix(string(m), "{\n  \"allowUnavailable\": false,") || !strings.HasSuffix(string(m), "}\n") || !strings.Contains(string(m), `"id": "x<y"`) {
		t.Errorf("Marshal:\n%s", m)
	}
}
