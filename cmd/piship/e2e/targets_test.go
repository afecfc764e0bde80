package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release/releasejson"
)

// The developer Pi for the five targets Pi's users run, in one release:
// each payload's native files (the vendored pi-mcp-adapter's
// @napi-rs/keyring addon, which npm installs per target from the one lock)
// are of its own target by their ELF, Mach-O or PE header, the win32
// payload has its .cmd shim, the smoke tests passed on this host's target
// and were not run elsewhere (with the reason), the set verifies, and
// install refuses a foreign archive.
func TestPiDevEveryTarget(t *testing.T) {
	host := platform.HostTarget()
	targets := []string{"darwin-arm64", "darwin-x64", "linux-arm64", "linux-x64", "win32-x64"}
	root := t.TempDir()
	env := node22Env(t, root)
	dir := copyDist(t, "pi-dev")
	if err := fixture.SetSearchTools(dir, env["PISHIP_CACHE_HOME"], "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "distribution.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(b), `targets = ["linux-x64"]`, `targets = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"]`, 1)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil || src == string(b) {
		t.Fatalf("setting the targets: %v", err)
	}
	if code, _, stderr := cli(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	code, stdout, stderr := cli(t, env, "release", dir, "--json")
	if code != exitOK {
		t.Fatalf("release: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Sums    string
		Targets []struct {
			Target, Path, Archive, Smoke string
			SearchToolsMissing           []string
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(doc.Targets) != len(targets) {
		t.Fatalf("release --json has %d targets, want %d:\n%s", len(doc.Targets), len(targets), stdout)
	}
	for i, rt := range doc.Targets {
		if rt.Target != targets[i] {
			t.Fatalf("target %d is %s, want %s", i, rt.Target, targets[i])
		}
		payload := filepath.Join(rt.Path, "payload")
		files, err := fixture.NativeFiles(payload)
		if err != nil {
			t.Fatal(err)
		}
		var keyring int
		for _, f := range files {
			if f.Target != rt.Target {
				t.Errorf("%s payload: %s is %s for %s", rt.Target, f.Path, f.Format, f.Target)
			}
			if strings.Contains(f.Path, "@napi-rs/keyring-") {
				keyring++
			}
		}
		if keyring != 1 {
			t.Errorf("%s payload: %d @napi-rs/keyring addons, want its target's one (%d binary files)", rt.Target, keyring, len(files))
		}
		t.Logf("%s: %d binary files, all for %s; smoke %s; without search tools %v", rt.Target, len(files), rt.Target, rt.Smoke, rt.SearchToolsMissing)
		_, cmdErr := os.Stat(filepath.Join(payload, "bin", "pi-dev.cmd"))
		if isWin := strings.HasPrefix(rt.Target, "win32-"); isWin != (cmdErr == nil) {
			t.Errorf("%s payload: bin/pi-dev.cmd present %v", rt.Target, cmdErr == nil)
		}
		var rel releasejson.Metadata
		if err := readJSONFile(filepath.Join(rt.Path, "release.json"), &rel); err != nil {
			t.Fatal(err)
		}
		for _, tr := range rel.Tests {
			if want := map[bool]string{true: releasejson.TestPassed, false: releasejson.TestNotRun}[rt.Target == host]; tr.Result != want || (want == releasejson.TestNotRun && tr.Reason == "") {
				t.Errorf("%s: smoke test %s %s (%q), want %s", rt.Target, tr.Name, tr.Result, tr.Reason, want)
			}
		}
	}
	if code, _, stderr := cli(t, env, "verify-release", doc.Sums); code != exitOK {
		t.Errorf("verify-release of the set: exit %d\n%s", code, stderr)
	}
	for _, rt := range doc.Targets {
		if rt.Target == host {
			continue
		}
		code, _, stderr := cli(t, env, "install", rt.Archive)
		if code != 2 || !strings.Contains(stderr, "this machine is "+host) {
			t.Errorf("install of the %s archive: exit %d\n%s", rt.Target, code, stderr)
		}
		break
	}
}
