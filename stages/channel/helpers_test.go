package channel

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/release/releasejson"
)

// now is the fixed clock of the tests.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const lockSum = "1111111111111111111111111111111111111111111111111111111111111111"

// makeArchive writes <out>/<id>-<version>-<target>.tar.gz holding a
// release.json and a small payload, with its sidecar, and returns its path.
func makeArchive(t *testing.T, out, id, version, target string) string {
	t.Helper()
	return makeArchiveWith(t, out, id, version, target, nil)
}

// makeArchiveWith is makeArchive whose release.json edit changes first.
func makeArchiveWith(t *testing.T, out, id, version, target string, edit func(rel map[string]any)) string {
	t.Helper()
	root := t.TempDir()
	rel := map[string]any{
		"schema":        releasejson.Schema,
		"distribution":  map[string]string{"id": id, "name": "Hello", "version": version, "command": "hello"},
		"lockSha256":    lockSum,
		"target":        target,
		"channel":       "stable",
		"created":       now.Format(time.RFC3339),
		"qualification": "qualified",
		"payload":       map[string]any{"path": "payload/", "inventorySha256": lockSum, "files": 2},
		"packageAudits": map[string]any{"verdict": "not-applicable", "locks": 0, "reason": "no vendored packages"},
	}
	if edit != nil {
		edit(rel)
	}
	b, _ := json.MarshalIndent(rel, "", "  ")
	writeTestFile(t, filepath.Join(root, "release.json"), string(b))
	writeTestFile(t, filepath.Join(root, "payload", "bin", "hello"), "#!/bin/sh\necho "+version+"\n")
	writeTestFile(t, filepath.Join(root, "payload", "zz.txt"), strings.Repeat("x", 5000))
	name := fmt.Sprintf("%s-%s-%s.tar.gz", id, version, target)
	p := filepath.Join(out, name)
	res, err := archive.Create(context.Background(), p, root, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, p+".sha256", res.SHA256+"  "+name+"\n")
	return p
}

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testKeys makes n keys k1..kn.
func testKeys(t *testing.T, n int) []KeyPair {
	t.Helper()
	var out []KeyPair
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("k%d", i)
		priv, err := GenerateKey(id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, KeyPair{ID: id, Private: priv})
	}
	return out
}

// wantErr checks err is an *Error with code and reason whose message holds
// every fragment.
func wantErr(t *testing.T, err error, code string, reason Reason, fragments ...string) {
	t.Helper()
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("got %v, want a %s error", err, code)
	}
	if e.Code != code || e.Reason != reason {
		t.Errorf("got %s/%s (%v), want %s/%s", e.Code, e.Reason, err, code, reason)
	}
	if !strings.HasPrefix(err.Error(), code+": ") {
		t.Errorf("message %q does not start with the code", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q lacks %q", err, f)
		}
	}
}

func ed25519Sign(k KeyPair, doc []byte) []byte { return ed25519.Sign(k.Private, doc) }
