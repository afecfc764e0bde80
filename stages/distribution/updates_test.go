package distribution

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

const testRoot = "sha256:9c1e0000000000000000000000000000000000000000000000000000000000aa"

func TestParseUpdates(t *testing.T) {
	dir := helloWithPolicy(t)
	d := mustLoad(t, dir)
	want := &Updates{Channel: "beta", Source: "https://example.com/hello/", RootSHA256: testRoot}
	if !reflect.DeepEqual(d.Updates, want) {
		t.Errorf("updates = %+v\nwant %+v", d.Updates, want)
	}
	if !d.Declared("updates") {
		t.Error("updates not declared")
	}
	_ = filepath.Join
}

func TestParseUpdatesDefaults(t *testing.T) {
	src := strings.Replace(baseSrc, "\n}\n", "\n  updates {\n    source = \"/srv/channels/demo\"\n    root_sha256 = \"SHA256:"+strings.ToUpper(strings.TrimPrefix(testRoot, "sha256:"))+"\"\n  }\n}\n", 1)
	d, diags := Parse([]byte(src), FileName, t.TempDir())
	if diags.HasErrors() {
		t.Fatal(fmtDiags(diags))
	}
	if u := d.Updates; u == nil || u.Channel != "stable" || u.Source != "/srv/channels/demo" || u.RootSHA256 != testRoot {
		t.Errorf("defaults: %+v", u)
	}
	d, diags = Parse([]byte(baseSrc), FileName, t.TempDir())
	if diags.HasErrors() || d.Updates != nil || d.Declared("updates") {
		t.Errorf("no block: %+v", d.Updates)
	}
	for _, s := range []string{"https://example.com/hello", "file:///srv/channels/demo/", "http://127.0.0.1:8080/demo/", "http://localhost/demo/"} {
		src := strings.Replace(src, "/srv/channels/demo", s, 1)
		if _, diags := Parse([]byte(src), FileName, t.TempDir()); diags.HasErrors() {
			t.Errorf("%s: %s", s, fmtDiags(diags))
		}
	}
}

func TestParseUpdatesDiagnostics(t *testing.T) {
	base := `distribution "demo" {
  name    = "Demo"
  version = "1.0.0"
  command = "demo"
  runtime {
    entry = "node_modules/demo-cli/bin/demo.js"
  }
  release {
    targets = ["linux-x64"]
  }
  updates {
    channel     = "stable"
    source      = "https://example.com/demo/"
    root_sha256 = "` + testRoot + `"
  }
}
`
	cases := []editDiag{
		{name: "v1 keys",
			old: `    channel     = "stable"`, new: `    channel     = "stable"
    keys = [{ id = "k", public_key = "x" }]`, marker: `keys`,
			summary: "Replaced by TUF", detail: []string{"updates.keys was replaced by TUF", "piship repo init", "updates.root_sha256"}},
		{name: "v1 threshold",
			old: `    channel     = "stable"`, new: `    channel     = "stable"
    threshold = 1`, marker: `threshold`,
			summary: "Replaced by TUF", detail: []string{"updates.threshold was replaced by TUF"}},
		{name: "bad root",
			old: `"` + testRoot + `"`, new: `"sha256:abc"`, marker: `"sha256:abc"`,
			summary: "Invalid root digest", detail: []string{"sha256:<64 hex digits>"}},
	}
	checkEditDiags(t, base, cases)
}

func TestLockUpdates(t *testing.T) {
	dir := helloWithPolicy(t)
	d := mustLoad(t, dir)
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	want := &LockUpdates{Channel: "beta", Source: "https://example.com/hello/", RootSHA256: testRoot}
	if !reflect.DeepEqual(l.Updates, want) {
		t.Errorf("lock updates = %+v", l.Updates)
	}
	pin, err := l.UpdateRoot()
	if err != nil || pin != testRoot {
		t.Errorf("UpdateRoot = %q, %v", pin, err)
	}
	l.Updates.RootSHA256 = ""
	if _, err := l.UpdateRoot(); err == nil || !strings.Contains(err.Error(), "piship-channel/v1") {
		t.Errorf("no root: %v", err)
	}
	var _ hcl.Diagnostics
}

type editDiag struct {
	name     string
	old, new string
	marker   string
	summary  string
	detail   []string
}

// checkEditDiags checks that base parses and that each edit of it is
// refused with its diagnostic, at its place.
func checkEditDiags(t *testing.T, base string, cases []editDiag) {
	t.Helper()
	if _, diags := Parse([]byte(base), FileName, t.TempDir()); diags.HasErrors() {
		t.Fatalf("base: %s", fmtDiags(diags))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.old) {
				t.Fatalf("base has no %q", c.old)
			}
			wantDiagAt(t, strings.Replace(base, c.old, c.new, 1), c.marker, c.summary, c.detail)
		})
	}
}

// wantDiagAt checks that src does not parse and that an error diagnostic
// with summary, and a detail holding each of detail, sits at marker; it
// returns that diagnostic.
func wantDiagAt(t *testing.T, src, marker, summary string, detail []string) *hcl.Diagnostic {
	t.Helper()
	d, diags := Parse([]byte(src), FileName, t.TempDir())
	if d != nil || !diags.HasErrors() {
		t.Fatalf("no error for\n%s", src)
	}
	diag := diagAt(diags, src, marker)
	if diag == nil {
		t.Fatalf("no error diagnostic at %q; got:\n%s", marker, fmtDiags(diags))
	}
	t.Logf("%s: %s: %s", fmtPos(*diag.Subject), diag.Summary, diag.Detail)
	if diag.Summary != summary {
		t.Errorf("summary %q, want %q (%s)", diag.Summary, summary, diag.Detail)
	}
	for _, want := range detail {
		if !strings.Contains(diag.Detail, want) {
			t.Errorf("detail %q lacks %q", diag.Detail, want)
		}
	}
	return diag
}
