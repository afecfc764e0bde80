package distribution

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"piship.dev/piship/cache/canon"
)

// policyBlocks sets every attribute of the audit, signatures, smoke and
// updates blocks.
const policyBlocks = `
  audit {
    sources           = ["npm", "osv:./osv/"]
    fail_on           = "moderate"
    allow_unavailable = true
    allow "GHSA-aaaa-bbbb-cccc" {
      reason  = "not reachable from our entry"
      expires = "2027-06-30"
    }
    allow "CVE-2026-1234" {
      reason  = "fixed by our own patch"
      expires = "2026-12-31"
    }
  }
  signatures {
    allow_unavailable = true
  }
  smoke "version" {
    args    = ["--version"]
    expect  = "^1\\.0\\.0$"
    timeout = "60s"
  }
  smoke "help" {
    args   = ["--help"]
    expect = "Usage: hello"
  }
  updates {
    channel     = "beta"
    source      = "https://example.com/hello/"
    root_sha256 = "` + testRoot + `"
  }
`

// helloWithPolicy is a copy of hello whose distribution.hcl holds
// policyBlocks instead of any audit, signatures, smoke or updates blocks of
// its own.
func helloWithPolicy(t *testing.T) string {
	t.Helper()
	dir := copyTree(t, helloDir)
	p := filepath.Join(dir, FileName)
	f, diags := hclwrite.ParseConfig([]byte(readFile(t, p)), p, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body := f.Body().Blocks()[0].Body()
	for _, b := range body.Blocks() {
		switch b.Type() {
		case "audit", "signatures", "smoke", "updates":
			body.RemoveBlock(b)
		}
	}
	src := string(f.Bytes())
	end := strings.LastIndex(src, "}")
	writeFile(t, p, src[:end]+policyBlocks+src[end:])
	return dir
}

func TestParsePolicy(t *testing.T) {
	dir := helloWithPolicy(t)
	d := mustLoad(t, dir)
	want := Audit{
		Sources:          []string{"npm", "osv:osv"},
		FailOn:           "moderate",
		AllowUnavailable: true,
		Allow: []Allow{
			{ID: "GHSA-aaaa-bbbb-cccc", Reason: "not reachable from our entry", Expires: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)},
			{ID: "CVE-2026-1234", Reason: "fixed by our own patch", Expires: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC)},
		},
	}
	if !reflect.DeepEqual(d.Audit, want) {
		t.Errorf("audit = %+v\nwant %+v", d.Audit, want)
	}
	if !reflect.DeepEqual(d.Audit.OSVPaths(), []string{"osv"}) {
		t.Errorf("OSVPaths = %v", d.Audit.OSVPaths())
	}
	if !d.Signatures.AllowUnavailable {
		t.Error("signatures.allow_unavailable not decoded")
	}
	if len(d.Smoke) != 2 {
		t.Fatalf("smoke = %+v", d.Smoke)
	}
	v, h := d.Smoke[0], d.Smoke[1]
	if v.Name != "version" || !reflect.DeepEqual(v.Args, []string{"--version"}) || v.Expect != `^1\.0\.0$` || v.Timeout != time.Minute {
		t.Errorf("smoke version = %+v", v)
	}
	if re, err := v.Regexp("9.9.9"); err != nil || !re.MatchString("1.0.0") || re.MatchString("1x0x0") {
		t.Errorf("expect is not the regexp written: %v", err)
	}
	if re, err := (Smoke{Expect: "^a+$"}).Regexp("9.9.9"); err != nil || !re.MatchString("aa") {
		t.Errorf("Regexp of a hand-made Smoke: %v", err)
	}
	if h.Name != "help" || h.Timeout != DefaultSmokeTimeout || !reflect.DeepEqual(h.Args, []string{"--help"}) {
		t.Errorf("smoke help = %+v", h)
	}
	for _, b := range []string{"audit", "signatures", "release"} {
		if !d.Declared(b) {
			t.Errorf("%s not declared", b)
		}
	}
	src := readFile(t, filepath.Join(dir, FileName))
	for key, marker := range map[string]string{
		"audit.sources[1]":                   `"osv:./osv/"`,
		"audit.fail_on":                      `"moderate"`,
		"audit.allow.CVE-2026-1234":          `"CVE-2026-1234"`,
		"audit.allow.CVE-2026-1234.expires":  `"2026-12-31"`,
		"smoke.help":                         `"help"`,
		"smoke.version.expect":               `"^1`,
		"smoke.version.args[0]":              `"--version"`,
		"signatures.allow_unavailable":       "true\n  }\n  smoke",
		"smoke.help.timeout":                 `"help"`, // not written: falls back to the block's label
		"audit.allow.GHSA-aaaa-bbbb-cccc.id": `"GHSA-aaaa-bbbb-cccc"`,
	} {
		if got, want := d.Range(key).Start.Byte, strings.Index(src, marker); got != want {
			t.Errorf("Range(%s) at byte %d, want %d (%s)", key, got, want, marker)
		}
	}
}

func TestParsePolicyDefaults(t *testing.T) {
	d, diags := Parse([]byte(baseSrc), "distribution.hcl", t.TempDir())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if !reflect.DeepEqual(d.Audit, Audit{Sources: []string{"npm"}, FailOn: "high"}) {
		t.Errorf("default audit = %+v", d.Audit)
	}
	if d.Signatures.AllowUnavailable || d.Smoke != nil {
		t.Errorf("defaults: %+v %+v", d.Signatures, d.Smoke)
	}
	if d.Declared("audit") || d.Declared("signatures") || !d.Declared("runtime") {
		t.Error("Declared")
	}
}

func TestAllowExpired(t *testing.T) {
	a := Allow{ID: "X", Expires: time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)}
	for _, c := range []struct {
		now  time.Time
		want bool
	}{
		{time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC), false},
		{time.Date(2027, 6, 30, 23, 59, 59, 0, time.UTC), false},
		{time.Date(2027, 7, 1, 0, 0, 0, 0, time.UTC), true},
		// 2027-07-01 01:00 in Paris is still June 30 in UTC.
		{time.Date(2027, 7, 1, 1, 0, 0, 0, time.FixedZone("CEST", 2*3600)), false},
		{time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), true},
	} {
		if got := a.Expired(c.now); got != c.want {
			t.Errorf("Expired(%v) = %v, want %v", c.now, got, c.want)
		}
	}
}

func TestSeverityRank(t *testing.T) {
	if SeverityRank("low") != 1 || SeverityRank("critical") != 4 || SeverityRank("HIGH") != 0 || SeverityRank("") != 0 ||
		SeverityRank("moderate") >= SeverityRank("high") {
		t.Error("SeverityRank")
	}
}

func TestParsePolicyDiagnostics(t *testing.T) {
	const base = `distribution "demo" {
  name    = "Demo"
  version = "1.0.0"
  command = "demo"
  runtime {
    entry = "node_modules/demo-cli/bin/demo.js"
  }
  release {
    targets = ["linux-x64"]
  }
  audit {
    sources = ["npm"]
    fail_on = "high"
    allow "GHSA-aaaa-bbbb-cccc" {
      reason  = "not reachable"
      expires = "2027-06-30"
    }
  }
  smoke "version" {
    args   = ["--version"]
    expect = "^1\\.0\\.0$"
  }
}
`
	cases := []editDiag{
		{name: "medium severity",
			old: `fail_on = "high"`, new: `fail_on = "medium"`, marker: `"medium"`,
			summary: "Invalid severity", detail: []string{"low, moderate, high or critical", `Did you mean "moderate"?`}},
		{name: "uppercase severity",
			old: `fail_on = "high"`, new: `fail_on = "HIGH"`, marker: `"HIGH"`,
			summary: "Invalid severity", detail: []string{`Did you mean "high"?`}},
		{name: "unknown audit attribute",
			old: `fail_on = "high"`, new: `fail_onn = "high"`, marker: `fail_onn`,
			summary: "Unsupported argument", detail: []string{`Did you mean "fail_on"?`}},
		{name: "no audit source",
			old: `sources = ["npm"]`, new: `sources = []`, marker: `[]`,
			summary: "No audit source", detail: []string{"allow_unavailable"}},
		{name: "osv without a path",
			old: `sources = ["npm"]`, new: `sources = ["npm", "osv"]`, marker: `"osv"`,
			summary: "Invalid audit source", detail: []string{`"osv:<path>"`}},
		{name: "osv path escapes",
			old: `sources = ["npm"]`, new: `sources = ["osv:../db.zip"]`, marker: `"osv:../db.zip"`,
			summary: "Invalid audit source", detail: []string{"leaves the distribution directory"}},
		{name: "url source",
			old: `sources = ["npm"]`, new: `sources = ["https://osv.dev/"]`, marker: `"https://osv.dev/"`,
			summary: "Invalid audit source", detail: []string{"not fetched from arbitrary URLs"}},
		{name: "uppercase osv prefix",
			old: `sources = ["npm"]`, new: `sources = ["OSV:db"]`, marker: `"OSV:db"`,
			summary: "Invalid audit source", detail: []string{`"osv:db"`}},
		{name: "duplicate audit source",
			old: `sources = ["npm"]`, new: `sources = ["osv:db", "osv:./db/"]`, marker: `"osv:./db/"`,
			summary: "Duplicate audit source", detail: []string{"already listed at distribution.hcl:12:16"}},
		{name: "bad date",
			old: `expires = "2027-06-30"`, new: `expires = "2027/06/30"`, marker: `"2027/06/30"`,
			summary: "Invalid expiry date", detail: []string{"YYYY-MM-DD", `Did you mean "2027-06-30"?`}},
		{name: "impossible date",
			old: `expires = "2027-06-30"`, new: `expires = "2027-02-30"`, marker: `"2027-02-30"`,
			summary: "Invalid expiry date", detail: []string{`allow "GHSA-aaaa-bbbb-cccc"`}},
		{name: "missing expiry",
			old: "      expires = \"2027-06-30\"\n", new: "", marker: "{\n      reason",
			summary: "Missing required argument", detail: []string{"requires expires", "YYYY-MM-DD"}},
		{name: "missing reason",
			old: "      reason  = \"not reachable\"\n", new: "", marker: "{\n      expires",
			summary: "Missing required argument", detail: []string{"requires reason", "why the advisory is accepted"}},
		{name: "empty reason",
			old: `reason  = "not reachable"`, new: `reason  = "  "`, marker: `"  "`,
			summary: "Missing reason", detail: []string{"cannot be empty"}},
		{name: "duplicate allow",
			old: "  }\n  smoke", new: "    allow \"ghsa-AAAA-bbbb-cccc\" {\n      reason = \"x\"\n      expires = \"2027-01-01\"\n    }\n  }\n  smoke", marker: `"ghsa-AAAA`,
			summary: "Duplicate allow entry", detail: []string{"already accepted at distribution.hcl:14:11"}},
		{name: "bad advisory id",
			old: `allow "GHSA-aaaa-bbbb-cccc"`, new: `allow "GHSA aaaa"`, marker: `"GHSA aaaa"`,
			summary: "Invalid advisory id", detail: []string{"GHSA-xxxx-xxxx-xxxx"}},
		{name: "bad regexp",
			old: `expect = "^1\\.0\\.0$"`, new: `expect = "(1.0"`, marker: `"(1.0"`,
			summary: "Invalid expect", detail: []string{"not an RE2 regular expression", "missing closing )"}},
		{name: "lookahead",
			old: `expect = "^1\\.0\\.0$"`, new: `expect = "^(?!x)"`, marker: `"^(?!x)"`,
			summary: "Invalid expect", detail: []string{"no lookaround"}},
		{name: "empty expect",
			old: `expect = "^1\\.0\\.0$"`, new: `expect = ""`, marker: `""`,
			summary: "Invalid expect", detail: []string{"cannot be empty"}},
		{name: "missing expect",
			old: "    expect = \"^1\\\\.0\\\\.0$\"\n", new: "", marker: "{\n    args",
			summary: "Missing required argument", detail: []string{"requires expect"}},
		{name: "timeout without a unit",
			old: `args   = ["--version"]`, new: "args   = [\"--version\"]\n    timeout = \"60\"", marker: `"60"`,
			summary: "Invalid timeout", detail: []string{`Did you mean "60s"?`}},
		{name: "timeout too long",
			old: `args   = ["--version"]`, new: "args   = [\"--version\"]\n    timeout = \"2h\"", marker: `"2h"`,
			summary: "Invalid timeout", detail: []string{"at most 1h0m0s"}},
		{name: "args not a list",
			old: `args   = ["--version"]`, new: `args   = "--version"`, marker: `"--version"`,
			summary: "Incorrect attribute value type", detail: []string{`smoke.version.args must be a list of strings, e.g. ["--version"]`}},
		{name: "duplicate smoke test",
			old: "  smoke \"version\" {", new: "  smoke \"version\" {\n    expect = \"x\"\n  }\n  smoke \"version\" {", marker: "\"version\" {\n    args",
			summary: "Duplicate smoke test", detail: []string{"already declared at distribution.hcl:19:9"}},
		{name: "bad smoke name",
			old: `smoke "version"`, new: `smoke "Version Check"`, marker: `"Version Check"`,
			summary: "Invalid smoke test name", detail: []string{"lowercase letters"}},
		{name: "smoke without a label",
			old: `smoke "version" {`, new: `smoke {`, marker: "{\n    args",
			summary: "Missing name for smoke", detail: nil},
		{name: "duplicate audit block",
			old: "  smoke \"version\" {", new: "  audit {\n  }\n  smoke \"version\" {", marker: "audit {\n  }",
			summary: "Duplicate audit block", detail: []string{"the first is at distribution.hcl:11:3"}},
		{name: "signatures misspelt",
			old: "  smoke \"version\" {", new: "  signatures {\n    allow_unavialable = true\n  }\n  smoke \"version\" {", marker: "allow_unavialable",
			summary: "Unsupported argument", detail: []string{`Did you mean "allow_unavailable"?`}},
		{name: "misspelt block",
			old: "  smoke \"version\" {", new: "  signature {\n  }\n  smoke \"version\" {", marker: "signature {",
			summary: "Unsupported block type", detail: []string{`Did you mean "signatures"?`}},
	}
	checkEditDiags(t, base, cases)
}

func TestLoadChecksDatabases(t *testing.T) {
	dir := helloWithPolicy(t)
	editFile(t, filepath.Join(dir, FileName), `"osv:./osv/"`, `"osv:osvv"`)
	_, diags := Load(dir)
	src := readFile(t, filepath.Join(dir, FileName))
	if diag := diagAt(diags, src, `"osv:osvv"`); diag == nil || diag.Summary != "Missing OSV database" || !strings.Contains(diag.Detail, `Did you mean "osv:osv"?`) {
		t.Errorf("missing database:\n%s", fmtDiags(diags))
	}

	dir = helloWithPolicy(t)
	editFile(t, filepath.Join(dir, FileName), `"osv:./osv/"`, `"osv:osv/README.md"`)
	_, diags = Load(dir)
	src = readFile(t, filepath.Join(dir, FileName))
	if diag := diagAt(diags, src, `"osv:osv/README.md"`); diag == nil || diag.Summary != "Not an OSV database" || !strings.Contains(diag.Detail, ".zip") {
		t.Errorf("not a database:\n%s", fmtDiags(diags))
	}

	dir = helloWithPolicy(t)
	writeFile(t, filepath.Join(dir, "db.zip"), "PK")
	editFile(t, filepath.Join(dir, FileName), `"osv:./osv/"`, `"osv:db.zip"`)
	if _, diags := Load(dir); diags.HasErrors() {
		t.Errorf("a .zip is a database: %s", fmtDiags(diags))
	}
}

func TestLockPolicy(t *testing.T) {
	dir := helloWithPolicy(t)
	d := mustLoad(t, dir)
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "osv"))
	if len(entries) < 5 {
		t.Fatalf("hello's osv snapshot has %d files", len(entries))
	}
	dbs := map[string]string{}
	for _, e := range entries {
		dbs["osv/"+e.Name()] = canon.SHA256Hex([]byte(readFile(t, filepath.Join(dir, "osv", e.Name()))))
	}
	want := &LockAudit{
		Sources: []string{"npm", "osv:osv"}, FailOn: "moderate", AllowUnavailable: true,
		Allow: []LockAllow{
			{ID: "CVE-2026-1234", Reason: "fixed by our own patch", Expires: "2026-12-31"},
			{ID: "GHSA-aaaa-bbbb-cccc", Reason: "not reachable from our entry", Expires: "2027-06-30"},
		},
		Databases: dbs,
	}
	if !reflect.DeepEqual(l.Audit, want) {
		t.Errorf("audit = %+v\nwant %+v", l.Audit, want)
	}
	if l.Signatures == nil || !l.Signatures.AllowUnavailable {
		t.Errorf("signatures = %+v", l.Signatures)
	}
	wantSmoke := []LockSmoke{
		{Name: "version", Args: []string{"--version"}, Expect: `^1\.0\.0$`, TimeoutMs: 60000},
		{Name: "help", Args: []string{"--help"}, Expect: "Usage: hello", TimeoutMs: 300000},
	}
	if !reflect.DeepEqual(l.Smoke, wantSmoke) {
		t.Errorf("smoke = %+v", l.Smoke)
	}
	raw := l.Marshal()
	if bad := unsortedKeys(raw); len(bad) > 0 {
		t.Errorf("keys out of order: %v", bad)
	}
	back, err := ParseLock(raw)
	if err != nil || !slices.Equal(back.Marshal(), raw) {
		t.Errorf("round trip: %v", err)
	}
	for _, s := range []string{`"databases": {`, `"osv/HELLO-2026-0001.json": "`, `"failOn": "moderate"`, `"timeoutMs": 60000`} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("lock lacks %s:\n%s", s, raw)
		}
	}
}

// A distribution without the blocks locks as before they existed: hello
// with its audit, signatures and smoke blocks removed records none of
// them, and its lock round-trips through CheckLock.
func TestLockWithoutPolicy(t *testing.T) {
	dir := copyTree(t, helloDir)
	path := filepath.Join(dir, FileName)
	f, diags := hclwrite.ParseConfig([]byte(readFile(t, path)), path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	body := f.Body().Blocks()[0].Body()
	removed := 0
	for _, b := range body.Blocks() {
		switch b.Type() {
		case "audit", "signatures", "smoke", "updates":
			body.RemoveBlock(b)
			removed++
		}
	}
	if removed < 3 {
		t.Fatalf("hello has %d policy blocks, want audit, signatures and smoke to remove", removed)
	}
	writeFile(t, path, string(f.Bytes()))
	d := mustLoad(t, dir)
	if d.Declared("audit") || d.Declared("signatures") || d.Declared("smoke") {
		t.Fatal("the blocks are still declared")
	}
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if l.Audit != nil || l.Signatures != nil || l.Smoke != nil || l.Updates != nil {
		t.Errorf("undeclared blocks recorded: %+v %+v %+v %+v", l.Audit, l.Signatures, l.Smoke, l.Updates)
	}
	for _, k := range []string{`"audit"`, `"signatures"`, `"smoke"`, `"updates"`} {
		if strings.Contains(string(l.Marshal()), k) {
			t.Errorf("the lock holds %s", k)
		}
	}
	writeFile(t, filepath.Join(dir, LockFileName), string(l.Marshal()))
	if _, err := CheckLock(d); err != nil {
		t.Errorf("the lock just computed is not current: %v", err)
	}
}

func TestCheckLockPolicy(t *testing.T) {
	db := func(dir, name string) string { return filepath.Join(dir, "osv", name) }
	cases := []struct {
		name    string
		change  func(t *testing.T, dir string)
		changes []string
	}{
		{"database file changed", func(t *testing.T, dir string) {
			editFile(t, db(dir, "HELLO-2026-0001.json"), `"fixed": "1.0.0"`, `"fixed": "1.3.0"`)
		}, []string{"OSV database file osv/HELLO-2026-0001.json (changed)"}},
		{"database file added", func(t *testing.T, dir string) {
			writeFile(t, db(dir, "new/X-1.json"), "{}")
		}, []string{"OSV database file osv/new/X-1.json (added)"}},
		{"database file removed", func(t *testing.T, dir string) {
			if err := os.Remove(db(dir, "README.md")); err != nil {
				t.Fatal(err)
			}
		}, []string{"OSV database file osv/README.md (removed)"}},
		{"policy changed", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, FileName), `fail_on           = "moderate"`, `fail_on           = "critical"`)
		}, []string{"distribution.hcl"}},
		{"lock's policy edited", func(t *testing.T, dir string) {
			editFile(t, filepath.Join(dir, LockFileName), `"timeoutMs": 60000`, `"timeoutMs": 1000`)
		}, []string{"the lock's copy of distribution.hcl settings"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := helloWithPolicy(t)
			d := mustLoad(t, dir)
			l, err := ComputeLock(d)
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteLock(d, l); err != nil {
				t.Fatal(err)
			}
			c.change(t, dir)
			_, err = CheckLock(mustLoad(t, dir))
			var le *LockError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LockError", err)
			}
			if !reflect.DeepEqual(le.Changes, c.changes) {
				t.Errorf("changes %q, want %q", le.Changes, c.changes)
			}
		})
	}

	t.Run("symlink in the database", func(t *testing.T) {
		dir := helloWithPolicy(t)
		if err := os.Symlink("README.md", db(dir, "again.md")); err != nil {
			t.Fatal(err)
		}
		_, err := ComputeLock(mustLoad(t, dir))
		if err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: OSV database osv") || !strings.Contains(err.Error(), "again.md is a symbolic link") {
			t.Errorf("got %v", err)
		}
	})
}
