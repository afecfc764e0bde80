package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/cmd/internal/cli"
)

// piship runs piship in-process with a clean environment plus env.
func piship(t testing.TB, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return cliTraced(t, nil, env, args...)
}

// cliTraced is piship whose runs also give their spans to spans (an
// independent recorder, tracetest.SpanRecorder).
func cliTraced(t testing.TB, spans []sdktrace.SpanProcessor, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		switch k {
		case "PISHIP_CACHE_HOME":
			return filepath.Join(t.TempDir(), "cache")
		case "HOME", "PATH":
			return os.Getenv(k)
		}
		return ""
	}
	code = cli.Dispatch(&env{Ctx: context.Background(), Stdout: &out, Stderr: &errb, Getenv: getenv, Spans: spans, Program: program}, args)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateCycleExits2WithEveryEdge(t *testing.T) {
	p := writeFile(t, t.TempDir(), "cycle.hcl", `pipeline "cyc" {
  stage "exec" "a" {
    command = [stage.b.stdout]
  }
  stage "exec" "b" {
    command    = ["true"]
    depends_on = [stage.a]
  }
}
`)
	code, _, stderr := piship(t, nil, "validate", p)
	if code != exitUsage {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"Dependency cycle",
		"a -> b -> a",
		`stage "a" refers to stage "b" at ` + p + ":3:16",
		`stage "b" depends_on stage "a" at ` + p + ":7:19",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestValidateUndeclaredOutput(t *testing.T) {
	p := writeFile(t, t.TempDir(), "bad.hcl", `pipeline "bad" {
  stage "exec" "a" { command = ["true"] }
  stage "exec" "b" { command = [stage.a.exitcode] }
}
`)
	code, _, stderr := piship(t, nil, "validate", p)
	if code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	want := `Stage "a" (kind exec) has no output "exitcode". Available outputs: exit_code, outputs, stderr, stdout.`
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, p+":3:33: error: Reference to an undeclared output") {
		t.Fatalf("stderr lacks %q with position:\n%s", want, stderr)
	}
}

func TestValidateEmbeddedAndDirectory(t *testing.T) {
	code, stdout, stderr := piship(t, nil, "validate", "../../pipelines")
	if code != exitOK || !strings.HasPrefix(stdout, "ok: ") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestRunFailureLastLineNamesFirstFailingVerdict(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "p.hcl", `pipeline "rel" {
  stage "exec" "tests" { command = ["sh", "-c", "echo tests broke >&2; exit 1"] }
  stage "exec" "sigs"  { command = ["sh", "-c", "sleep 0.2; echo bad signature >&2; exit 2"] }
  stage "exec" "clean" {
    command    = ["true"]
    always     = true
    depends_on = [stage.tests, stage.sigs]
  }
  verdicts = [stage.sigs, stage.tests]
}
`)
	code, _, stderr := piship(t, map[string]string{"PISHIP_PROGRESS": "0"}, "run", p)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	last := lines[len(lines)-1]
	if last != "rel: stage sigs failed: EXEC_FAILED: sh exited with status 2: bad signature" {
		t.Fatalf("last line %q\nstderr:\n%s", last, stderr)
	}
	if !strings.Contains(stderr, "rel: exec clean: DONE ") {
		t.Fatalf("always stage did not run:\n%s", stderr)
	}
}

func TestRunInputsDryRunAndUsage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in.txt", "x")
	p := writeFile(t, dir, "p.hcl", `pipeline "p" {
  input "word" { type = string }
  stage "exec" "say" {
    command = ["sh", "-c", "echo ${input.word}"]
    inputs  = ["in.txt"]
    cache   = true
  }
}
`)
	if code, _, stderr := piship(t, nil, "run", p); code != exitUsage || !strings.Contains(stderr, `input "word" is required`) {
		t.Fatalf("missing input: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := piship(t, nil, "run", p, "--input", "nope=1", "--input", "word=x"); code != exitUsage || !strings.Contains(stderr, `no input "nope"`) {
		t.Fatalf("unknown input: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := piship(t, nil, "run", p, "--dry-run", "--input", "word=hi")
	if code != exitOK || !strings.Contains(stdout, "exec say") || !strings.Contains(stdout, "cache: miss") {
		t.Fatalf("dry run: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := piship(t, nil, "bogus"); code != exitUsage {
		t.Fatalf("unknown command exit %d", code)
	}
	if code, _, _ := piship(t, nil, "run", "no-such-pipeline"); code != exitUsage {
		t.Fatalf("unknown pipeline exit %d", code)
	}
}

func TestGraphFormats(t *testing.T) {
	p := writeFile(t, t.TempDir(), "g.hcl", `pipeline "g" {
  stage "exec" "a" { command = ["true"] }
  stage "exec" "b" { command = [stage.a.stdout] }
}
`)
	code, dot, _ := piship(t, nil, "graph", p)
	if code != exitOK || !strings.Contains(dot, `"a" -> "b";`) {
		t.Fatalf("dot: %d\n%s", code, dot)
	}
	code, mer, _ := piship(t, nil, "graph", p, "--format", "mermaid")
	if code != exitOK || !strings.Contains(mer, "s0 --> s1") {
		t.Fatalf("mermaid: %d\n%s", code, mer)
	}
	_, again, _ := piship(t, nil, "graph", p, "--format", "mermaid")
	if again != mer {
		t.Fatal("graph output is not stable")
	}
}

func TestStagesAndFmt(t *testing.T) {
	code, out, _ := piship(t, nil, "stages", "exec")
	if code != exitOK || !strings.Contains(out, "command") || !strings.Contains(out, "exit_code") {
		t.Fatalf("stages exec: %d\n%s", code, out)
	}
	p := writeFile(t, t.TempDir(), "f.hcl", "pipeline \"f\" {\nstage \"exec\" \"a\" {\ncommand=[\"true\"]\n}\n}\n")
	if code, out, _ := piship(t, nil, "fmt", "--check", p); code != exitFailed || !strings.Contains(out, p) {
		t.Fatalf("fmt --check on unformatted: %d %s", code, out)
	}
	if code, _, stderr := piship(t, nil, "fmt", p); code != exitOK {
		t.Fatalf("fmt: %d %s", code, stderr)
	}
	if code, _, _ := piship(t, nil, "fmt", "--check", p); code != exitOK {
		t.Fatalf("fmt --check after fmt: %d", code)
	}
	b, _ := os.ReadFile(p)
	if !strings.Contains(string(b), "  stage \"exec\" \"a\" {\n    command = [\"true\"]") {
		t.Fatalf("formatted:\n%s", b)
	}
}

func TestValidateAndDocumentDistributions(t *testing.T) {
	code, stdout, stderr := piship(t, nil, "validate", "../../testdata/distributions/hello/distribution.hcl", "../../testdata/distributions/pi")
	if code != exitOK || !strings.HasPrefix(stdout, "ok: 2 ") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	dir := t.TempDir()
	p := writeFile(t, dir, "distribution.hcl", `distribution "x" {
  name    = "X"
  version = "1.0"
  comand  = "x"
}
`)
	code, _, stderr = piship(t, nil, "validate", p)
	if code != exitUsage || !strings.Contains(stderr, p+":4:3: error:") || !strings.Contains(stderr, `Did you mean "command"?`) {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	code, stdout, _ = piship(t, nil, "stages", "distribution")
	if code != exitOK || !strings.Contains(stdout, "verify_at_launch") {
		t.Fatalf("stages distribution: %d\n%s", code, stdout)
	}
}

// Exit codes as the tests expect them (README: 0 ok, 1 failed, 2 usage).
const (
	exitOK     = cli.ExitOK
	exitFailed = cli.ExitFailed
	exitUsage  = cli.ExitUsage
)
