package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Why a stage ran (issue 15, item 3): change one input file, one
// configuration attribute and the tool in turn; each time the miss reason
// names exactly that change, in the progress line, in --dry-run and in
// piship explain.
func TestMissReasonNamesWhatChanged(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "cache")
	vars := map[string]string{"PISHIP_CACHE_HOME": home}
	hcl := filepath.Join(dir, "p.hcl")
	writePipeline := func(mode string) {
		t.Helper()
		writeFile(t, dir, "p.hcl", fmt.Sprintf(`pipeline "why" {
  stage "exec" "compile" {
    command = ["sh", "-c", "cat in.txt > out.txt"]
    env     = { MODE = %q }
    inputs  = ["in.txt"]
    outputs = ["out.txt"]
    cache   = true
  }
}
`, mode))
	}
	writePipeline("a")
	writeFile(t, dir, "in.txt", "one\n")

	// run runs p.hcl and returns the compile stage's progress line.
	progressLine := func(stderr string) string {
		t.Helper()
		// The line's format is the progress view's; only the reason is ours.
		m := regexp.MustCompile(`(?m)^.*why: .*exec compile.*(DONE|CACHED|finished|cached).*$`).FindAllString(stderr, -1)
		if len(m) == 0 {
			t.Fatalf("no progress line of exec compile in:\n%s", stderr)
		}
		return m[len(m)-1]
	}
	run := func() string {
		t.Helper()
		code, stdout, stderr := piship(t, vars, "run", hcl)
		if code != exitOK {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		return progressLine(stderr)
	}
	dryRun := func() string {
		t.Helper()
		code, stdout, stderr := piship(t, vars, "run", "--dry-run", hcl)
		if code != exitOK {
			t.Fatalf("run --dry-run: exit %d\n%s%s", code, stdout, stderr)
		}
		return stdout
	}
	// explained is the compile stage's reason as piship explain --json has it.
	explained := func() (cacheVerdict, reason string) {
		t.Helper()
		code, stdout, stderr := piship(t, vars, "explain", "compile", "--file", hcl, "--json")
		if code != exitOK {
			t.Fatalf("explain: exit %d\n%s%s", code, stdout, stderr)
		}
		var doc struct {
			Stages []struct {
				Stage, Cache, Reason string
				Lookups              []struct {
					Inputs []struct{ Name, Value string }
				}
			}
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Stages) != 1 {
			t.Fatalf("explain --json: %v\n%s", err, stdout)
		}
		if lks := doc.Stages[0].Lookups; len(lks) != 1 || !slices.ContainsFunc(lks[0].Inputs, func(in struct{ Name, Value string }) bool {
			return in.Name == "input in.txt" && len(in.Value) == 64
		}) {
			t.Errorf("explain --json does not list the key's named inputs:\n%s", stdout)
		}
		return doc.Stages[0].Cache, doc.Stages[0].Reason
	}
	// check holds all three views to exactly one reason (want: a regular
	// expression).
	check := func(what, want, dry, progress string) {
		t.Helper()
		if !regexp.MustCompile(`(?m)exec compile .*- cache miss: ` + want + `$`).MatchString(dry) {
			t.Errorf("%s: --dry-run does not say %q:\n%s", what, want, dry)
		}
		if !regexp.MustCompile(`\(cache miss: ` + want + `\)$`).MatchString(progress) {
			t.Errorf("%s: the progress line does not say %q: %s", what, want, progress)
		}
		if c, r := explained(); c != "miss" || !regexp.MustCompile(`^`+want+`$`).MatchString(r) {
			t.Errorf("%s: piship explain says %s %q, want miss %q", what, c, r, want)
		}
	}

	check("first run", "no earlier entry", dryRun(), run())
	if line := run(); !strings.Contains(strings.ToLower(line), "cached") || strings.Contains(line, "cache miss") {
		t.Fatalf("second run: %s, want cached", line)
	}
	if c, r := explained(); c != "hit" || r != "" {
		t.Errorf("after a hit piship explain says %s %q", c, r)
	}

	writeFile(t, dir, "in.txt", "two\n")
	check("input file", `input in\.txt changed \(sha256 [0-9a-f]{4}\.\. -> [0-9a-f]{4}\.\.\)`, dryRun(), run())

	writePipeline("b")
	check("config attribute", "config attribute env changed", dryRun(), run())

	// A different piship: this test binary with one byte appended, run as
	// piship (PISHIP_TEST_MAIN) in a child process.
	other := filepath.Join(dir, "piship-other")
	copyExecutable(t, other)
	child := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(other, args...)
		cmd.Env = []string{"PISHIP_TEST_MAIN=1", "PISHIP_CACHE_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", other, args, err, out)
		}
		return string(out)
	}
	check("tool", "tool version changed", child("run", "--dry-run", hcl), progressLine(child("run", hcl)))
}

// copyExecutable copies this test binary to dst with one byte appended:
// the same program, another tool digest.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Write([]byte{0}); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestExplainExplainsTheLastRun is issue 29 point 5: after a run with no
// cacheable stages, piship explain explains that run (saying it had no
// cacheable stages), not the pipeline that ran before it.
func TestExplainExplainsTheLastRun(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"PISHIP_CACHE_HOME": filepath.Join(dir, "cache")}
	cached := writeFile(t, dir, "cached.hcl", `pipeline "cached" {
  stage "exec" "compile" {
    command = ["true"]
    cache   = true
  }
}
`)
	plain := writeFile(t, dir, "plain.hcl", `pipeline "plain" {
  stage "exec" "hello" {
    command = ["true"]
  }
}
`)
	for _, p := range []string{cached, plain} {
		if code, _, stderr := piship(t, vars, "run", p); code != exitOK {
			t.Fatalf("run %s: exit %d\n%s", p, code, stderr)
		}
	}
	code, stdout, stderr := piship(t, vars, "explain")
	if code != exitOK {
		t.Fatalf("explain: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(stdout, "\n")
	if !strings.HasPrefix(lines[0], "pipeline plain ("+plain+")") || len(lines) < 2 || !strings.HasPrefix(lines[1], "no cacheable stages: ") ||
		!strings.Contains(stdout, "exec hello: passed, no cache") || strings.Contains(stdout, "compile") {
		t.Errorf("explain after a run without cacheable stages:\n%s", stdout)
	}
	code, stdout, _ = piship(t, vars, "explain", "--json")
	var doc struct {
		Pipeline  string
		Cacheable *bool
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil || doc.Pipeline != "plain" || doc.Cacheable == nil || *doc.Cacheable {
		t.Errorf("explain --json: exit %d, %v:\n%s", code, err, stdout)
	}
	// The earlier run is still there by name, and cacheable.
	if code, stdout, _ := piship(t, vars, "explain", "--pipeline", "cached"); code != exitOK || strings.Contains(stdout, "no cacheable stages") ||
		!strings.Contains(stdout, "exec compile: passed, ran (cache miss)") {
		t.Errorf("explain --pipeline cached: exit %d\n%s", code, stdout)
	}
}

// TestExplainReleaseRebuild is issue 29 point 5: the runtime and bundle
// lookups of release --rebuild miss because of --rebuild, and explain says
// so instead of "the earlier entry with the same key is gone".
func TestExplainReleaseRebuild(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	for _, args := range [][]string{{"release", dir}, {"release", dir, "--rebuild"}} {
		if code, _, stderr := piship(t, env, args...); code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	code, stdout, stderr := piship(t, env, "explain", "--pipeline", "release", "--json")
	if code != exitOK {
		t.Fatalf("explain: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Stages []struct {
			Stage, Cache, Reason string
			Lookups              []struct{ Cache, Reason string }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	rebuilt := map[string]bool{}
	for _, st := range doc.Stages {
		for _, lk := range st.Lookups {
			if strings.Contains(lk.Reason, "is gone") {
				t.Errorf("stage %s, %s cache: %q", st.Stage, lk.Cache, lk.Reason)
			}
			if strings.Contains(lk.Reason, "release --rebuild") {
				rebuilt[st.Stage+" "+lk.Cache] = true
			}
		}
	}
	for _, want := range []string{hostTargetAddr("module.qualify.stage.runtime_entry runtime"), hostTargetAddr("module.payload.stage.bundle bundle")} {
		if !rebuilt[want] {
			t.Errorf("%s: the miss does not name --rebuild:\n%s", want, stdout)
		}
	}
}
