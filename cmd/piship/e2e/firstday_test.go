package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/stages/platform"
)

// stageProgress matches a line of stage progress (plain lines, the tty
// view's permanent lines, JSON events).
var stageProgress = regexp.MustCompile(`(?m)^#\d+ \d+\.\d+s |^=> |: (started|DONE|SKIPPED|NOT STARTED|FAILED|CACHED)\b|"schema":"piship-progress/v1"`)

// A release engineer's first day with the real binaries in a clean home:
// init (at 1.0.0), three keys, a TUF repository whose
// printed root_sha256 line is pasted into distribution.hcl, lock, build,
// release 1.0.0, install, a version bump, release 1.1.0, repo add,
// update, rollback, doctor, repair (the kept archive is 1.1.0's: 1.0.0's
// comes from the repository) and uninstall. Each step's exit code and
// the first line it prints are asserted, and the consumer commands print
// their result without stage progress.
func TestFirstDayWalk(t *testing.T) {
	work := t.TempDir()
	home := filepath.Join(work, "home")
	env := map[string]string{
		"PISHIP_INSTALL_HOME": filepath.Join(home, "install"), "PISHIP_BIN_HOME": filepath.Join(home, "bin"),
		"PISHIP_STATE_HOME": filepath.Join(home, "state"), "PISHIP_CACHE_HOME": filepath.Join(home, "cache"),
		"npm_config_offline": "true", // the scaffold needs no network
	}
	dist := filepath.Join(work, "greeter")
	repo := filepath.Join(work, "repo")
	key := func(name string) string { return filepath.Join(work, name+".pem") }
	target := platform.HostTarget()
	archive := func(v string) string {
		return filepath.Join(dist, "dist", "releases", "greeter-"+v+"-"+target+".tar.zst")
	}
	v100 := filepath.Join(home, "install", "apps", "greeter", "1.0.0")
	q := regexp.QuoteMeta

	// step runs piship with args and checks its exit code and the first
	// line of stdout and of stderr (regular expressions, "" for nothing
	// printed); consumer commands must show no stage progress.
	step := func(code int, stdout, stderr string, args ...string) string {
		t.Helper()
		got, out, errs := cli(t, env, args...)
		if got != code {
			t.Fatalf("piship %s: exit %d, want %d\n%s%s", strings.Join(args, " "), got, code, out, errs)
		}
		for _, s := range []struct{ name, text, want string }{{"stdout", out, stdout}, {"stderr", errs, stderr}} {
			first, _, _ := strings.Cut(s.text, "\n")
			if s.want == "" && s.text != "" || s.want != "" && !regexp.MustCompile(s.want).MatchString(first) {
				t.Fatalf("piship %s: first line of %s %q, want %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), s.name, first, s.want, out, errs)
			}
		}
		switch args[0] {
		case "install", "update", "rollback", "doctor", "repair", "uninstall", "purge":
			if l := stageProgress.FindString(out + errs); l != "" {
				t.Fatalf("piship %s prints stage progress (%q):\n%s%s", strings.Join(args, " "), l, out, errs)
			}
		}
		return out
	}
	// setVersion is the version bump distribution.hcl's comments ask for:
	// the version is written there only (the app prints the one the
	// launcher gives it, the smoke test expects ${version}), so nothing
	// is repacked.
	setVersion := func(from, to string) {
		t.Helper()
		p := filepath.Join(dist, "distribution.hcl")
		b, err := os.ReadFile(p)
		old := `version = "` + from + `"`
		if err != nil || strings.Count(string(b), from) != 1 || !strings.Contains(string(b), old) {
			t.Fatalf("%s does not hold the version %s once, as %s: %v", p, from, old, err)
		}
		os.WriteFile(p, []byte(strings.Replace(string(b), old, `version = "`+to+`"`, 1)), 0o644)
	}
	launch := func(want string) {
		t.Helper()
		out, err := exec.Command(filepath.Join(home, "bin", "greeter"), "--version").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Fatalf("greeter --version: %v %q, want %s", err, out, want)
		}
	}

	step(exitOK, `^wrote `+q(filepath.Join(dist, ".gitignore"))+`$`, "", "init", dist, "--version", "1.0.0")
	for _, k := range []string{"root", "targets", "online"} {
		step(exitOK, `^key `+k+` \(named after the file; --id NAME names it otherwise\) written to `+q(key(k))+` \(private, 0600\)$`, "", "keygen", key(k))
	}
	out := step(exitOK, `^repository `+q(repo)+` made: root 1, targets 1, snapshot 1, timestamp 1$`, "",
		"repo", "init", repo, "--key", "root="+key("root"), "--key", "targets="+key("targets"), "--key", "snapshot="+key("online"), "--key", "timestamp="+key("online"))
	rootLine := regexp.MustCompile(`(?m)^  (root_sha256 = "sha256:[0-9a-f]{64}")$`).FindStringSubmatch(out)
	if rootLine == nil {
		t.Fatalf("repo init prints no root_sha256 line:\n%s", out)
	}
	// Uncomment init's updates block, with the repository's directory as
	// its source and the printed line pasted over the placeholder.
	p := filepath.Join(dist, "distribution.hcl")
	b, _ := os.ReadFile(p)
	block := regexp.MustCompile(`(?m)^  # updates \{\n  #   channel     = "stable"\n  #   source      = ".*"\n  #   root_sha256 = ".*"\n  # \}$`)
	if !block.Match(b) {
		t.Fatalf("init's distribution.hcl has no commented updates block:\n%s", b)
	}
	b = block.ReplaceAll(b, []byte("  updates {\n    channel     = \"stable\"\n    source      = \""+repo+"\"\n    "+rootLine[1]+"\n  }"))
	os.WriteFile(p, b, 0o644)

	step(exitOK, `^locked greeter 1\.0\.0: `+q(filepath.Join(dist, "piship.lock")), "", "lock", dist)
	// build and release name the pipeline file that runs first, then
	// keep their progress.
	step(exitOK, "", `^build: embedded:pipelines/build\.hcl$`, "build", dist)
	step(exitOK, "", `^release: embedded:pipelines/release\.hcl$`, "release", dist)
	step(exitOK, `^installed greeter 1\.0\.0 \(\d+ files.*\) into `+q(v100)+` in .*; run it as `+"`"+q(filepath.Join(home, "bin", "greeter"))+"`$", "",
		"install", archive("1.0.0"))
	launch("1.0.0")

	setVersion("1.0.0", "1.1.0")
	step(exitOK, `^locked greeter 1\.1\.0: `, "", "lock", dist)
	step(exitOK, "", `^release: embedded:pipelines/release\.hcl$`, "release", dist)
	step(exitOK, `^published stable/greeter-1\.0\.0-`+target+`\.tar\.zst 1\.0\.0 for `+target+` on stable$`, "",
		"repo", "add", repo, archive("1.0.0"), archive("1.1.0"), "--key", key("targets"), "--key", key("online"))

	step(exitOK, `^greeter updated 1\.0\.0 -> 1\.1\.0 \(channel stable, root 1, timestamp 2, a \S+ \S+ delta from 1\.0\.0 instead of the \S+ \S+ archive\) in .*; `+"`piship rollback greeter` goes back to 1.0.0$", "",
		"update", "greeter")
	launch("1.1.0")
	step(exitOK, `^greeter rolled back from 1\.1\.0 to 1\.0\.0; `+"`piship update greeter` moves forward again$", "", "rollback", "greeter")
	launch("1.0.0")
	step(exitOK, `^greeter: verified, nothing to repair$`, "", "doctor", "greeter")

	// A payload file lost; the archive kept is 1.1.0's download, so
	// repair fetches 1.0.0's from the repository.
	if err := os.Remove(filepath.Join(v100, "payload", "package.json")); err != nil {
		t.Fatal(err)
	}
	step(1, `^greeter: DAMAGED: found \d+ problem\(s\)`, `INTEGRITY_FAILED`, "doctor", "greeter")
	step(exitOK, `^repaired greeter 1\.0\.0: restored 1 file, removed 0, from `+q(filepath.Join(home, "install", "apps", "greeter", ".downloads", "greeter-1.0.0-"+target+".tar.zst"))+`$`, "",
		"repair", "greeter")
	step(exitOK, `^greeter: verified, nothing to repair$`, "", "doctor", "greeter")
	launch("1.0.0")
	step(exitOK, `^uninstalled greeter: removed \d+ paths, kept \d+$`, "", "uninstall", "greeter")
	if _, err := os.Stat(filepath.Join(home, "bin", "greeter")); !os.IsNotExist(err) {
		t.Fatalf("the command shim is still there after uninstall: %v", err)
	}
}
