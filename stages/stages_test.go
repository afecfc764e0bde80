package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/stage"
)

func tree(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestExpandFiles(t *testing.T) {
	dir := tree(t, "a.go", "b.txt", "sub/c.go", "sub/deep/d.go", "sub/deep/e.txt")
	for _, tc := range []struct {
		patterns []string
		want     string
		err      string
	}{
		{[]string{"*.go"}, "a.go", ""},
		{[]string{"**/*.go"}, "a.go,sub/c.go,sub/deep/d.go", ""},
		{[]string{"sub/**/*.txt"}, "sub/deep/e.txt", ""},
		{[]string{"sub"}, "sub/c.go,sub/deep/d.go,sub/deep/e.txt", ""},
		{[]string{"b.txt", "b.txt", "a.go"}, "a.go,b.txt", ""},
		{[]string{"sub/?.go"}, "sub/c.go", ""},
		{[]string{"nope/*.go"}, "", `"nope/*.go" matched no files`},
		{[]string{"missing.txt"}, "", `"missing.txt" matched no files`},
	} {
		got, err := ExpandFiles(dir, tc.patterns)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.patterns, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("%v: got %v %v, want %s", tc.patterns, got, err, tc.want)
		}
	}
}

func TestDigestIsSha256sumOfListing(t *testing.T) {
	dir := tree(t, "x/1", "x/2")
	inv := &stage.Invocation{Dir: dir, Config: cty.ObjectVal(map[string]cty.Value{
		"files": cty.ListVal([]cty.Value{cty.StringVal("x")}),
		"dir":   cty.NullVal(cty.String),
	})}
	out, err := stage.Define(Digest{}).Run(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	// Each file holds its own name; the digest is that of the sha256sum listing.
	files := out["files"].AsValueMap()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	if len(files) != 2 || files["x/1"].AsString() != sum("x/1") || files["x/2"].AsString() != sum("x/2") {
		t.Fatalf("files %v", files)
	}
	listing := sum("x/1") + "  x/1\n" + sum("x/2") + "  x/2\n"
	if out["sha256"].AsString() != sum(listing) {
		t.Fatalf("sha256 %s, want the digest of %q", out["sha256"].AsString(), listing)
	}
	again, _ := stage.Define(Digest{}).Run(context.Background(), inv)
	if again["sha256"].AsString() != out["sha256"].AsString() {
		t.Fatal("digest not deterministic")
	}
	if err := os.WriteFile(filepath.Join(dir, "x/2"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, _ := stage.Define(Digest{}).Run(context.Background(), inv)
	if changed["sha256"].AsString() == out["sha256"].AsString() {
		t.Fatal("digest did not change with content")
	}
}

func TestCaptureBuffers(t *testing.T) {
	h := &headBuffer{limit: 5}
	h.Write([]byte("abc"))
	h.Write([]byte("defgh"))
	if h.String() != "abcde" {
		t.Fatalf("head %q", h.String())
	}
	tb := &tailBuffer{limit: 5}
	tb.Write([]byte("abc"))
	tb.Write([]byte("defgh"))
	if tb.String() != "defgh" {
		t.Fatalf("tail %q", tb.String())
	}
	var sb strings.Builder
	lp := &proc.LinePrefixer{W: &sb, Prefix: "s | "}
	lp.Write([]byte("one\ntw"))
	lp.Write([]byte("o\nthree"))
	lp.Flush()
	if sb.String() != "s | one\ns | two\ns | three\n" {
		t.Fatalf("prefixed %q", sb.String())
	}
	sb.Reset()
	lp = &proc.LinePrefixer{W: &sb, Prefix: "npm | ", SkipBlank: true}
	lp.Write([]byte("\nadded 4 packages\n  \n\t"))
	lp.Flush()
	if sb.String() != "npm | added 4 packages\n" {
		t.Fatalf("blank lines not skipped: %q", sb.String())
	}
}

func TestPathInPackage(t *testing.T) {
	for in, want := range map[string]string{
		"node_modules/koffi/build/koffi/darwin_arm64/koffi.node":      "build/koffi/darwin_arm64/koffi.node",
		"node_modules/@scope/pkg/lib/a.node":                          "lib/a.node",
		"node_modules/a/node_modules/@s/b/prebuilds/linux-x64/b.node": "prebuilds/linux-x64/b.node",
		"node_modules/x": "x",
	} {
		if got := pathInPackage(in); got != want {
			t.Errorf("pathInPackage(%q) = %q, want %q", in, got, want)
		}
	}
}
