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
		code, stdout, stderr := cli(t, vars, "run", hcl)
		if code != exitOK {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		return progressLine(stderr)
	}
	dryRun := func() string {
		t.Helper()
		code, stdout, stderr := cli(t, vars, "run", "--dry-run", hcl)
		if code != exitOK {
			t.Fatalf("run --dry-run: exit %d\n%s%s", code, stdout, stderr)
		}
		return stdout
	}
	// explained is the compile stage's reason as piship explain --json has it.
	explained := func() (cacheVerdict, reason string) {
		t.Helper()
		code, stdout, stderr := cli(t, vars, "explain", "compile", "--file", hcl, "--json")
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
