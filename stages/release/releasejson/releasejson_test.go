package releasejson

import (
	"strings"
	"testing"
)

func pkg(name, verdict string) PackageAudit {
	return PackageAudit{Name: name, Lock: "packages/" + name + "/package-lock.json", LockSHA256: strings.Repeat("c", 64), Verdict: verdict}
}

// A release may not claim package audits it never ran: passed (or failed)
// needs a lock read, not-applicable none, and every verdict that is not
// about audits carries a reason.
func TestCheckPackageAudits(t *testing.T) {
	for _, c := range []struct {
		a       PackageAudits
		problem string // "" when accepted
	}{
		{PackageAudits{Verdict: "passed", Locks: 2, Packages: []PackageAudit{pkg("a", "passed"), pkg("b", "passed")}}, ""},
		{PackageAudits{Verdict: "failed", Locks: 1, Packages: []PackageAudit{pkg("a", "failed")}}, ""},
		{PackageAudits{Verdict: "not-applicable", Reason: "no vendored packages"}, ""},
		{PackageAudits{Verdict: "unavailable", Locks: 1, Reason: "audit endpoint unreachable", Packages: []PackageAudit{pkg("a", "unavailable")}}, ""},
		{PackageAudits{Verdict: "passed", Locks: 2, Packages: []PackageAudit{pkg("a", "passed")}}, "names 1 package lock but says 2"},
		{PackageAudits{Verdict: "passed", Locks: 1, Packages: []PackageAudit{{Name: "a", Verdict: "passed"}}}, "names no lock and its digest"},
		{PackageAudits{Verdict: "passed", Locks: 1, Packages: []PackageAudit{pkg("a", "not-applicable")}}, `has verdict "not-applicable"`},
		{PackageAudits{Verdict: "unavailable", Reason: "x"}, "with no package lock read"},
		{PackageAudits{Verdict: "passed", Locks: 0}, "needs at least one audited lock"},
		{PackageAudits{Verdict: "failed"}, "needs at least one audited lock"},
		{PackageAudits{Verdict: "not-applicable", Locks: 1, Reason: "x"}, "1 package lock was read"},
		{PackageAudits{Verdict: "not-applicable"}, "without a reason"},
		{PackageAudits{Verdict: "unavailable", Locks: 1}, "without a reason"},
		{PackageAudits{Verdict: "ok", Locks: 1}, `"ok": expected passed`},
		{PackageAudits{}, `"": expected passed`},
	} {
		err := CheckPackageAudits(c.a)
		switch {
		case c.problem == "" && err != nil:
			t.Errorf("%+v refused: %v", c.a, err)
		case c.problem != "" && (err == nil || !strings.Contains(err.Error(), c.problem)):
			t.Errorf("%+v: error %v, want one saying %q", c.a, err, c.problem)
		}
	}
}

// release.json's strict reader applies the rule: a release.json that says
// passed with no lock read is refused as a release-json problem.
func TestParseRefusesAuditsThatNeverRan(t *testing.T) {
	base := `{"schema":"piship-release/v1","distribution":{"id":"hello","version":"1.0.0","command":"hello"},"lockSha256":"` +
		strings.Repeat("a", 64) + `","target":"linux-x64","created":"2026-01-01T00:00:00Z","qualification":"qualified",` +
		`"payload":{"path":"payload/","inventorySha256":"` + strings.Repeat("b", 64) + `","files":1},`
	if _, err := Parse([]byte(base + `"packageAudits":{"verdict":"passed","locks":0}}`)); err == nil || !strings.Contains(err.Error(), "at least one audited lock") {
		t.Fatalf("passed without a lock: %v, want a refusal", err)
	}
	if _, err := Parse([]byte(base + `"packageAudits":{"verdict":"not-applicable","locks":0,"reason":"no vendored packages"}}`)); err != nil {
		t.Fatalf("not-applicable with a reason refused: %v", err)
	}
}
