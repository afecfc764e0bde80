package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release/releasejson"
)

// versionless scaffolds a distribution (piship init: its program prints
// PISHIP_APP_VERSION, its "version" smoke test expects ${version}) and
// removes the version line from its distribution.hcl.
func versionless(t *testing.T, env map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "greeter")
	if code, _, stderr := piship(t, env, "init", dir); code != exitOK {
		t.Fatalf("init: %s", stderr)
	}
	p := filepath.Join(dir, "distribution.hcl")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^\s*version\s*=\s*"0\.1\.0"\n`)
	if !line.Match(src) {
		t.Fatalf("the scaffold writes no version line:\n%s", src)
	}
	if err := os.WriteFile(p, line.ReplaceAll(src, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	return dir
}

// gitIn runs git in dir with a fixed identity.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=piship", "-c", "user.email=piship@localhost", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// releaseJSON reads the release.json of release name under dir's dist.
func readRelease(t *testing.T, dir, name string) releasejson.Metadata {
	t.Helper()
	var rel releasejson.Metadata
	data, err := os.ReadFile(filepath.Join(dir, "dist", "releases", name, "release.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rel); err != nil {
		t.Fatal(err)
	}
	return rel
}

// A distribution.hcl without version is released under the git tag at
// HEAD (v1.2.3 -> 1.2.3): its archive and release.json say 1.2.3, its
// smoke test expecting ${version} passed with the program printing the
// PISHIP_APP_VERSION it was given, and the installed copy prints 1.2.3
// through the launcher. Without a tag (or a repository) the release is
// refused, naming --snapshot; --snapshot makes a release that repo add
// refuses; --version names the release over the tag.
func TestReleaseVersionFromTheGitTag(t *testing.T) {
	t.Setenv("npm_config_offline", "true") // the scaffold needs no network
	root := t.TempDir()
	env := buildEnv(t)
	for k, v := range map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(root, "i"), "PISHIP_BIN_HOME": filepath.Join(root, "b"),
		"PISHIP_STATE_HOME": filepath.Join(root, "s")} {
		env[k] = v
	}
	t.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir()) // the temporary directory is in no repository
	dir := versionless(t, env)
	target := platform.HostTarget()

	// No repository: refused, saying so and naming the ways out.
	code, _, stderr := piship(t, env, "release", dir)
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: ") || !strings.Contains(stderr, "writes no version and "+dir+" is in no git repository") ||
		!strings.Contains(stderr, "--snapshot") || !strings.Contains(stderr, "--version") {
		t.Fatalf("release outside a repository: exit %d\n%s", code, stderr)
	}

	gitIn(t, dir, "init", "-q")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "greeter")
	sha := gitIn(t, dir, "rev-parse", "--short=12", "HEAD")

	// A commit without a tag: refused, naming the commit and --snapshot.
	code, _, stderr = piship(t, env, "release", dir)
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: ") || !strings.Contains(stderr, "HEAD (commit "+sha+") of the git repository at "+dir+" has no version tag") ||
		!strings.Contains(stderr, "--snapshot") {
		t.Fatalf("release of an untagged commit: exit %d\n%s", code, stderr)
	}

	// --snapshot: a pre-release of the commit, which repo add refuses.
	mustRelease(t, env, dir, "--snapshot")
	snap := "0.0.0-snapshot.g" + sha
	if rel := readRelease(t, dir, "greeter-"+snap+"-"+target); rel.Distribution.Version != snap || rel.Qualification != "qualified" {
		t.Fatalf("snapshot release.json: version %s, %s", rel.Distribution.Version, rel.Qualification)
	}
	key := filepath.Join(root, "k.pem")
	if code, _, stderr := piship(t, env, "keygen", key); code != exitOK {
		t.Fatalf("keygen: %s", stderr)
	}
	repo := filepath.Join(root, "repo")
	if code, _, stderr := piship(t, env, "repo", "init", repo, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key); code != exitOK {
		t.Fatalf("repo init: %s", stderr)
	}
	snapArchive := filepath.Join(dir, "dist", "releases", "greeter-"+snap+"-"+target+".tar.zst")
	code, _, stderr = piship(t, env, "repo", "add", repo, snapArchive, "--key", key)
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: ") || !strings.Contains(stderr, "is snapshot release greeter "+snap) ||
		!strings.Contains(stderr, "never published") {
		t.Fatalf("repo add of a snapshot: exit %d\n%s", code, stderr)
	}

	// The tag names the release.
	gitIn(t, dir, "tag", "v1.2.3")
	mustRelease(t, env, dir)
	name := "greeter-1.2.3-" + target
	rel := readRelease(t, dir, name)
	if rel.Distribution.Version != "1.2.3" || rel.Qualification != "qualified" || len(rel.Tests) != 2 {
		t.Fatalf("release.json: version %s, %s, tests %+v", rel.Distribution.Version, rel.Qualification, rel.Tests)
	}
	for _, r := range rel.Tests {
		if r.Result != "passed" {
			t.Errorf("smoke test %s %s", r.Name, r.Result)
		}
	}
	archive := filepath.Join(dir, "dist", "releases", name+".tar.zst")
	if code, out, stderr := piship(t, env, "verify-release", archive); code != exitOK {
		t.Fatalf("verify-release: %s%s", out, stderr)
	}
	if code, _, stderr := piship(t, env, "repo", "add", repo, archive, "--key", key); code != exitOK {
		t.Fatalf("repo add 1.2.3: %s", stderr)
	}
	if code, _, stderr := piship(t, env, "install", archive); code != exitOK {
		t.Fatalf("install: %s", stderr)
	}
	code, out, stderr := piship(t, env, "launch", "greeter", "--version")
	if code != exitOK || strings.TrimSpace(out) != "1.2.3" {
		t.Fatalf("the installed greeter --version: exit %d %q\n%s", code, out, stderr)
	}

	// --version names the release over the tag.
	mustRelease(t, env, dir, "--version", "2.0.0-rc.1")
	if rel := readRelease(t, dir, "greeter-2.0.0-rc.1-"+target); rel.Distribution.Version != "2.0.0-rc.1" {
		t.Fatalf("--version 2.0.0-rc.1: release.json says %s", rel.Distribution.Version)
	}
	code, _, stderr = piship(t, env, "release", dir, "--version", "v2.0.0")
	if code != exitUsage || !strings.Contains(stderr, `--version "v2.0.0" is not a semantic version`) || !strings.Contains(stderr, `did you mean "2.0.0"?`) {
		t.Fatalf("--version v2.0.0: exit %d\n%s", code, stderr)
	}
}

// A version written in distribution.hcl names the release (the tag is
// not read), and --version or --snapshot cannot contradict it: the lock
// records it.
func TestReleaseVersionWrittenIsTheOnlyOne(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	for _, args := range [][]string{{"--version", "2.0.0"}, {"--snapshot"}} {
		code, _, stderr := piship(t, env, append([]string{"release", dir}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, `CONFIG_INVALID: `) || !strings.Contains(stderr, `version "1.0.0" is written`) ||
			!strings.Contains(stderr, "remove version from distribution.hcl") {
			t.Fatalf("release %v: exit %d\n%s", args, code, stderr)
		}
	}
	code, _, stderr := piship(t, env, "release", dir, "--version", "2.0.0", "--snapshot")
	if code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID") {
		t.Fatalf("--version with --snapshot: exit %d\n%s", code, stderr)
	}
}
