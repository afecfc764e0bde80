package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/cache"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release/releasejson"
)

// setTargets rewrites release.targets of the distribution in dir and
// locks it again.
func setTargets(t *testing.T, env map[string]string, dir string, targets ...string) {
	t.Helper()
	p := filepath.Join(dir, "distribution.hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(targets)
	src := strings.Replace(string(b), `targets = ["linux-x64"]`, "targets = "+strings.ReplaceAll(string(quoted), ",", ", "), 1)
	if src == string(b) {
		t.Fatal(`distribution.hcl has no targets = ["linux-x64"] to replace`)
	}
	writeFile(t, dir, "distribution.hcl", src)
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
}

// One piship release of hello for four targets: an archive per target in
// one release directory and a SHA256SUMS over them; each payload holds
// only binaries of its target and the win32 one a .cmd shim; the smoke
// tests passed on the host's target and were not run, with the reason,
// elsewhere; every archive passes verify-release (the set too), install
// refuses a foreign one naming this machine's target, and install of the
// set installs the host's; a second release is a cache hit for every
// target, byte for byte the same.
func TestReleaseEveryTarget(t *testing.T) {
	host := platform.HostTarget()
	if host != "linux-x64" {
		t.Fatalf("this test's targets are chosen for a linux-x64 host, and this is %s", host)
	}
	targets := []string{"darwin-arm64", "linux-arm64", "linux-x64", "win32-x64"}
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	setTargets(t, env, dir, "linux-x64", "linux-arm64", "darwin-arm64", "win32-x64")
	code, stdout, stderr := piship(t, env, "release", dir, "--json")
	if code != exitOK {
		t.Fatalf("release: exit %d\n%s", code, stderr)
	}
	var doc ReleaseDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	var got []string
	for _, rt := range doc.Targets {
		got = append(got, rt.Target)
	}
	if !slices.Equal(got, targets) {
		t.Fatalf("release --json targets %v, want %v", got, targets)
	}
	releases := filepath.Join(dir, "dist", "releases")
	sums, err := os.ReadFile(filepath.Join(releases, "hello-1.0.0.SHA256SUMS"))
	if err != nil || doc.Sums != filepath.Join(releases, "hello-1.0.0.SHA256SUMS") {
		t.Fatalf("the release set: %v (json sums %q)", err, doc.Sums)
	}
	var want strings.Builder
	for _, rt := range doc.Targets {
		sum, err := cache.HashFile(rt.Archive)
		if err != nil || sum != rt.SHA256 || filepath.Dir(rt.Archive) != releases {
			t.Errorf("%s: archive %s: %v, sha256 %s, json says %s", rt.Target, rt.Archive, err, sum, rt.SHA256)
		}
		want.WriteString(sum + "  " + filepath.Base(rt.Archive) + "\n")

		payload := filepath.Join(rt.Path, "payload")
		if _, foreign, err := fixture.ForeignNativeFiles(payload, rt.Target); err != nil || len(foreign) > 0 {
			t.Errorf("%s payload: binaries of another target %v (%v)", rt.Target, foreign, err)
		}
		_, cmdErr := os.Stat(filepath.Join(payload, "bin", "hello.cmd"))
		if isWin := strings.HasPrefix(rt.Target, "win32-"); isWin != (cmdErr == nil) {
			t.Errorf("%s payload: bin/hello.cmd present %v", rt.Target, cmdErr == nil)
		}

		var rel releasejson.Metadata
		if err := readJSONFile(filepath.Join(rt.Path, "release.json"), &rel); err != nil {
			t.Fatal(err)
		}
		for _, tr := range rel.Tests {
			switch {
			case rt.Target == host && tr.Result != releasejson.TestPassed:
				t.Errorf("%s: smoke test %s %s, want passed on the host's target", rt.Target, tr.Name, tr.Result)
			case rt.Target != host && (tr.Result != releasejson.TestNotRun || !strings.Contains(tr.Reason, rt.Target) || !strings.Contains(tr.Reason, host)):
				t.Errorf("%s: smoke test %s %s (%q), want not-run naming both targets", rt.Target, tr.Name, tr.Result, tr.Reason)
			}
		}
		if len(rel.Tests) != 2 || rel.Target != rt.Target {
			t.Errorf("%s: release.json target %s, %d tests", rt.Target, rel.Target, len(rel.Tests))
		}
		if rt.Target != host && !strings.HasPrefix(rt.Smoke, "not-run: ") {
			t.Errorf("%s: release --json smoke %q", rt.Target, rt.Smoke)
		}

		if code, _, stderr := piship(t, env, "verify-release", rt.Archive); code != exitOK {
			t.Errorf("verify-release %s: exit %d\n%s", filepath.Base(rt.Archive), code, stderr)
		}
	}
	if string(sums) != want.String() {
		t.Errorf("hello-1.0.0.SHA256SUMS:\n%s\nwant:\n%s", sums, want.String())
	}
	set := filepath.Join(releases, "hello-1.0.0.SHA256SUMS")
	// A warm release is a runtime cache hit for every target: no
	// target's cleanup evicts another's entries.
	code, stdout, stderr = piship(t, env, "release", dir, "--json", "--out", filepath.Join(t.TempDir(), "again"))
	if code != exitOK {
		t.Fatalf("second release: exit %d\n%s", code, stderr)
	}
	var again ReleaseDoc
	if err := json.Unmarshal([]byte(stdout), &again); err != nil {
		t.Fatal(err)
	}
	for i, rt := range again.Targets {
		if !strings.HasPrefix(rt.RuntimeCache, "hit ") || rt.SHA256 != doc.Targets[i].SHA256 {
			t.Errorf("%s, second release: runtime cache %q, sha256 %s (first %s)", rt.Target, rt.RuntimeCache, rt.SHA256, doc.Targets[i].SHA256)
		}
	}
	if code, _, stderr := piship(t, env, "verify-release", set); code != exitOK || !strings.Contains(stderr, "4 archives") {
		t.Errorf("verify-release of the set: exit %d\n%s", code, stderr)
	}

	root := t.TempDir()
	home := map[string]string{"PISHIP_CACHE_HOME": env["PISHIP_CACHE_HOME"], "PISHIP_PROGRESS": "0",
		"PISHIP_INSTALL_HOME": filepath.Join(root, "i"), "PISHIP_BIN_HOME": filepath.Join(root, "b"), "PISHIP_STATE_HOME": filepath.Join(root, "s")}
	code, _, stderr = piship(t, home, "install", filepath.Join(releases, "hello-1.0.0-darwin-arm64.tar.zst"))
	if code != exitUsage || !strings.Contains(stderr, "built for darwin-arm64, and this machine is linux-x64") || !strings.Contains(stderr, "verify-release") {
		t.Errorf("install of the darwin-arm64 archive: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "i", "hello")); err == nil {
		t.Error("the refused install left an app directory")
	}
	code, stdout, stderr = piship(t, home, "install", set, "--json")
	if code != exitOK {
		t.Fatalf("install of the set: exit %d\n%s", code, stderr)
	}
	var in struct{ ID, Version string }
	if err := json.Unmarshal([]byte(stdout), &in); err != nil || in.ID != "hello" || in.Version != "1.0.0" {
		t.Fatalf("install --json: %v %s", err, stdout)
	}
	// The host's archive: its payload says linux-x64.
	var tj struct{ Platform, Arch string }
	if err := readJSONFile(filepath.Join(receipt.AppDir(filepath.Join(root, "i"), "hello"), "1.0.0", "payload", "metadata", "target.json"), &tj); err != nil || tj.Platform+"-"+tj.Arch != host {
		t.Errorf("installed payload's target.json: %+v %v, want %s", tj, err, host)
	}
}
