package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/piship/internal/fixture"
)

// Issue 32 point 3: a release of a distribution in a git repository writes
// notes.md beside release.json (outside the archive and checksums.txt);
// repo add publishes it and update --check shows the new version's notes,
// in text and in --json; a release outside a repository writes none, says
// so and passes. (A repository without notes for the version a check picks
// shows none: stages/tuf TestNotesArePublishedAndVerifiedLikeTheArchive.)
func TestReleaseNotesFromGitToUpdateCheck(t *testing.T) {
	root := t.TempDir()
	env := buildEnv(t)
	for k, v := range map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(root, "i"), "PISHIP_BIN_HOME": filepath.Join(root, "b"),
		"PISHIP_STATE_HOME": filepath.Join(root, "s")} {
		env[k] = v
	}
	key := filepath.Join(root, "release.pem")
	if code, out, stderr := piship(t, env, "keygen", key); code != exitOK {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	repoDir := filepath.Join(root, "repo")
	code, out, stderr := piship(t, env, "repo", "init", repoDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	pin := regexp.MustCompile(`(?m)^  root_sha256 = "(sha256:[0-9a-f]{64})"$`).FindStringSubmatch(out)
	if code != exitOK || pin == nil {
		t.Fatalf("repo init: %d\n%s%s", code, out, stderr)
	}

	// One git repository holding hello: 1.0.0 tagged, then commits and 1.0.1.
	src := filepath.Join(root, "src")
	dir := filepath.Join(src, "hello")
	if err := fixture.CopyDist("hello", dir); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	if err := os.WriteFile(filepath.Join(src, ".gitignore"), []byte("dist/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hcl, err := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	release := func(version string) (archive, releaseDir string) {
		t.Helper()
		writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), version, repoDir, pin[1]))
		if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		git("add", "-A")
		git("commit", "-q", "-m", "chore: release "+version)
		git("tag", "v"+version)
		code, _, stderr := piship(t, env, "release", dir)
		if code != exitOK {
			t.Fatalf("release %s: %s", version, stderr)
		}
		m, _ := filepath.Glob(filepath.Join(dir, "dist", "releases", "hello-"+version+"-*.tar.zst"))
		if len(m) != 1 {
			t.Fatalf("release %s: archives %v", version, m)
		}
		return m[0], strings.TrimSuffix(m[0], ".tar.zst")
	}
	a100, _ := release("1.0.0")
	writeFile(t, dir, "NOTES-TEST.txt", "a\n")
	git("add", "-A")
	git("commit", "-q", "-m", "fix(cli): quote the paths")
	fix := git("rev-parse", "HEAD")[:7]
	writeFile(t, dir, "NOTES-TEST.txt", "b\n")
	git("commit", "-q", "-am", "feat: say hello louder")
	feat := git("rev-parse", "HEAD")[:7]
	a101, d101 := release("1.0.1")
	rel := git("rev-parse", "HEAD")[:7]

	notes, err := os.ReadFile(filepath.Join(d101, "notes.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "# hello 1.0.1\n\nChanges since v1.0.0:\n\n## Features\n\n- say hello louder (" + feat + ")\n" +
		"\n## Fixes\n\n- **cli:** quote the paths (" + fix + ")\n\n## Chores\n\n- release 1.0.1 (" + rel + ")\n"
	if string(notes) != want {
		t.Fatalf("notes.md:\n%s\nwant:\n%s", notes, want)
	}
	// Beside release.json, outside the archive and checksums.txt; the
	// release directory still verifies.
	if sums, _ := os.ReadFile(filepath.Join(d101, "checksums.txt")); strings.Contains(string(sums), "notes.md") {
		t.Errorf("checksums.txt lists notes.md:\n%s", sums)
	}
	if out, err := archiveListing(a101); err != nil || strings.Contains(string(out), "notes.md") {
		t.Errorf("the archive holds notes.md (%v):\n%s", err, out)
	}
	if code, out, stderr := piship(t, env, "verify-release", d101); code != exitOK {
		t.Errorf("verify-release of the release directory with notes.md: %d\n%s%s", code, out, stderr)
	}

	// 1.0.0 is published without notes (its notes.md removed), 1.0.1 with.
	if err := os.Remove(filepath.Join(strings.TrimSuffix(a100, ".tar.zst"), "notes.md")); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := piship(t, env, "repo", "add", repoDir, a100, a101, "--key", key); code != exitOK || !strings.Contains(out, "stable/hello-1.0.1-linux-x64.notes.md") {
		t.Fatalf("repo add: %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := piship(t, env, "install", a100); code != exitOK {
		t.Fatalf("install: %s", stderr)
	}
	code, out, stderr = piship(t, env, "update", "hello", "--check")
	if code != exitOK || !strings.Contains(out, "release notes of 1.0.1:\n  # hello 1.0.1\n") || !strings.Contains(out, "  - say hello louder ("+feat+")\n") {
		t.Errorf("update --check shows no notes: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = piship(t, env, "update", "hello", "--check", "--json")
	var doc struct {
		Available bool   `json:"available"`
		Notes     string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || !doc.Available || doc.Notes != want {
		t.Errorf("update --check --json: %d %v %+v\n%s", code, err, doc, stderr)
	}

	// repo status says which release has notes: 1.0.1 its target, 1.0.0
	// none; --json gives the target's path, length and sha256, or "".
	notesPath := "stable/hello-1.0.1-linux-x64.notes.md"
	code, out, stderr = piship(t, env, "repo", "status", repoDir)
	if code != exitOK || !strings.Contains(out, "hello-1.0.1-linux-x64.tar.zst 1.0.1 for linux-x64 on stable (") ||
		!strings.Contains(out, fmt.Sprintf("\n    release notes %s (%d bytes)\n", notesPath, len(want))) ||
		!regexp.MustCompile(`hello-1\.0\.0-linux-x64\.tar\.zst 1\.0\.0 [^\n]*\n    no release notes\n`).MatchString(out) {
		t.Errorf("repo status does not show the releases' notes: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = piship(t, env, "repo", "status", repoDir, "--json")
	var st struct {
		Releases []struct {
			Version     string `json:"version"`
			Format      string `json:"format"`
			Notes       string `json:"notes"`
			NotesLength int    `json:"notesLength"`
			NotesSHA256 string `json:"notesSha256"`
		} `json:"releases"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || len(st.Releases) != 3 || st.Releases[1].Format != "piship-delta/v1" {
		t.Fatalf("repo status --json: %d %v, want the two archives and the delta between them\n%s%s", code, err, out, stderr)
	}
	st.Releases = slices.Delete(st.Releases, 1, 2) // the delta, which has no notes of its own
	for _, r := range st.Releases {
		switch {
		case r.Version == "1.0.0" && (r.Notes != "" || r.NotesLength != 0 || r.NotesSHA256 != ""):
			t.Errorf("repo status --json gives 1.0.0 notes: %+v", r)
		case r.Version == "1.0.1" && (r.Notes != notesPath || r.NotesLength != len(want) || r.NotesSHA256 != canon.SHA256Hex([]byte(want))):
			t.Errorf("repo status --json notes of 1.0.1 = %+v", r)
		}
	}

	// A real update prints the notes of the version it installed, under
	// its updated line; --json carries them whole.
	code, out, stderr = piship(t, env, "update", "hello")
	if code != exitOK || !regexp.MustCompile(`hello updated 1\.0\.0 -> 1\.0\.1 [^\n]*\nrelease notes of 1\.0\.1:\n  # hello 1\.0\.1\n`).MatchString(out) || !strings.Contains(out, "  - say hello louder ("+feat+")\n") {
		t.Errorf("update does not print the installed version's notes: %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := piship(t, env, "rollback", "hello"); code != exitOK {
		t.Fatalf("rollback: %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = piship(t, env, "update", "hello", "--json")
	var upd struct {
		Updated bool   `json:"updated"`
		Version string `json:"version"`
		Notes   string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &upd); code != exitOK || err != nil || !upd.Updated || upd.Version != "1.0.1" || upd.Notes != want {
		t.Errorf("update --json: %d %v %+v\n%s", code, err, upd, stderr)
	}
	// Up to date: no notes.
	code, out, stderr = piship(t, env, "update", "hello")
	if code != exitOK || strings.Contains(out, "release notes") {
		t.Errorf("an update with nothing to install prints notes: %d\n%s%s", code, out, stderr)
	}

	// A distribution outside any git repository: no notes.md, said once,
	// and the release passes.
	plain := copyDist(t, "hello")
	code, _, stderr = piship(t, env, "release", plain)
	if code != exitOK {
		t.Fatalf("release outside git: %s", stderr)
	}
	if n := strings.Count(stderr, "no release notes: not in a git repository"); n != 1 {
		t.Errorf("release outside git says %d times that it writes no notes:\n%s", n, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(plain, "dist", "releases", "hello-*", "notes.md"))
	if len(m) != 0 {
		t.Errorf("a release outside git wrote %v", m)
	}
}
