package pipelines

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/stage/errcode"
)

// TestEmbeddedPipelinesAreFmtClean is issue 29 point 7: `piship fmt --check`
// of a copy of every built-in pipeline finds nothing to format (it reported
// release.hcl), so the files piship ships read as a user's formatted files.
func TestEmbeddedPipelinesAreFmtClean(t *testing.T) {
	names, err := fs.Glob(FS, "*.hcl")
	if err != nil || len(names) < 5 {
		t.Fatalf("embedded pipelines: %v %v", names, err)
	}
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		src, err := FS.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var stdout, stderr bytes.Buffer
	if code := Format(&stdout, &stderr, func(string) string { return "" }, paths, true); code != ExitOK {
		t.Errorf("piship fmt --check of the embedded pipelines: exit %d; run piship fmt pipelines/ to fix:\n%s%s", code, stdout.String(), stderr.String())
	}
}

// FindForDistribution: the distribution's pipelines/NAME.hcl, else the
// built-in one; --builtin the built-in one; a pipelines/NAME.hcl that
// cannot be read is an error, never passed over for the built-in one.
func TestFindForDistribution(t *testing.T) {
	dist := t.TempDir()
	if src, err := FindForDistribution("release", dist, false); err != nil || src.Name != embeddedPrefix+"release.hcl" {
		t.Fatalf("no pipelines/: %v %v", src, err)
	}
	own := filepath.Join(dist, "pipelines", "release.hcl")
	if err := os.MkdirAll(own, 0o755); err != nil { // a directory, not a file
		t.Fatal(err)
	}
	if src, err := FindForDistribution("release", dist, false); err == nil || errcode.Of(err) != errcode.ConfigInvalid {
		t.Fatalf("pipelines/release.hcl a directory: %v %v, want CONFIG_INVALID", src, err)
	}
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own, []byte("pipeline \"release\" {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, err := FindForDistribution("release", dist, false); err != nil || src.Name != own || src.Dir != filepath.Dir(own) {
		t.Fatalf("pipelines/release.hcl: %+v %v", src, err)
	}
	if src, err := FindForDistribution("release", dist, true); err != nil || src.Name != embeddedPrefix+"release.hcl" {
		t.Fatalf("--builtin: %v %v", src, err)
	}
	if _, err := FindForDistribution("nope", dist, true); errcode.Of(err) != errcode.ConfigInvalid {
		t.Fatalf("an unknown built-in: %v", err)
	}
}
