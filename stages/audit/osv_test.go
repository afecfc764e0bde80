package audit

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/release/vulnreport"
)

const helloDir = "../../testdata/distributions/hello"

func ev(kind, v string) osvEvent {
	e := osvEvent{}
	switch kind {
	case "introduced":
		e.Introduced = &v
	case "fixed":
		e.Fixed = &v
	case "last_affected":
		e.LastAffected = &v
	case "limit":
		e.Limit = &v
	}
	return e
}

func TestOSVEvents(t *testing.T) {
	type E = []osvEvent
	I := func(v string) osvEvent { return ev("introduced", v) }
	F := func(v string) osvEvent { return ev("fixed", v) }
	L := func(v string) osvEvent { return ev("last_affected", v) }
	Lim := func(v string) osvEvent { return ev("limit", v) }
	cases := []struct {
		name     string
		events   E
		text     string
		affected []string
		safe     []string
	}{
		{"from the start", E{I("0"), F("1.2.6")}, "<1.2.6",
			[]string{"0.0.0", "0.0.1-alpha", "1.2.5", "1.2.6-rc.1"}, []string{"1.2.6", "1.2.7", "2.0.0"}},
		{"open ended", E{I("0")}, "*", []string{"0.0.0", "99.0.0", "1.0.0-beta"}, nil},
		{"introduced then fixed", E{I("1.0.0"), F("1.2.6")}, ">=1.0.0 <1.2.6",
			[]string{"1.0.0", "1.2.5", "1.2.6-0"}, []string{"0.9.9", "1.0.0-rc.1", "1.2.6", "2.0.0"}},
		{"last affected", E{I("2.1.0"), L("2.1.4")}, ">=2.1.0 <=2.1.4",
			[]string{"2.1.0", "2.1.4-0", "2.1.4"}, []string{"2.0.1", "2.1.0-rc.1", "2.1.5-0", "2.1.5"}},
		{"two ranges, unsorted", E{F("1.2.6"), I("1.0.0"), F("0.2.4"), I("0")}, "<0.2.4 || >=1.0.0 <1.2.6",
			[]string{"0.0.8", "0.2.3", "1.2.5"}, []string{"0.2.4", "0.9.0", "1.2.6"}},
		{"pre-release events", E{I("1.0.0-alpha.2"), F("1.0.0-beta.11")}, ">=1.0.0-alpha.2 <1.0.0-beta.11",
			[]string{"1.0.0-alpha.2", "1.0.0-alpha.beta", "1.0.0-beta.2"}, []string{"1.0.0-alpha.1", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"}},
		{"introduced and fixed at once", E{I("1.0.0"), F("1.0.0")}, ">=1.0.0 <1.0.0", nil, []string{"0.9.0", "1.0.0", "1.0.1"}},
		{"reintroduced", E{I("0"), F("1.0.0"), I("2.0.0"), F("2.0.3")}, "<1.0.0 || >=2.0.0 <2.0.3",
			[]string{"0.5.0", "2.0.2"}, []string{"1.0.0", "1.9.9", "2.0.3"}},
		{"limit", E{I("0"), Lim("3.0.0")}, "*", []string{"2.9.9"}, []string{"3.0.0", "4.0.0"}},
		{"limit star", E{I("1.0.0"), Lim("*")}, ">=1.0.0", []string{"1.0.0", "9.0.0"}, []string{"0.1.0"}},
	}
	for _, c := range cases {
		evs, err := compileEvents(c.events)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := rangeText(evs); got != c.text {
			t.Errorf("%s: range %q, want %q", c.name, got, c.text)
		}
		for _, list := range []struct {
			vs   []string
			want bool
		}{{c.affected, true}, {c.safe, false}} {
			for _, s := range list.vs {
				v, err := parseVersion(s)
				if err != nil {
					t.Fatal(err)
				}
				if got := affectedBy(v, evs); got != list.want {
					t.Errorf("%s: %s affected = %v, want %v", c.name, s, got, list.want)
				}
			}
		}
	}
	if _, err := compileEvents([]osvEvent{{}}); err == nil {
		t.Error("an empty event compiled")
	}
	if _, err := compileEvents([]osvEvent{I("1.0"), F("2.0.0")}); err == nil {
		t.Error("a partial version compiled")
	}
}

func TestCVSS3(t *testing.T) {
	for vector, want := range map[string]float64{
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H": 9.8,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H": 10.0,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:H/A:H": 9.1,
		"CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:H/I:N/A:N": 5.9,
		"CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:L": 3.3,
		"CVSS:3.0/AV:N/AC:L/PR:L/UI:N/S:C/C:L/I:L/A:N": 6.4,
		"CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N": 6.1,
		"CVSS:3.1/AV:P/AC:H/PR:H/UI:R/S:U/C:N/I:N/A:N": 0,
	} {
		got, err := cvss3Score(vector)
		if err != nil || got != want {
			t.Errorf("%s = %v (%v), want %v", vector, got, err, want)
		}
	}
	for _, bad := range []string{"CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N", "AV:N/AC:L", "CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H"} {
		if _, err := cvss3Score(bad); err == nil {
			t.Errorf("%s scored", bad)
		}
	}
}

func TestOSVSeverity(t *testing.T) {
	for _, c := range []struct {
		rec     string
		want    string
		unrated bool
	}{
		{`{"database_specific": {"severity": "MODERATE"}}`, "moderate", false},
		{`{"database_specific": {"severity": "CRITICAL"}, "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:L"}]}`, "critical", false},
		{`{"severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:L/AC:L/PR:N/UI:R/S:U/C:N/I:N/A:L"}]}`, "low", false},
		{`{"affected": [{"severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:H/A:H"}]}]}`, "critical", false},
		{`{"severity": [{"type": "CVSS_V4", "score": "CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N"}]}`, "high", true},
		{`{"database_specific": {"severity": "UNKNOWN"}}`, "high", true},
		{`{}`, "high", true},
	} {
		var r osvRecord
		if err := json.Unmarshal([]byte(c.rec), &r); err != nil {
			t.Fatal(err)
		}
		if got, unrated := osvSeverityOf(&r); got != c.want || unrated != c.unrated {
			t.Errorf("%s: %s unrated=%v, want %s %v", c.rec, got, unrated, c.want, c.unrated)
		}
	}
}

// helloPackages is what hello's lock installs.
func helloPackages(t *testing.T) []Package {
	t.Helper()
	pl, _, err := distribution.ReadPackageLock(filepath.Join(helloDir, "runtime", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	return PackagesFromLock(pl)
}

var osvOnly = distribution.Audit{Sources: []string{"osv:osv"}, FailOn: "high"}

// hello's offline snapshot knows advisories for hello's packages, none of
// which affect the locked versions.
func TestHelloSnapshotAuditsClean(t *testing.T) {
	pkgs := helloPackages(t)
	r, err := Audit(context.Background(), pkgs, osvOnly, Options{DistDir: helloDir})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Passed || len(r.Findings) != 0 || r.Failure() != nil {
		t.Fatalf("hello: %s", r.Marshal())
	}
	if s := r.Sources[0]; s.Name != "osv:osv" || s.Verdict != Passed || s.Reason != "6 records" {
		t.Errorf("source %+v", s)
	}
	if r.Packages != 4 {
		t.Errorf("packages = %d", r.Packages)
	}
}

// The same snapshot finds what it should when the versions are others.
func TestHelloSnapshotMatches(t *testing.T) {
	pkgs := []Package{
		{Name: "hello-format", Version: "0.9.0", Path: "node_modules/hello-format", Local: true},
		{Name: "hello-banner", Version: "2.1.4", Path: "node_modules/hello-banner"},
		{Name: "hello-greeting", Version: "0.3.0-beta.1", Path: "node_modules/hello-greeting"},
		{Name: "hello-cli", Version: "1.0.0", Path: "node_modules/hello-cli"},
		{Name: "minimist", Version: "1.2.5", Path: "node_modules/minimist"},
		{Name: "minimist", Version: "0.0.8", Path: "node_modules/mkdirp/node_modules/minimist"},
		{Name: "minimist", Version: "1.2.6", Path: "node_modules/x/node_modules/minimist"},
	}
	r, err := Audit(context.Background(), pkgs, osvOnly, Options{DistDir: helloDir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range r.Findings {
		got = append(got, f.Severity+" "+f.ID+" "+f.Package+"@"+f.Version+" "+f.Range)
	}
	want := []string{
		"critical GHSA-xvch-5gv4-984h minimist@0.0.8 <0.2.4 || >=1.0.0 <1.2.6",
		"critical GHSA-xvch-5gv4-984h minimist@1.2.5 <0.2.4 || >=1.0.0 <1.2.6",
		"high HELLO-2026-0001 hello-format@0.9.0 <1.0.0",
		"moderate HELLO-2026-0003 hello-greeting@0.3.0-beta.1 0.2.0 || 0.3.0-beta.1",
		"low HELLO-2026-0002 hello-banner@2.1.4 >=2.1.0 <=2.1.4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f := r.Findings[0]
	if f.URL != "https://nvd.nist.gov/vuln/detail/CVE-2021-44906" || f.Title != "Prototype Pollution in minimist" ||
		strings.Join(f.Aliases, ",") != "CVE-2021-44906" || f.Source != "osv:osv" || !f.Fails ||
		strings.Join(f.Paths, ",") != "node_modules/mkdirp/node_modules/minimist" {
		t.Errorf("minimist finding %+v", f)
	}
	if r.Verdict != Failed || r.Counts["critical"] != 2 || r.Counts["high"] != 1 || r.Counts["moderate"] != 1 || r.Counts["low"] != 1 {
		t.Errorf("verdict %s counts %v", r.Verdict, r.Counts)
	}
	err = r.Failure()
	if err == nil || !strings.HasPrefix(err.Error(), "POLICY_DENIED: vulnerability audit: minimist@0.0.8 is affected by GHSA-xvch-5gv4-984h (Prototype Pollution in minimist)") ||
		!strings.Contains(err.Error(), "and 2 more failing findings") {
		t.Errorf("Failure() = %v", err)
	}
}

// zipDir packs hello's snapshot as osv.dev publishes databases.
func zipDir(t *testing.T, src, dst string) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, _ := zw.Create(e.Name())
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestOSVDatabases(t *testing.T) {
	dir := t.TempDir()
	zipDir(t, filepath.Join(helloDir, "osv"), filepath.Join(dir, "all.zip"))
	pkgs := []Package{{Name: "hello-format", Version: "0.1.0", Path: "node_modules/hello-format"}}
	audit := func(src string) *vulnreport.Report {
		t.Helper()
		r, err := Audit(context.Background(), pkgs, distribution.Audit{Sources: []string{src}, FailOn: "critical"}, Options{DistDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := audit("osv:all.zip")
	if r.Verdict != Passed || len(r.Findings) != 1 || r.Findings[0].ID != "HELLO-2026-0001" || r.Findings[0].Fails {
		t.Errorf("zip: %s", r.Marshal())
	}

	for name, setup := range map[string]func(){
		"missing": func() {},
		"corrupt zip": func() {
			os.WriteFile(filepath.Join(dir, "db"), []byte("PK not really"), 0o644)
		},
		"not a record": func() {
			os.MkdirAll(filepath.Join(dir, "db"), 0o755)
			os.WriteFile(filepath.Join(dir, "db", "X-1.json"), []byte(`{"id": "X-1", "affected": [`), 0o644)
		},
		"no id": func() {
			os.MkdirAll(filepath.Join(dir, "db"), 0o755)
			os.WriteFile(filepath.Join(dir, "db", "X-1.json"), []byte(`{"summary": "?"}`), 0o644)
		},
		"empty": func() {
			os.MkdirAll(filepath.Join(dir, "db"), 0o755)
			os.WriteFile(filepath.Join(dir, "db", "README"), []byte("nothing"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "db"))
			setup()
			r := audit("osv:db")
			if r.Verdict != Unavailable || r.Sources[0].Verdict != Unavailable || !strings.Contains(r.Sources[0].Reason, "the OSV database db") {
				t.Fatalf("%s", r.Marshal())
			}
			t.Log(r.Sources[0].Reason)
			err := r.Failure()
			if err == nil || !strings.Contains(err.Error(), "the source osv:db is unavailable") || !strings.Contains(err.Error(), "audit.allow_unavailable") {
				t.Errorf("Failure() = %v", err)
			}
			r.AllowUnavailable = true
			if r.Failure() != nil {
				t.Error("allow_unavailable does not let it pass")
			}
		})
	}
}

// An entry whose range cannot be evaluated counts as affecting, with a
// note.
func TestOSVUnreadableRange(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "X-1.json"), []byte(`{"id": "X-1", "affected": [{"package": {"ecosystem": "npm", "name": "a"},
		"ranges": [{"type": "SEMVER", "events": [{"introduced": "1.x"}]}]}, {"package": {"ecosystem": "npm", "name": "b"},
		"ranges": [{"type": "GIT", "repo": "https://example.invalid/b", "events": [{"introduced": "abc123"}]}]}]}`), 0o644)
	r, err := Audit(context.Background(), []Package{{Name: "a", Version: "2.0.0"}, {Name: "b", Version: "2.0.0"}},
		distribution.Audit{Sources: []string{"osv:."}, FailOn: "high"}, Options{DistDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Package != "a" || !r.Findings[0].Unrated || r.Findings[0].Severity != "high" ||
		!strings.Contains(r.Sources[0].Reason, "could not be evaluated: X-1 a@2.0.0") {
		t.Errorf("%s", r.Marshal())
	}
}
