package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/audit/audittest"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/release/vulnreport"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// policyServer answers one advisory of each severity for lodash 4.17.20.
func policyServer(t *testing.T) *audittest.Server {
	s := audittest.NewServer(t)
	for i, sev := range []string{"low", "moderate", "high", "critical"} {
		s.AddAdvisory("lodash", audittest.Advisory{ID: 100 + i, URL: "https://github.com/advisories/GHSA-" + strings.Repeat(sev[:1], 4) + "-xxxx-xxxx",
			Title: sev + " flaw", Severity: sev, VulnerableVersions: "<4.17.21"})
	}
	return s
}

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPolicyFailOn(t *testing.T) {
	s := policyServer(t)
	pkgs := registryPkgs()
	for _, c := range []struct {
		failOn  string
		failing []string
	}{
		{"low", []string{"GHSA-cccc-xxxx-xxxx", "GHSA-hhhh-xxxx-xxxx", "GHSA-mmmm-xxxx-xxxx", "GHSA-llll-xxxx-xxxx"}},
		{"moderate", []string{"GHSA-cccc-xxxx-xxxx", "GHSA-hhhh-xxxx-xxxx", "GHSA-mmmm-xxxx-xxxx"}},
		{"high", []string{"GHSA-cccc-xxxx-xxxx", "GHSA-hhhh-xxxx-xxxx"}},
		{"critical", []string{"GHSA-cccc-xxxx-xxxx"}},
		{"", []string{"GHSA-cccc-xxxx-xxxx", "GHSA-hhhh-xxxx-xxxx"}}, // high by default
	} {
		r, err := Audit(context.Background(), pkgs, distribution.Audit{Sources: []string{"npm"}, FailOn: c.failOn}, Options{Registry: s.URL, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var failing []string
		for _, f := range r.Findings {
			if f.Fails {
				failing = append(failing, f.ID)
			}
		}
		if strings.Join(failing, " ") != strings.Join(c.failing, " ") || r.Verdict != Failed || len(r.Findings) != 4 {
			t.Errorf("fail_on %q: failing %v, want %v (verdict %s)", c.failOn, failing, c.failing, r.Verdict)
		}
	}
	if _, err := Audit(context.Background(), pkgs, distribution.Audit{FailOn: "severe"}, Options{Registry: s.URL}); err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID") {
		t.Errorf("bad fail_on: %v", err)
	}
	if _, err := Audit(context.Background(), pkgs, distribution.Audit{Sources: []string{"snyk"}}, Options{Registry: s.URL}); err == nil || !strings.Contains(err.Error(), `"snyk"`) {
		t.Errorf("bad source: %v", err)
	}
}

func TestPolicyAllow(t *testing.T) {
	s := policyServer(t)
	pol := distribution.Audit{Sources: []string{"npm"}, FailOn: "high", Allow: []distribution.Allow{
		{ID: "ghsa-cccc-xxxx-xxxx", Reason: "not reachable", Expires: date("2026-06-01")}, // the last day: still holds
		{ID: "102", Reason: "by npm number", Expires: date("2027-01-01")},                 // the high one, by alias
	}}
	r, err := Audit(context.Background(), registryPkgs(), pol, Options{Registry: s.URL, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Passed || r.Failure() != nil {
		t.Fatalf("allowed findings fail: %s", r.Marshal())
	}
	for _, f := range r.Findings {
		switch f.ID {
		case "GHSA-cccc-xxxx-xxxx":
			if !f.Allowed || f.AllowReason != "not reachable" || f.Fails {
				t.Errorf("critical %+v", f)
			}
		case "GHSA-hhhh-xxxx-xxxx":
			if !f.Allowed || f.AllowReason != "by npm number" {
				t.Errorf("high %+v", f)
			}
		default:
			if f.Allowed || f.Fails {
				t.Errorf("below fail_on %+v", f)
			}
		}
	}
	// Counts include allowed findings.
	if r.Counts["critical"] != 1 || r.Counts["low"] != 1 {
		t.Errorf("counts %v", r.Counts)
	}
}

func TestPolicyExpiredAllow(t *testing.T) {
	s := policyServer(t)
	pol := distribution.Audit{Sources: []string{"npm"}, FailOn: "critical", Allow: []distribution.Allow{
		{ID: "GHSA-cccc-xxxx-xxxx", Reason: "waiting for 4.17.21", Expires: date("2026-05-31")},
		{ID: "GHSA-llll-xxxx-xxxx", Reason: "below fail_on anyway", Expires: date("2020-01-01")},
	}}
	r, err := Audit(context.Background(), registryPkgs(), pol, Options{Registry: s.URL, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Findings[0]
	if r.Verdict != Failed || f.ID != "GHSA-cccc-xxxx-xxxx" || f.Allowed || !f.Fails || f.AllowExpired != "2026-05-31" {
		t.Fatalf("%s", r.Marshal())
	}
	err = r.Failure()
	want := `POLICY_DENIED: vulnerability audit: the allow entry for GHSA-cccc-xxxx-xxxx expired on 2026-05-31, and lodash@4.17.20 is still affected by GHSA-cccc-xxxx-xxxx (critical flaw), https://github.com/advisories/GHSA-cccc-xxxx-xxxx: critical severity, at or above audit.fail_on "critical"; upgrade the package, or renew the entry's expires if the reason ("waiting for 4.17.21") still holds`
	if err == nil || err.Error() != want {
		t.Errorf("Failure() =\n%v\nwant\n%s", err, want)
	}
	// An expired entry for a finding below fail_on fails nothing.
	for _, f := range r.Findings {
		if f.ID == "GHSA-llll-xxxx-xxxx" && (f.Fails || f.AllowExpired != "2020-01-01") {
			t.Errorf("low %+v", f)
		}
	}
}

func TestFailureNamesAdvisory(t *testing.T) {
	s := policyServer(t)
	r, _ := Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: s.URL, Now: now})
	err := r.Failure()
	want := `POLICY_DENIED: vulnerability audit: lodash@4.17.20 is affected by GHSA-cccc-xxxx-xxxx (critical flaw), https://github.com/advisories/GHSA-cccc-xxxx-xxxx: critical severity, at or above audit.fail_on "high"; upgrade the package, or accept the advisory with an allow "GHSA-cccc-xxxx-xxxx" block (reason, expires) in the audit block of distribution.hcl (and 1 more failing finding in vulnerabilities.json)`
	if err == nil || err.Error() != want {
		t.Errorf("Failure() =\n%v\nwant\n%s", err, want)
	}
}

// A failing finding wins over an unavailable source; allow_unavailable
// lets an unavailable source through but never a failing finding.
func TestVerdictOrder(t *testing.T) {
	s := policyServer(t)
	pol := distribution.Audit{Sources: []string{"npm", "osv:missing"}, FailOn: "high", AllowUnavailable: true}
	r, _ := Audit(context.Background(), registryPkgs(), pol, Options{Registry: s.URL, DistDir: t.TempDir()})
	if r.Verdict != Failed || r.Sources[1].Verdict != Unavailable || r.Failure() == nil {
		t.Errorf("%s", r.Marshal())
	}
	pol.FailOn = "critical"
	pol.Allow = []distribution.Allow{{ID: "GHSA-cccc-xxxx-xxxx", Reason: "x", Expires: date("2030-01-01")}}
	r, _ = Audit(context.Background(), registryPkgs(), pol, Options{Registry: s.URL, DistDir: t.TempDir(), Now: now})
	if r.Verdict != Unavailable || r.Failure() != nil {
		t.Errorf("%s: %v", r.Marshal(), r.Failure())
	}
	pol.AllowUnavailable = false
	r, _ = Audit(context.Background(), registryPkgs(), pol, Options{Registry: s.URL, DistDir: t.TempDir(), Now: now})
	if err := r.Failure(); err == nil || !strings.Contains(err.Error(), "the source osv:missing is unavailable: the OSV database missing cannot be read") {
		t.Errorf("Failure() = %v", err)
	}
}

// The same advisory from npm and an OSV database is one finding, reported
// by both.
func TestMergeSources(t *testing.T) {
	s := audittest.NewServer(t)
	s.AddAdvisory("minimist", audittest.Advisory{ID: 1066, URL: "https://github.com/advisories/GHSA-xvch-5gv4-984h", Title: "Prototype Pollution in minimist", Severity: "high", VulnerableVersions: ">=1.0.0 <1.2.6"})
	pkgs := []Package{{Name: "minimist", Version: "1.2.5", Path: "node_modules/minimist"}}
	pol := distribution.Audit{Sources: []string{"npm", "osv:osv"}, FailOn: "high"}
	r, err := Audit(context.Background(), pkgs, pol, Options{Registry: s.URL, DistDir: helloDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 {
		t.Fatalf("%s", r.Marshal())
	}
	f := r.Findings[0]
	// The higher severity wins (the OSV record says critical).
	if f.ID != "GHSA-xvch-5gv4-984h" || f.Source != "npm, osv:osv" || f.Severity != "critical" || strings.Join(f.Aliases, " ") != "1066 CVE-2021-44906" {
		t.Errorf("%+v", f)
	}
	if r.Sources[0].Verdict != Failed || r.Sources[1].Verdict != Failed || r.Counts["critical"] != 1 {
		t.Errorf("%s", r.Marshal())
	}
}

func TestReportMarshal(t *testing.T) {
	r, err := Audit(context.Background(), helloPackages(t), osvOnly, Options{DistDir: helloDir})
	if err != nil {
		t.Fatal(err)
	}
	raw := r.Marshal()
	want := `{
  "allowUnavailable": false,
  "counts": {
    "critical": 0,
    "high": 0,
    "low": 0,
    "moderate": 0
  },
  "failOn": "high",
  "findings": [],
  "packages": 4,
  "schema": "piship-vulnerabilities/v1",
  "sources": [
    {
      "findings": 0,
      "name": "osv:osv",
      "reason": "6 records",
      "verdict": "passed"
    }
  ],
  "verdict": "passed"
}
`
	if string(raw) != want {
		t.Errorf("Marshal:\n%s\nwant\n%s", raw, want)
	}
	// The same inputs give the same bytes, findings included.
	dir := t.TempDir()
	os.CopyFS(dir, os.DirFS(filepath.Join(helloDir, "osv")))
	pkgs := []Package{{Name: "minimist", Version: "1.2.5", Path: "b"}, {Name: "hello-format", Version: "0.1.0", Path: "a"}, {Name: "minimist", Version: "1.2.5", Path: "a/b"}}
	a, _ := Audit(context.Background(), pkgs, distribution.Audit{Sources: []string{"osv:."}}, Options{DistDir: dir})
	b, _ := Audit(context.Background(), pkgs, distribution.Audit{Sources: []string{"osv:."}}, Options{DistDir: dir})
	if !bytes.Equal(a.Marshal(), b.Marshal()) {
		t.Error("two audits differ")
	}
	var back vulnreport.Report
	if err := json.Unmarshal(a.Marshal(), &back); err != nil || len(back.Findings) != 2 || back.Findings[0].Paths[1] != "b" {
		t.Errorf("round trip: %v %+v", err, back)
	}
	if bytes.Contains(a.Marshal(), []byte(`\u003c`)) {
		t.Error("HTML-escaped")
	}
	// Any encoder writes the same document: sorted keys, [] for empty.
	for _, v := range []any{r, *r, a} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		want := r.Marshal()
		if v == any(a) {
			want = a.Marshal()
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("json.Encoder gives\n%s\nMarshal gives\n%s", buf.Bytes(), want)
		}
	}
	sr := &SignatureReport{Schema: SignatureSchema, Verdict: Passed}
	if b, _ := json.Marshal(sr); string(b) != `{"bundled":0,"external":[],"invalid":[],"local":0,"missing":[],"reason":"","registry":"","schema":"piship-signatures/v1","verdict":"passed","verified":0}` {
		t.Errorf("signature report JSON %s", b)
	}
}
