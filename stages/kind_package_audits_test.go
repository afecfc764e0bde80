package stages

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
)

// A distribution that vendors no packages has no package lock to audit:
// its release says not-applicable with the reason, never passed, and the
// report it writes for release.json passes the release rule.
func TestPackageAuditsWithoutPackagesAreNotApplicable(t *testing.T) {
	dir, err := filepath.Abs("../testdata/distributions")
	if err != nil {
		t.Fatal(err)
	}
	inv := &stage.Invocation{Pipeline: "release", Name: "package_audits", Dir: dir, Log: io.Discard, Getenv: func(string) string { return "" }}
	out, err := PackageAudits{}.Run(context.Background(), inv, PackageAuditsConfig{Distribution: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Verdict != releasejson.AuditNotApplicable || out.Locks != 0 {
		t.Fatalf("verdict %q with %d locks, want not-applicable with 0", out.Verdict, out.Locks)
	}
	var rep releasejson.PackageAudits
	if err := json.Unmarshal([]byte(out.Report), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != out.Verdict || rep.Reason == "" {
		t.Fatalf("report %s: want the verdict and a reason", out.Report)
	}
	if err := releasejson.CheckPackageAudits(rep); err != nil {
		t.Fatalf("the stage's own report breaks the release rule: %v", err)
	}
}

// withPackage is a copy of hello that vendors the Pi package pi-x, whose
// own lock holds pi-x 1.0.0 and leftpad 1.0.0 (audited from the lock
// only: nothing is installed), with audit sources srcs.
func withPackage(t *testing.T, srcs string) string {
	t.Helper()
	src, err := filepath.Abs("../testdata/distributions/hello")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hello")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	hcl := filepath.Join(dir, "distribution.hcl")
	b, _ := os.ReadFile(hcl)
	s := strings.Replace(string(b), `sources = ["osv:osv"]`, "sources = "+srcs+"\n    allow_unavailable = true", 1)
	s = s[:strings.LastIndex(s, "}")] + "  package \"pi-x\" {}\n}\n"
	pkg := filepath.Join(dir, "packages", "pi-x")
	os.MkdirAll(pkg, 0o755)
	files := map[string]string{
		hcl:                                     s,
		filepath.Join(pkg, "package.json"):      `{"name": "p", "private": true, "dependencies": {"pi-x": "1.0.0"}}`,
		filepath.Join(pkg, "package-lock.json"): `{"name": "p", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "p", "dependencies": {"pi-x": "1.0.0"}}, "node_modules/pi-x": {"version": "1.0.0", "resolved": "https://registry.npmjs.org/pi-x/-/pi-x-1.0.0.tgz", "integrity": "sha512-AAAA", "dependencies": {"leftpad": "1.0.0"}}, "node_modules/leftpad": {"version": "1.0.0", "resolved": "https://registry.npmjs.org/leftpad/-/leftpad-1.0.0.tgz", "integrity": "sha512-BBBB"}}}`,
		filepath.Join(dir, "osv", "LEFTPAD-1.json"): `{"id": "LEFTPAD-1", "modified": "2026-01-01T00:00:00Z", "summary": "leftpad 1.0.0 pads wrongly (synthetic)",
			"affected": [{"package": {"ecosystem": "npm", "name": "leftpad"}, "versions": ["1.0.0"]}], "database_specific": {"severity": "HIGH"}}`,
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A vendored package's own lock is audited with the distribution's
// policy: an advisory on a package of that lock fails the release naming
// the package and its lock; without it the verdict is passed with the
// lock read; a source that cannot be consulted is unavailable with the
// reason (allowed here), never passed.
func TestPackageAuditsAuditEachPackageLock(t *testing.T) {
	run := func(dir string) (PackageAuditsOutputs, releasejson.PackageAudits, error) {
		inv := &stage.Invocation{Pipeline: "release", Name: "package_audits", Dir: filepath.Dir(dir), Log: io.Discard, Getenv: func(string) string { return "" }}
		out, err := PackageAudits{}.Run(context.Background(), inv, PackageAuditsConfig{Distribution: filepath.Base(dir)})
		var rep releasejson.PackageAudits
		if err == nil {
			if jerr := json.Unmarshal([]byte(out.Report), &rep); jerr != nil {
				t.Fatal(jerr)
			}
			if cerr := releasejson.CheckPackageAudits(rep); cerr != nil {
				t.Fatalf("the stage's report breaks the release rule: %v", cerr)
			}
		}
		return out, rep, err
	}
	dir := withPackage(t, `["osv:osv"]`)
	if _, _, err := run(dir); err == nil || !strings.Contains(err.Error(), "Pi package pi-x (packages/pi-x/package-lock.json)") || !strings.Contains(err.Error(), "LEFTPAD-1") {
		t.Fatalf("an advisory in the package's lock: %v", err)
	}
	os.Remove(filepath.Join(dir, "osv", "LEFTPAD-1.json"))
	out, rep, err := run(dir)
	if err != nil || out.Verdict != releasejson.AuditPassed || out.Locks != 1 || len(rep.Packages) != 1 ||
		rep.Packages[0].Lock != "packages/pi-x/package-lock.json" || rep.Packages[0].Packages != 2 || rep.Packages[0].Verdict != releasejson.AuditPassed {
		t.Fatalf("no advisory: %+v %+v %v", out, rep, err)
	}
	// An npm registry that has no bulk advisory endpoint.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusMethodNotAllowed) }))
	defer srv.Close()
	dir = withPackage(t, `["npm"]`)
	os.WriteFile(filepath.Join(dir, "packages", "pi-x", ".npmrc"), []byte("registry="+srv.URL+"/\n"), 0o644)
	out, rep, err = run(dir)
	if err != nil || out.Verdict != releasejson.AuditUnavailable || rep.Packages[0].Verdict != releasejson.AuditUnavailable || rep.Packages[0].Reason == "" || rep.Reason == "" {
		t.Fatalf("an unreachable advisory endpoint: %+v %+v %v", out, rep, err)
	}
	if !strings.Contains(rep.Packages[0].Reason, "405") {
		t.Errorf("the reason does not name the local registry's answer: %s", rep.Packages[0].Reason)
	}
}
