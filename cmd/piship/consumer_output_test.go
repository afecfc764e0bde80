package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// progressLine matches what the stage progress prints (plain lines, the
// tty view's permanent lines, JSON events): none of it belongs in a
// consumer command's default output.
var progressLine = regexp.MustCompile(`^#\d+ \d+\.\d+s |^=> |: (started|DONE|SKIPPED|NOT STARTED|FAILED|CACHED)\b|"schema":"piship-progress/v1"`)

// consumerCase is one consumer command line and what it prints: the exit
// code, the first line of stdout and of stderr (regular expressions; ""
// for nothing), the failure's code, which must appear exactly once, and
// text the output must (and must not) hold.
type consumerCase struct {
	name         string
	args         []string
	before       func(t *testing.T)
	code         int
	stdout       string // first line of stdout
	stderr       string // first line of stderr
	failure      string // a failure's CODE: printed once
	want, refuse []string
	progress     bool // the output shows stage progress (--progress)
}

// The consumer commands print a short result (what changed, where, what
// next) and no stage progress unless --progress asks for it; a failure
// is printed once. One hello in two versions pinning a TUF repository in
// a directory, and a third release without an updates block, walk
// through install, update, rollback, doctor, repair (from the repository:
// no archive of the active release is kept), uninstall and purge.
func TestConsumerCommandsPrintTheirResult(t *testing.T) {
	root := t.TempDir()
	env := buildEnv(t)
	install := filepath.Join(root, "i")
	for k, v := range map[string]string{"PISHIP_INSTALL_HOME": install, "PISHIP_BIN_HOME": filepath.Join(root, "b"),
		"PISHIP_STATE_HOME": filepath.Join(root, "s")} {
		env[k] = v
	}
	// keygen without --id names the key after its file.
	key := filepath.Join(root, "release.pem")
	if code, out, stderr := piship(t, env, "keygen", key); code != exitOK || !strings.HasPrefix(out, "key release (named after the file") {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	repoDir := filepath.Join(root, "repo")
	code, out, stderr := piship(t, env, "repo", "init", repoDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	pin := regexp.MustCompile(`(?m)^  root_sha256 = "(sha256:[0-9a-f]{64})"$`).FindStringSubmatch(out)
	if code != exitOK || pin == nil {
		t.Fatalf("repo init prints no root_sha256 line to paste: %d\n%s%s", code, out, stderr)
	}
	archives := map[string]string{}
	for _, v := range []string{"1.0.0", "1.0.1", "plain"} {
		dir := copyDist(t, "hello")
		if v != "plain" { // "plain": hello 1.0.0 without an updates block
			p := filepath.Join(dir, "distribution.hcl")
			hcl, _ := os.ReadFile(p)
			writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), v, repoDir, pin[1]))
		}
		if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		if code, _, stderr := piship(t, env, "release", dir); code != exitOK {
			t.Fatalf("release %s: %s", v, stderr)
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "dist", "releases", "hello-*.tar.zst"))
		if len(matches) != 1 {
			t.Fatalf("release %s: archives %v", v, matches)
		}
		archives[v] = matches[0]
	}
	if code, _, stderr := piship(t, env, "repo", "add", repoDir, archives["1.0.0"], archives["1.0.1"], "--key", key); code != exitOK {
		t.Fatalf("repo add: %s", stderr)
	}
	misnamed := filepath.Join(root, "notarelease.tar.zst")
	if b, err := os.ReadFile(archives["1.0.0"]); err != nil || os.WriteFile(misnamed, b, 0o644) != nil {
		t.Fatal(err)
	}
	v100 := filepath.Join(install, "apps", "hello", "1.0.0")
	published := func() string {
		m, _ := filepath.Glob(filepath.Join(repoDir, "targets", "stable", "*.hello-1.0.0-linux-x64.tar.zst"))
		if len(m) != 1 {
			t.Fatalf("published 1.0.0: %v", m)
		}
		return m[0]
	}
	var good []byte
	// damage removes a payload file (the lock, which names the
	// repository, is kept: without it repair asks for --from).
	damage := func(t *testing.T) {
		var inv map[string]string
		if err := readJSONFile(filepath.Join(v100, "payload", "metadata", "inventory.json"), &inv); err != nil {
			t.Fatal(err)
		}
		for p := range inv {
			if p != "piship.lock" {
				if err := os.Remove(filepath.Join(v100, "payload", filepath.FromSlash(p))); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatal("the inventory lists no file but the lock")
	}

	cases := []consumerCase{
		{name: "install", args: []string{"install", archives["1.0.0"]},
			stdout: `^installed hello 1\.0\.0 \(\d+ files.*\) into ` + regexp.QuoteMeta(v100) + ` in .*; run it as ` + "`",
			want:   []string{"is not on PATH"}},
		{name: "update --check", args: []string{"update", "hello", "--check"},
			stdout: `^hello: update available 1\.0\.0 -> 1\.0\.1 \(channel stable, root 1, timestamp 2, `},
		{name: "update", args: []string{"update", "hello"},
			stdout: `^hello updated 1\.0\.0 -> 1\.0\.1 \(channel stable, .*\) in .*; ` + "`piship rollback hello` goes back to 1.0.0$"},
		{name: "update, up to date", args: []string{"update", "hello"},
			stdout: `^hello 1\.0\.1 is up to date \(channel stable, root 1, timestamp 2\)$`},
		{name: "rollback", args: []string{"rollback", "hello"},
			stdout: `^hello rolled back from 1\.0\.1 to 1\.0\.0; ` + "`piship update hello` moves forward again$"},
		{name: "rollback again", args: []string{"rollback", "hello"}, code: exitFailed,
			stderr: `ROLLBACK_FAILED: hello was already rolled back from 1\.0\.1 to 1\.0\.0`, failure: "ROLLBACK_FAILED"},
		{name: "doctor", args: []string{"doctor", "hello"},
			stdout: `^hello: verified, nothing to repair$`},
		// No archive of 1.0.0 is kept (it was installed from a file, the
		// update kept 1.0.1's): repair fetches it from the repository,
		// verified as an update's download: other bytes are refused.
		{name: "repair, the repository serves other bytes", args: []string{"repair", "hello"}, code: exitFailed,
			before: func(t *testing.T) {
				damage(t)
				var err error
				if good, err = os.ReadFile(published()); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(published(), append([]byte{}, good[:len(good)-1]...), 0o644)
			},
			stderr:  `^piship: repair hello: UPDATE_FAILED: no archive of hello 1\.0\.0 is kept in .*, and fetching it from ` + regexp.QuoteMeta(repoDir) + ` failed: .*is not the archive the targets role signs`,
			failure: "UPDATE_FAILED", refuse: []string{"CONFIG_UNAVAILABLE"}},
		{name: "repair from the repository", args: []string{"repair", "hello"},
			before: func(t *testing.T) { os.WriteFile(published(), good, 0o644) },
			stdout: `^repaired hello 1\.0\.0: restored 1 file, removed 0, from ` + regexp.QuoteMeta(filepath.Join(install, "apps", "hello", ".downloads", "hello-1.0.0-linux-x64.tar.zst")) + `$`},
		{name: "repair, nothing to do", args: []string{"repair", "hello"},
			stdout: `^hello 1\.0\.0: nothing to repair$`},
		// repair runs no pipeline: --progress shows home's lines about
		// what it does.
		{name: "repair --progress", args: []string{"repair", "hello", "--progress", "plain"},
			stdout: `^hello 1\.0\.0: nothing to repair$`, stderr: `^hello 1\.0\.0: nothing to repair$`},
		{name: "uninstall", args: []string{"uninstall", "hello"},
			stdout: `^uninstalled hello: removed \d+ paths, kept 0$`},
		{name: "install --progress", args: []string{"install", archives["plain"], "--progress", "plain"}, progress: true,
			stdout: `^installed hello 1\.0\.0 `, stderr: `^#1 \d+\.\d+s install: install( install)?: started$`},
		// A release without an updates block: refused (no trust on first
		// use, --from included), saying what to add and run.
		{name: "update without an updates block", args: []string{"update", "hello"}, code: exitFailed,
			stderr: `^update: stage check failed: UPDATE_FAILED: distribution "hello" has no updates block`, failure: "UPDATE_FAILED",
			want: []string{"updates {\n", `root_sha256 = "sha256:`, "piship keygen root.pem", "piship repo init REPO --key root=root.pem",
				"piship repo add REPO ARCHIVE"}},
		{name: "update --from without an updates block", args: []string{"update", "hello", "--from", repoDir}, code: exitFailed,
			stderr: `^update: stage check failed: UPDATE_FAILED: distribution "hello" has no updates block`, failure: "UPDATE_FAILED",
			want: []string{"--from included", "updates {\n"}},
		{name: "purge", args: []string{"purge", "hello"},
			stdout: `^uninstalled hello: removed \d+ paths, kept 0$`},
		{name: "install a misnamed archive", args: []string{"install", misnamed}, code: exitUsage,
			stderr: `CONFIG_INVALID: cannot tell the distribution and version from the archive name "notarelease.tar.zst"`, failure: "CONFIG_INVALID",
			want: []string{"rename it back", "hello-1.0.0-linux-x64.tar.zst"}, refuse: []string{"pass the id and version"}},
	}
	for _, c := range cases {
		if !t.Run(c.name, func(t *testing.T) {
			if c.before != nil {
				c.before(t)
			}
			code, stdout, stderr := piship(t, env, c.args...)
			all := stdout + stderr
			if code != c.code {
				t.Fatalf("piship %s: exit %d, want %d\n%s", strings.Join(c.args, " "), code, c.code, all)
			}
			for _, s := range []struct{ name, text, want string }{{"stdout", stdout, c.stdout}, {"stderr", stderr, c.stderr}} {
				first, _, _ := strings.Cut(s.text, "\n")
				if s.want == "" && s.text != "" || s.want != "" && !regexp.MustCompile(s.want).MatchString(first) {
					t.Errorf("piship %s: %s's first line %q, want %q\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), s.name, first, s.want, stdout, stderr)
				}
			}
			shown := false
			for l := range strings.Lines(all) {
				shown = shown || progressLine.MatchString(strings.TrimSuffix(l, "\n"))
			}
			if shown != c.progress {
				t.Errorf("piship %s: shows stage progress %v, want %v:\n%s", strings.Join(c.args, " "), shown, c.progress, all)
			}
			if c.failure != "" {
				if n := strings.Count(all, c.failure+":"); n != 1 {
					t.Errorf("piship %s: the failure is printed %d times, want once:\n%s", strings.Join(c.args, " "), n, all)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("piship %s: no %q in\n%s", strings.Join(c.args, " "), w, all)
				}
			}
			for _, r := range c.refuse {
				if strings.Contains(all, r) {
					t.Errorf("piship %s: %q in\n%s", strings.Join(c.args, " "), r, all)
				}
			}
		}) {
			break // later rows build on this one's state
		}
	}
}
