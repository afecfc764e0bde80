package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release/releasejson"
)

// What `piship init` writes is accepted at once: lock, build and release
// (which runs its smoke tests) succeed with npm offline, and the built
// command greets.
func TestInitBuildsAndPassesItsSmokeTests(t *testing.T) {
	t.Setenv("npm_config_offline", "true") // the scaffold needs no network
	env := buildEnv(t)
	dir := filepath.Join(t.TempDir(), "greeter")
	code, stdout, stderr := piship(t, env, "init", dir)
	if code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"wrote " + filepath.Join(dir, "distribution.hcl"), "wrote " + filepath.Join(dir, "runtime", "package.json"),
		"piship lock " + dir + " && piship build " + dir, "piship release " + dir} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, stdout)
		}
	}
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	mustBuild(t, env, dir)
	out, err := exec.Command(filepath.Join(dir, "dist", "greeter", "bin", "greeter"), "piship").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Hello, piship!" {
		t.Fatalf("the built command: %v\n%s", err, out)
	}

	mustRelease(t, env, dir)
	var rel releasejson.Metadata
	data, err := os.ReadFile(filepath.Join(dir, "dist", "releases", "greeter-0.1.0-"+platform.HostTarget(), "release.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rel); err != nil {
		t.Fatal(err)
	}
	if rel.Qualification != "qualified" || len(rel.Tests) != 2 {
		t.Fatalf("release %s with tests %+v", rel.Qualification, rel.Tests)
	}
	for _, r := range rel.Tests {
		if r.Result != "passed" {
			t.Errorf("smoke test %s %s", r.Name, r.Result)
		}
	}
}

// init never overwrites and refuses a directory name that is no id, both
// as configuration errors that say what to do.
func TestInitRefusesAnExistingFileAndABadID(t *testing.T) {
	env := buildEnv(t)
	dir := filepath.Join(t.TempDir(), "greeter")
	if code, _, stderr := piship(t, env, "init", dir); code != exitOK {
		t.Fatalf("init: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := piship(t, env, "init", dir)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "CONFIG_INVALID: ") ||
		!strings.Contains(stderr, "already has .gitignore, app/bin/cli.js, app/package.json, distribution.hcl") ||
		!strings.Contains(stderr, "run it on an empty or new directory") {
		t.Fatalf("init over a scaffold: exit %d\n%s%s", code, stdout, stderr)
	}
	bad := filepath.Join(t.TempDir(), "Greeter")
	code, stdout, stderr = piship(t, env, "init", bad)
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `CONFIG_INVALID: the directory name "Greeter" is not a distribution id`) ||
		!strings.Contains(stderr, `(e.g. "greeter"), or give the id with --id`) {
		t.Fatalf("init Greeter: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := piship(t, env, "init", bad, "--id", "greeter"); code != exitOK || !strings.Contains(stdout, "piship lock "+bad) {
		t.Fatalf("init Greeter --id greeter: exit %d\n%s%s", code, stdout, stderr)
	}
}
