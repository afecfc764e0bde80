package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// piship run --plan (issue 31, point 3): on a cold cache every stage says
// whether it runs or what it waits on; after a run, with one input file
// changed, exactly the changed stage runs (with explain's reason) and the
// one that reads its output waits on it, the rest cached with their keys;
// --json is the same plan. An exec stage without cache is "not cacheable",
// in the plan and as "cache: none" in --dry-run, never "unknown".
func TestRunPlan(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"PISHIP_CACHE_HOME": filepath.Join(dir, "cache"), "PISHIP_PROGRESS": "0"}
	writeFile(t, dir, "a.txt", "a\n")
	writeFile(t, dir, "b.txt", "b\n")
	hcl := writeFile(t, dir, "p.hcl", `pipeline "plan" {
  stage "exec" "one" {
    command = ["sh", "-c", "cat a.txt > one.out"]
    inputs  = ["a.txt"]
    outputs = ["one.out"]
    cache   = true
  }
  stage "exec" "two" {
    command = ["sh", "-c", "cat b.txt"]
    inputs  = ["b.txt"]
    cache   = true
  }
  stage "exec" "three" {
    command = ["sh", "-c", "cat one.out > three.out"]
    inputs  = ["one.out"]
    outputs = ["three.out"]
    cache   = true
    depends_on = [stage.one]
  }
  stage "exec" "four" {
    command = ["echo", stage.two.stdout]
    cache   = true
  }
  stage "exec" "report" {
    command = ["echo", stage.four.stdout]
  }
  stage "digest" "sum" {
    files = ["b.txt"]
  }
}
`)
	plan := func() string {
		t.Helper()
		code, stdout, stderr := piship(t, vars, "run", hcl, "--plan")
		if code != exitOK {
			t.Fatalf("run --plan: exit %d\n%s%s", code, stdout, stderr)
		}
		return stdout
	}
	// lines checks each stage's line (a regular expression after its title).
	lines := func(what, out string, want map[string]string) {
		t.Helper()
		for title, re := range want {
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(title) + ` +` + re + `$`).MatchString(out) {
				t.Errorf("%s: no line %q %s in:\n%s", what, title, re, out)
			}
		}
	}
	key := `[0-9a-f]{12}`

	cold := plan()
	lines("cold", cold, map[string]string{
		"exec one": `runs, key ` + key + `, cache miss: no earlier entry; writes one\.out`,
		"exec two": `runs, key ` + key + `, cache miss: no earlier entry`,
		// one.out is not there before one runs: exec's inputs cannot be expanded.
		"exec three":  `decided after stage one: its cache key: CONFIG_INVALID: inputs: "one\.out" matched no files .*; needs one`,
		"exec four":   `decided after stage two: its attribute command; needs two`,
		"exec report": `not cacheable; needs four`,
		"digest sum":  `not cacheable`,
	})
	if !strings.HasPrefix(cold, "plan of pipeline plan ("+hcl+"): 6 stages in 3 waves; nothing runs\nwave 1\n") ||
		!strings.Contains(cold, "\n2 run, 2 not cacheable, 2 decided after other stages;") {
		t.Errorf("cold plan:\n%s", cold)
	}
	if code, stdout, stderr := piship(t, vars, "run", hcl, "--dry-run"); code != exitOK || !regexp.MustCompile(`(?m)^ +5  exec report +cache: none$`).MatchString(stdout) {
		t.Errorf("run --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}

	if code, stdout, stderr := piship(t, vars, "run", hcl); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	writeFile(t, dir, "b.txt", "B\n")
	warm := plan()
	lines("b.txt changed", warm, map[string]string{
		"exec one":    `cached, key ` + key + `; writes one\.out`,
		"exec two":    `runs, key ` + key + `, cache miss: input b\.txt changed \(sha256 [0-9a-f]{4}\.\. -> [0-9a-f]{4}\.\.\)`,
		"exec three":  `cached, key ` + key + `; writes three\.out; needs one`,
		"exec four":   `decided after stage two: its attribute command; needs two`,
		"exec report": `not cacheable; needs four`,
	})

	writeFile(t, dir, "a.txt", "A\n")
	lines("a.txt changed too", plan(), map[string]string{
		"exec one":   `runs, key ` + key + `, cache miss: input a\.txt changed \(sha256 [0-9a-f]{4}\.\. -> [0-9a-f]{4}\.\.\); writes one\.out`,
		"exec three": `decided after stage one: its input one\.out; writes three\.out; needs one`,
	})
	writeFile(t, dir, "a.txt", "a\n")

	code, stdout, stderr := piship(t, vars, "run", hcl, "--plan", "--json")
	var doc struct {
		Schema string
		Waves  int
		Stages []struct {
			Address, Action, Key, Reason string
			After, Needs, Writes         []string
			Wave                         int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &doc); code != exitOK || err != nil || doc.Schema != "piship-plan/v1" || doc.Waves != 3 || len(doc.Stages) != 6 {
		t.Fatalf("run --plan --json: exit %d %v\n%s%s", code, err, stdout, stderr)
	}
	got := map[string]string{}
	for _, s := range doc.Stages {
		got[s.Address] = s.Action + " " + strings.Join(s.After, ",")
		if (s.Action == "cached" || s.Action == "runs") && len(s.Key) != 64 || s.Action == "runs" && !strings.HasPrefix(s.Reason, "input b.txt changed") {
			t.Errorf("run --plan --json: stage %s: %s key %q reason %q", s.Address, s.Action, s.Key, s.Reason)
		}
	}
	want := map[string]string{"one": "cached ", "two": "runs ", "three": "cached ", "four": "decided after two", "report": "not cacheable ", "sum": "not cacheable "}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("run --plan --json: stage %s is %q, want %q", name, got[name], w)
		}
	}

	for _, args := range [][]string{{"run", hcl, "--json"}, {"run", hcl, "--plan", "--dry-run"}} {
		if code, _, stderr := piship(t, vars, args...); code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID") {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
}
