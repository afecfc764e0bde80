package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/payload"
)

// The real Pi (@mariozechner/pi-coding-agent@0.73.1, from the npm registry)
// builds bundled and unbundled, both payloads answer --version and --help
// exactly alike, and its release verifies.
func TestPiBuildAndRelease(t *testing.T) {
	// The run's shared cache: the npm ci of Pi's runtime happens once per
	// run, here or in TestPiInstallUpdateRollback, whichever runs first.
	env := map[string]string{"PISHIP_CACHE_HOME": sharedCache(t), "PISHIP_PROGRESS": "0"}
	type form struct {
		name        string
		files       int
		version     string
		help        string
		summaryLine string
	}
	var forms []form
	for _, bundled := range []bool{false, true} {
		dir := copyDist(t, "pi")
		setBundle(t, env, dir, bundled)
		summary := mustBuild(t, env, dir)
		final := filepath.Join(dir, "dist", "pi")
		if err := payload.Verify(context.Background(), final); err != nil {
			t.Fatal(err)
		}
		files, err := payload.Walk(final)
		if err != nil {
			t.Fatal(err)
		}
		f := form{name: map[bool]string{true: "bundled", false: "unbundled"}[bundled], files: len(files), summaryLine: summary}
		f.version = strings.TrimSpace(runPayload(t, final, "pi", "--version"))
		f.help = runPayload(t, final, "pi", "--help")
		t.Logf("%s: %s", f.name, summary)
		forms = append(forms, f)
	}
	for _, f := range forms {
		if f.version != "0.73.1" {
			t.Errorf("%s pi --version printed %q, want 0.73.1", f.name, f.version)
		}
	}
	if forms[0].help != forms[1].help {
		t.Errorf("pi --help differs:\n--- unbundled\n%s\n--- bundled\n%s", forms[0].help, forms[1].help)
	}
	if forms[1].files >= 100 {
		t.Errorf("bundled, stripped Pi payload has %d files, want under 100", forms[1].files)
	}
	if forms[0].files <= forms[1].files*10 {
		t.Errorf("unbundled payload has %d files, bundled %d: bundling did not reduce the file count", forms[0].files, forms[1].files)
	}

	// The release of the example (bundled) with the same runtime cache:
	// qualified with this machine's registry verdicts recorded as
	// unavailable, and accepted by verify-release.
	dir := copyDist(t, "pi")
	stderr := mustRelease(t, env, dir)
	t.Log(lastLine(stderr))
	archive := filepath.Join(dir, "dist", "releases", "pi-0.73.1-linux-x64.tar.gz")
	code, stdout, vstderr := cli(t, env, "verify-release", archive)
	if code != exitOK {
		t.Fatalf("verify-release: %d\n%s%s", code, stdout, vstderr)
	}
	var rel struct {
		Signatures struct{ Verdict string }
		Tests      []struct{ Name, Result string }
	}
	if err := readJSONFile(filepath.Join(dir, "dist", "releases", "pi-0.73.1-linux-x64", "release.json"), &rel); err != nil {
		t.Fatal(err)
	}
	if len(rel.Tests) != 2 || rel.Signatures.Verdict == "" {
		t.Fatalf("release.json %+v", rel)
	}
}
