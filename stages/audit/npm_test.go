package audit

import (
	"context"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/audit/audittest"
	"piship.dev/piship/stages/distribution"
)

func TestMain(m *testing.M) {
	retryDelays = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}
	maxRetryAfter = 50 * time.Millisecond
	os.Exit(m.Run())
}

var npmOnly = distribution.Audit{Sources: []string{"npm"}, FailOn: "high"}

// registryPkgs is a lock's worth of packages: lodash twice (two versions),
// a scoped package, a pre-release, and local ones that must never be named
// to the registry.
func registryPkgs() []Package {
	return []Package{
		{Name: "@scope/tool", Version: "2.0.0-rc.1", Path: "node_modules/@scope/tool", Integrity: "sha512-dG9vbA=="},
		{Name: "lodash", Version: "4.17.20", Path: "node_modules/lodash", Integrity: "sha512-bG9kYXNoMjA="},
		{Name: "lodash", Version: "4.17.21", Path: "node_modules/x/node_modules/lodash", Integrity: "sha512-bG9kYXNoMjE="},
		{Name: "minimist", Version: "1.2.8", Path: "node_modules/minimist", Integrity: "sha512-bWluaW1pc3Q="},
		{Name: "private-lib", Version: "1.0.0", Path: "node_modules/private-lib", Local: true, Resolved: "file:vendor/private-lib-1.0.0.tgz"},
		{Name: "linked", Version: "0.1.0", Path: "node_modules/linked", Local: true, Resolved: "packages/linked"},
	}
}

func TestNPMBulk(t *testing.T) {
	s := audittest.NewServer(t)
	s.AddAdvisory("lodash", audittest.Advisory{ID: 1523, URL: "https://github.com/advisories/GHSA-35jh-r3h4-6jhm", Title: "Command Injection in lodash", Severity: "high", VulnerableVersions: "<4.17.21"})
	s.AddAdvisory("lodash", audittest.Advisory{ID: 1673, URL: "https://github.com/advisories/GHSA-29mw-wpgm-hmr9", Title: "ReDoS in lodash", Severity: "moderate", VulnerableVersions: ">=4.0.0 <4.17.21"})
	s.AddAdvisory("minimist", audittest.Advisory{ID: 1179, URL: "https://github.com/advisories/GHSA-vh95-rmgr-6w4m", Title: "Prototype Pollution", Severity: "moderate", VulnerableVersions: "<0.2.1 || >=1.0.0 <1.2.3"})
	// npm audit counts a pre-release of a vulnerable version.
	s.AddAdvisory("@scope/tool", audittest.Advisory{ID: 9001, URL: "https://github.com/advisories/GHSA-aaaa-bbbb-cccc", Title: "Tool flaw", Severity: "critical", VulnerableVersions: "<2.0.0"})
	s.AddAdvisory("private-lib", audittest.Advisory{ID: 1, URL: "https://github.com/advisories/GHSA-pppp-pppp-pppp", Severity: "critical", VulnerableVersions: "*"})

	r, err := Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	reqs := s.BulkRequests()
	want := map[string][]string{"@scope/tool": {"2.0.0-rc.1"}, "lodash": {"4.17.20", "4.17.21"}, "minimist": {"1.2.8"}}
	if len(reqs) != 1 || !reflect.DeepEqual(reqs[0], want) {
		t.Errorf("bulk requests %v, want [%v]: local packages are never named", reqs, want)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Severity+" "+f.ID+" "+f.Package+"@"+f.Version+" fails="+boolStr(f.Fails))
	}
	wantF := []string{
		"critical GHSA-aaaa-bbbb-cccc @scope/tool@2.0.0-rc.1 fails=true",
		"high GHSA-35jh-r3h4-6jhm lodash@4.17.20 fails=true",
		"moderate GHSA-29mw-wpgm-hmr9 lodash@4.17.20 fails=false",
	}
	if strings.Join(got, "\n") != strings.Join(wantF, "\n") {
		t.Errorf("findings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantF, "\n"))
	}
	f := r.Findings[1]
	if f.Title != "Command Injection in lodash" || f.URL != "https://github.com/advisories/GHSA-35jh-r3h4-6jhm" || f.Range != "<4.17.21" ||
		!reflect.DeepEqual(f.Aliases, []string{"1523"}) || !reflect.DeepEqual(f.Paths, []string{"node_modules/lodash"}) || f.Source != "npm" {
		t.Errorf("lodash finding %+v", f)
	}
	if r.Verdict != Failed || r.Sources[0].Verdict != Failed || r.Sources[0].Findings != 3 ||
		!reflect.DeepEqual(r.Counts, map[string]int{"low": 0, "moderate": 1, "high": 1, "critical": 1}) {
		t.Errorf("report: %s", r.Marshal())
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestNPMBulkNoRegistryPackages(t *testing.T) {
	s := audittest.NewServer(t)
	local := []Package{{Name: "a", Version: "1.0.0", Local: true}}
	r, err := Audit(context.Background(), local, npmOnly, Options{Registry: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Passed || r.Sources[0].Reason != "no registry packages" || s.Requests(audittest.Bulk) != 0 {
		t.Errorf("%s (%d requests)", r.Marshal(), s.Requests(audittest.Bulk))
	}
}

// Every way the bulk endpoint can fail leaves the source unavailable,
// never passed.
func TestNPMBulkUnavailable(t *testing.T) {
	refused := httptest.NewServer(nil)
	refusedURL := refused.URL
	refused.Close()
	cases := []struct {
		name   string
		fault  audittest.Fault
		url    string // instead of the test server's
		reason string
	}{
		{"malformed JSON", audittest.Malformed, "", "malformed bulk advisory answer"},
		{"timeout", audittest.Hang, "", "timed out after 200ms"},
		{"500", audittest.ServerError, "", "answered 500 Internal Server Error"},
		{"503", audittest.Unavailable, "", "answered 503 Service Unavailable"},
		{"404", audittest.NotFound, "", "answered 404 Not Found: it has no bulk advisory endpoint"},
		{"connection refused", audittest.OK, refusedURL, "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := audittest.NewServer(t)
			s.SetFault(audittest.Bulk, c.fault)
			reg := s.URL
			if c.url != "" {
				reg = c.url
			}
			start := time.Now()
			r, err := Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: reg, Timeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %s", d)
			}
			src := r.Sources[0]
			if r.Verdict != Unavailable || src.Verdict != Unavailable || !strings.Contains(src.Reason, c.reason) || len(r.Findings) != 0 {
				t.Fatalf("report %s\nwant a reason with %q", r.Marshal(), c.reason)
			}
			t.Log(src.Reason)
			if !strings.Contains(src.Reason, "the registry at "+strings.TrimSuffix(reg, "/")) {
				t.Errorf("reason does not name the registry: %s", src.Reason)
			}
			err = r.Failure()
			if err == nil || !strings.HasPrefix(err.Error(), "POLICY_DENIED: vulnerability audit: the source npm is unavailable: ") {
				t.Errorf("Failure() = %v", err)
			}
		})
	}
}

// 429 and 5xx are retried briefly.
func TestNPMBulkRetries(t *testing.T) {
	s := audittest.NewServer(t)
	s.FailNext(audittest.Bulk, audittest.Unavailable, 2)
	r, err := Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Passed || s.Requests(audittest.Bulk) != 3 {
		t.Errorf("verdict %s after %d requests", r.Verdict, s.Requests(audittest.Bulk))
	}
}

func TestNPMMalformedAdvisories(t *testing.T) {
	s := audittest.NewServer(t)
	s.AddAdvisory("lodash", audittest.Advisory{Title: "no id, no url", Severity: "high", VulnerableVersions: "*"})
	r, _ := Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: s.URL})
	if r.Verdict != Unavailable || !strings.Contains(r.Sources[0].Reason, "neither an id nor a GitHub advisory URL") {
		t.Errorf("%s", r.Marshal())
	}

	// A range npm cannot evaluate counts as affected, and says so; no
	// severity counts as high.
	s = audittest.NewServer(t)
	s.AddAdvisory("minimist", audittest.Advisory{ID: 77, Title: "odd", VulnerableVersions: ">=1.x.y.z"})
	r, _ = Audit(context.Background(), registryPkgs(), npmOnly, Options{Registry: s.URL})
	if r.Verdict != Failed || len(r.Findings) != 1 || r.Findings[0].ID != "77" || r.Findings[0].Severity != "high" || !r.Findings[0].Unrated ||
		!strings.Contains(r.Sources[0].Reason, "could not be evaluated: 77 minimist@1.2.8") {
		t.Errorf("%s", r.Marshal())
	}
}
