package pipelines

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"piship.dev/piship/stages/stage/errcode"
)

// TestEmbeddedPipelinesAreFmtClean is issue 29 point 7: `piship fmt --check`
// of a copy of every built-in pipeline finds nothing to format (it reported
// release.hcl), so the files piship ships read as a user's formatted files.
func TestEmbeddedPipelinesAreFmtClean(t *testing.T) {
	names, err := fs.Glob(FS, "*.hcl")
	mods, _ := fs.Glob(FS, "modules/*.hcl")
	if err != nil || len(names) < 5 || len(mods) < 3 {
		t.Fatalf("embedded pipelines: %v %v %v", names, mods, err)
	}
	names = append(names, mods...)
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		src, err := FS.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.Base(n))
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

// build.hcl and release.hcl share the payload's assembly through
// builtin:payload: no stage block appears in both files, and both call the
// module.
func TestBuildAndReleaseShareThePayloadModule(t *testing.T) {
	blocks := map[string]map[string]string{}
	// The release calls it once per target, through builtin:target.
	for _, name := range []string{"build.hcl", "release.hcl", "modules/target.hcl"} {
		src, err := FS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		blocks[name] = map[string]string{}
		body := f.Body.(*hclsyntax.Body)
		if name != "modules/target.hcl" {
			body = body.Blocks[0].Body
		}
		var payload bool
		for _, b := range body.Blocks {
			switch b.Type {
			case "stage":
				blocks[name][b.Labels[0]+" "+b.Labels[1]] = string(b.Range().SliceBytes(src))
			case "module":
				want := `"builtin:payload"`
				if name == "release.hcl" {
					want = `"builtin:target"`
				}
				if a, ok := b.Body.Attributes["source"]; ok && string(a.Expr.Range().SliceBytes(src)) == want {
					payload = true
				}
			}
		}
		if !payload {
			t.Errorf("%s does not call builtin:payload (the release: through builtin:target)", name)
		}
	}
	for label, body := range blocks["build.hcl"] {
		if _, ok := blocks["release.hcl"][label]; ok {
			t.Errorf("stage %s appears in both build.hcl and release.hcl:\n%s", label, body)
		}
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
