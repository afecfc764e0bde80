package distribution

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/stages/channel"
)

// Public keys whose private halves were thrown away.
const (
	testKeyA = "MCowBQYDK2VwAyEA/6h2/XquKfm78Veh9MVtMsAazoFOvf91faHf5h5PYmc="
	testKeyB = "MCowBQYDK2VwAyEAP8OieZt6af8T3hay79tyTiy4RRMlYP1Tsh4hUWZ9vpk="
	testKeyC = "MCowBQYDK2VwAyEAhJkkozXbipjI9W4Q4t13n9c+sW//yLaVns5ncM/9QoI="
	// An ECDSA P-256 key.
	testKeyEC = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEZhrF8CPdEpxGvp1u32qukMwwr2DsZ1YOUwNjWUIJXQtqcw61pmr5Qngx75LdFJZrAh8RnpC8J7IHEjB9+Rj6KA=="
)

func mustKey(t *testing.T, b64 string) ed25519.PublicKey {
	t.Helper()
	k, err := channel.ParsePublicKey(b64)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestParseUpdates(t *testing.T) {
	dir := helloWithPolicy(t)
	d := mustLoad(t, dir)
	a, b := mustKey(t, testKeyA), mustKey(t, testKeyB)
	want := &Updates{
		Channel: "beta", Source: "https://example.com/hello/", Threshold: 2,
		Keys: []UpdateKey{
			{ID: "release-2026", PublicKey: a, Fingerprint: channel.Fingerprint(a)},
			{ID: "backup", PublicKey: b, Fingerprint: channel.Fingerprint(b)},
		},
	}
	if !reflect.DeepEqual(d.Updates, want) {
		t.Errorf("updates = %+v\nwant %+v", d.Updates, want)
	}
	if !d.Declared("updates") {
		t.Error("updates not declared")
	}
	tr := d.Updates.Trust(d.ID)
	if tr.Distribution != "hello" || tr.Threshold != 2 || !tr.Keys["backup"].Equal(b) || len(tr.Keys) != 2 {
		t.Errorf("trust = %+v", tr)
	}
	src := readFile(t, filepath.Join(dir, FileName))
	for key, marker := range map[string]string{
		"updates":                       "updates {",
		"updates.channel":               `"beta"`,
		"updates.source":                `"https://example.com/hello/"`,
		"updates.keys":                  "[\n      { id",
		"updates.keys[1]":               `{ id = "backup"`,
		"updates.keys[1].id":            `"backup"`,
		"updates.keys[0].public_key":    `"` + testKeyA,
		"updates.threshold":             "2\n",
		"updates.keys[1].public_key.xx": `"` + testKeyB,
	} {
		if got, want := d.Range(key).Start.Byte, strings.Index(src, marker); got != want {
			t.Errorf("Range(%s) at byte %d, want %d (%s)", key, got, want, marker)
		}
	}
}

func TestParseUpdatesDefaults(t *testing.T) {
	src := strings.Replace(baseSrc, "\n}\n", "\n  updates {\n    source = \"/srv/channels/demo\"\n    keys = [{ id = \"k\", public_key = \""+testKeyA+"\" }]\n  }\n}\n", 1)
	d, diags := Parse([]byte(src), FileName, t.TempDir())
	if diags.HasErrors() {
		t.Fatal(fmtDiags(diags))
	}
	if u := d.Updates; u == nil || u.Channel != "stable" || u.Threshold != 1 || u.Source != "/srv/channels/demo" || len(u.Keys) != 1 {
		t.Errorf("defaults: %+v", u)
	}
	d, diags = Parse([]byte(baseSrc), FileName, t.TempDir())
	if diags.HasErrors() || d.Updates != nil || d.Declared("updates") {
		t.Errorf("no block: %+v", d.Updates)
	}
	// Sources that installed copies can read.
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
    channel   = "stable"
    source    = "https://example.com/demo/"
    keys      = [
      { id = "release-2026", public_key = "` + testKeyA + `" },
      { id = "backup", public_key = "` + testKeyB + `" },
    ]
    threshold = 1
  }
}
`
	rsaLike := base64.StdEncoding.EncodeToString([]byte("definitely not DER"))
	raw := base64.StdEncoding.EncodeToString(mustKey(t, testKeyC))
	cases := []editDiag{
		{name: "bad base64",
			old: `"` + testKeyB + `"`, new: `"not base64!"`, marker: `"not base64!"`,
			summary: "Invalid public key", detail: []string{"updates.keys[1] public_key", "not standard base64"}},
		{name: "not DER",
			old: `"` + testKeyB + `"`, new: `"` + rsaLike + `"`, marker: `"` + rsaLike,
			summary: "Invalid public key", detail: []string{"not the base64 of a SubjectPublicKeyInfo"}},
		{name: "another key type",
			old: `"` + testKeyB + `"`, new: `"` + testKeyEC + `"`, marker: `"` + testKeyEC,
			summary: "Invalid public key", detail: []string{"an ECDSA key", "Ed25519 keys only"}},
		{name: "raw key",
			old: `"` + testKeyB + `"`, new: `"` + raw + `"`, marker: `"` + raw,
			summary: "Invalid public key", detail: []string{"raw 32-byte"}},
		{name: "duplicate id",
			old: `id = "backup"`, new: `id = "release-2026"`, marker: `"release-2026", public_key = "` + testKeyB,
			summary: "Duplicate key id", detail: []string{"already listed at distribution.hcl:15:14"}},
		{name: "duplicate public key",
			old: `"` + testKeyB + `"`, new: `"` + testKeyA + `"`, marker: `"` + testKeyA + `" },` + "\n    ]",
			summary: "Duplicate public key", detail: []string{`same public key as "release-2026" (distribution.hcl:15:43)`}},
		{name: "threshold zero",
			old: `threshold = 1`, new: `threshold = 0`, marker: "0\n  }",
			summary: "Invalid threshold", detail: []string{"at least one trusted key"}},
		{name: "threshold above the keys",
			old: `threshold = 1`, new: `threshold = 3`, marker: "3\n  }",
			summary: "Invalid threshold", detail: []string{"3 is more than the 2 keys listed"}},
		{name: "fractional threshold",
			old: `threshold = 1`, new: `threshold = 1.5`, marker: `1.5`,
			summary: "Incorrect attribute value type", detail: []string{"whole number"}},
		{name: "threshold as a string",
			old: `threshold = 1`, new: `threshold = "1"`, marker: `"1"`,
			summary: "Incorrect attribute value type", detail: []string{"updates.threshold must be a whole number, e.g. 2", "this is a string"}},
		{name: "relative source",
			old: `"https://example.com/demo/"`, new: `"channels/demo"`, marker: `"channels/demo"`,
			summary: "Invalid update source", detail: []string{"cannot be relative"}},
		{name: "plain http",
			old: `"https://example.com/demo/"`, new: `"http://example.com/demo/"`, marker: `"http://example.com/demo/"`,
			summary: "Invalid update source", detail: []string{"plain http to example.com is refused", "https://example.com/demo/"}},
		{name: "other scheme",
			old: `"https://example.com/demo/"`, new: `"ftp://example.com/demo/"`, marker: `"ftp://`,
			summary: "Invalid update source", detail: []string{`"ftp" is not supported`}},
		{name: "credentials",
			old: `"https://example.com/demo/"`, new: `"https://me:secret@example.com/demo/"`, marker: `"https://me:`,
			summary: "Invalid update source", detail: []string{"credentials"}},
		{name: "missing source",
			old: "    source    = \"https://example.com/demo/\"\n", new: "", marker: "{\n    channel",
			summary: "Missing required argument", detail: []string{"requires source"}},
		{name: "missing keys",
			old: "    keys      = [\n      { id = \"release-2026\", public_key = \"" + testKeyA + "\" },\n      { id = \"backup\", public_key = \"" + testKeyB + "\" },\n    ]\n", new: "", marker: "{\n    channel",
			summary: "Missing required argument", detail: []string{"requires keys"}},
		{name: "no keys",
			old: "[\n      { id = \"release-2026\", public_key = \"" + testKeyA + "\" },\n      { id = \"backup\", public_key = \"" + testKeyB + "\" },\n    ]", new: "[]", marker: "[]",
			summary: "No update key", detail: []string{"at least one trusted key"}},
		{name: "keys not a list",
			old: "[\n      { id = \"release-2026\", public_key = \"" + testKeyA + "\" },\n      { id = \"backup\", public_key = \"" + testKeyB + "\" },\n    ]", new: `"` + testKeyA + `"`, marker: `"` + testKeyA,
			summary: "Incorrect attribute value type", detail: []string{"a list of { id, public_key } objects"}},
		{name: "key not an object",
			old: `{ id = "backup", public_key = "` + testKeyB + `" }`, new: `"backup"`, marker: `"backup"`,
			summary: "Incorrect attribute value type", detail: []string{"updates.keys[1] must be an object"}},
		{name: "misspelt key attribute",
			old: `id = "backup", public_key`, new: `id = "backup", publickey`, marker: `publickey`,
			summary: "Unsupported argument", detail: []string{`Did you mean "public_key"?`}},
		{name: "missing public key",
			old: `{ id = "backup", public_key = "` + testKeyB + `" }`, new: `{ id = "backup" }`, marker: `{ id = "backup" }`,
			summary: "Missing required argument", detail: []string{"updates.keys[1] requires public_key"}},
		{name: "bad key id",
			old: `id = "backup"`, new: `id = "back up"`, marker: `"back up"`,
			summary: "Invalid key id", detail: []string{"letters, digits"}},
		{name: "bad channel",
			old: `channel   = "stable"`, new: `channel   = "Stable"`, marker: `"Stable"`,
			summary: "Invalid channel name", detail: []string{`Did you mean "stable"?`}},
		{name: "misspelt attribute",
			old: `threshold = 1`, new: `treshold = 1`, marker: `treshold`,
			summary: "Unsupported argument", detail: []string{`Did you mean "threshold"?`}},
		{name: "misspelt block",
			old: "  updates {", new: "  update {", marker: "update {",
			summary: "Unsupported block type", detail: []string{`Did you mean "updates"?`}},
		{name: "duplicate block",
			old: "  release {", new: "  updates {\n  }\n  release {", marker: "updates {\n    channel",
			summary: "Duplicate updates block", detail: []string{"the first is at distribution.hcl:8:3"}},
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
	a, b := mustKey(t, testKeyA), mustKey(t, testKeyB)
	want := &LockUpdates{
		Channel: "beta", Source: "https://example.com/hello/", Threshold: 2,
		Keys: []LockUpdateKey{ // sorted by id
			{ID: "backup", PublicKey: testKeyB, Fingerprint: channel.Fingerprint(b)},
			{ID: "release-2026", PublicKey: testKeyA, Fingerprint: channel.Fingerprint(a)},
		},
	}
	if !reflect.DeepEqual(l.Updates, want) {
		t.Errorf("updates = %+v\nwant %+v", l.Updates, want)
	}
	raw := l.Marshal()
	if bad := unsortedKeys(raw); len(bad) > 0 {
		t.Errorf("keys out of order: %v", bad)
	}
	back, err := ParseLock(raw)
	if err != nil || string(back.Marshal()) != string(raw) {
		t.Fatalf("round trip: %v", err)
	}
	for _, s := range []string{`"updates": {`, `"fingerprint": "sha256:`, `"threshold": 2`, `"publicKey": "` + testKeyA + `"`} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("lock lacks %s:\n%s", s, raw)
		}
	}

	tr, err := back.UpdateTrust()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Distribution != "hello" || tr.Threshold != 2 || !tr.Keys["release-2026"].Equal(a) || len(tr.Keys) != 2 {
		t.Errorf("trust = %+v", tr)
	}
	// A lock whose fingerprint does not match its key.
	bad := *back
	bu := *bad.Updates
	bu.Keys = append([]LockUpdateKey{}, bu.Keys...)
	bu.Keys[0].Fingerprint = channel.Fingerprint(a)
	bad.Updates = &bu
	if _, err := bad.UpdateTrust(); err == nil || !strings.HasPrefix(err.Error(), "LOCK_INVALID:") || !strings.Contains(err.Error(), `"backup" has fingerprint`) {
		t.Errorf("mismatched fingerprint: %v", err)
	}
	bu.Keys[0].Fingerprint = channel.Fingerprint(b)
	bu.Threshold = 3
	if _, err := bad.UpdateTrust(); err == nil || !strings.Contains(err.Error(), "threshold 3") {
		t.Errorf("threshold over the keys: %v", err)
	}
	if _, err := (&Lock{Distribution: LockDistribution{ID: "hello"}}).UpdateTrust(); err == nil || !strings.HasPrefix(err.Error(), "UPDATE_FAILED:") {
		t.Errorf("no updates block: %v", err)
	}

	// An edit of the lock's copy is caught; so is a change of the block.
	if err := WriteLock(d, l); err != nil {
		t.Fatal(err)
	}
	editFile(t, filepath.Join(dir, LockFileName), `"threshold": 2`, `"threshold": 1`)
	_, err = CheckLock(mustLoad(t, dir))
	var le *LockError
	if !errors.As(err, &le) || !reflect.DeepEqual(le.Changes, []string{"the lock's copy of distribution.hcl settings"}) {
		t.Errorf("edited lock: %v", err)
	}
	if err := WriteLock(d, l); err != nil {
		t.Fatal(err)
	}
	editFile(t, filepath.Join(dir, FileName), `threshold = 2`, `threshold = 1`)
	_, err = CheckLock(mustLoad(t, dir))
	if !errors.As(err, &le) || !reflect.DeepEqual(le.Changes, []string{FileName}) {
		t.Errorf("changed block: %v", err)
	}
}

// editDiag is one bad edit of a valid distribution.hcl: replacing old by
// new must fail with summary (and each detail) at marker.
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
