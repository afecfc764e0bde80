package stages

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
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
