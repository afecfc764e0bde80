package stages_test

// The exec and digest kinds run through the engine as a pipeline runs
// them: outputs flow to dependents, failures and timeouts read well, and
// exec's action cache serves, restores and distrusts entries. (They lived
// in engine's tests; here the engine's own test binary need not link the
// kinds, the bundler and the rest of the product.)

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/stage"
)

func mustParse(t testing.TB, src string, reg *stage.Registry) *graph.Graph {
	t.Helper()
	gs, _, diags := graph.Parse([]byte(src), "test.hcl", t.TempDir(), reg)
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	return gs[0]
}

func TestStageOutputsFlowToDependents(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := mustParse(t, fmt.Sprintf(`
pipeline "p" {
  input "greeting" { default = "hi" }
  locals { loud = upper(input.greeting) }
  stage "digest" "d" {
    dir   = %q
    files = ["a.txt"]
  }
  stage "exec" "e" {
    command = ["sh", "-c", format("echo %%s %%s", local.loud, stage.d.files["a.txt"])]
  }
}`, dir), stages.Default())
	res, err := engine.Run(context.Background(), g, engine.Options{})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	want := "HI 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
	if got := res.Stages[1].Outputs["stdout"].AsString(); got != want {
		t.Fatalf("stdout %q, want %q", got, want)
	}
}

func TestExecFailureReportsStderrTail(t *testing.T) {
	g := mustParse(t, `
pipeline "p" {
  stage "exec" "bad" { command = ["sh", "-c", "echo first >&2; echo last words >&2; exit 3"] }
}`, stages.Default())
	res, _ := engine.Run(context.Background(), g, engine.Options{})
	err := res.Err()
	if err == nil || !strings.Contains(err.Error(), "stage bad failed: EXEC_FAILED: sh exited with status 3: first | last words") {
		t.Fatalf("error %v", err)
	}
}

func TestExecTimeout(t *testing.T) {
	g := mustParse(t, `
pipeline "p" {
  stage "exec" "slow" {
    command = ["sh", "-c", "sleep 30"]
    timeout = "100ms"
  }
}`, stages.Default())
	start := time.Now()
	res, _ := engine.Run(context.Background(), g, engine.Options{})
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "EXEC_TIMEOUT: sh timed out after 100ms") {
		t.Fatalf("error %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatal("timeout did not stop the command")
	}
}

func TestActionCache(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("in.txt", "one")
	pipeline := func(flag string) string {
		return fmt.Sprintf(`
pipeline "p" {
  stage "exec" "build" {
    command = ["sh", "-c", "echo run >> runs.log; cat in.txt > out/result.txt; echo built"]
    dir     = %q
    inputs  = ["in.txt"]
    outputs = ["out/result.txt"]
    env     = { FLAG = %q }
    cache   = true
  }
}`, dir, flag)
	}
	if err := os.MkdirAll(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
		return strings.Count(string(b), "run\n")
	}
	run := func(flag string) *engine.StageResult {
		t.Helper()
		g := mustParse(t, pipeline(flag), stages.Default())
		res, err := engine.Run(context.Background(), g, engine.Options{Cache: cache.OpenActions(home), ToolDigest: "test"})
		if err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
		return res.Stages[0]
	}

	if r := run("a"); r.CacheHit || runs() != 1 {
		t.Fatalf("first run: hit=%v runs=%d", r.CacheHit, runs())
	}
	os.Remove(filepath.Join(dir, "out", "result.txt"))
	r := run("a")
	if !r.CacheHit || runs() != 1 {
		t.Fatalf("unchanged run: hit=%v runs=%d, want a hit without running", r.CacheHit, runs())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "result.txt")); err != nil || string(b) != "one" {
		t.Fatalf("output not restored: %q %v", b, err)
	}
	if r.Outputs["stdout"].AsString() != "built" {
		t.Fatalf("cached stdout %q", r.Outputs["stdout"].AsString())
	}

	write("in.txt", "two")
	if r := run("a"); r.CacheHit || runs() != 2 {
		t.Fatalf("changed input: hit=%v runs=%d", r.CacheHit, runs())
	}
	if r := run("b"); r.CacheHit || runs() != 3 {
		t.Fatalf("changed config: hit=%v runs=%d", r.CacheHit, runs())
	}

	// Tamper with every stored file of every entry: the entry must be
	// discarded and the command run again.
	err := filepath.WalkDir(filepath.Join(home, "actions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && filepath.Base(filepath.Dir(p)) == "files" {
			return os.WriteFile(p, []byte("tampered"), 0o644)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := run("b"); r.CacheHit || runs() != 4 {
		t.Fatalf("tampered entry: hit=%v runs=%d, want a rerun", r.CacheHit, runs())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "result.txt")); string(b) != "two" {
		t.Fatalf("output after rerun %q", b)
	}
	if r := run("b"); !r.CacheHit || runs() != 4 {
		t.Fatalf("after rerun: hit=%v runs=%d, want the fresh entry served", r.CacheHit, runs())
	}
}

// A command that cannot start, and one that does not write an output it
// declares, fail with EXEC_FAILED and say what to do.
func TestExecFailuresCarryTheirCode(t *testing.T) {
	for _, c := range []struct{ stage, want string }{
		{`stage "exec" "x" { command = ["piship-no-such-program"] }`, "stage x failed: EXEC_FAILED: cannot run piship-no-such-program"},
		{`stage "exec" "x" {
    command = ["true"]
    outputs = ["out.txt"]
    dir     = "` + t.TempDir() + `"
  }`, "stage x failed: EXEC_FAILED: declared output out.txt was not written by the command"},
	} {
		g := mustParse(t, "pipeline \"p\" {\n  "+c.stage+"\n}", stages.Default())
		res, _ := engine.Run(context.Background(), g, engine.Options{})
		if err := res.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}
