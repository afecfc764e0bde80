package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// wantConfigInvalid checks a command refused its input: exit 2 and a
// CONFIG_INVALID line holding every fragment.
func wantConfigInvalid(t *testing.T, what string, code int, stderr string, frags ...string) {
	t.Helper()
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID") {
		t.Errorf("%s: exit %d, want %d with CONFIG_INVALID:\n%.2000s", what, code, exitUsage, stderr)
		return
	}
	for _, f := range frags {
		if !strings.Contains(stderr, f) {
			t.Errorf("%s: stderr lacks %q:\n%.2000s", what, f, stderr)
		}
	}
}

// `x = ((((...))))` 100,000 deep used to crash validate, run, graph, fmt
// and lock with a Go stack overflow (1.1 GB): each now refuses the file
// with CONFIG_INVALID naming it and the line, before the HCL parser sees
// it; so is a --input value nested as deep.
func TestDeepNestingIsConfigInvalid(t *testing.T) {
	const n = 100_000
	deep := "x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n)
	dir := t.TempDir()
	p := writeFile(t, dir, "deep.hcl", "pipeline \"deep\" {\n  locals {\n    "+deep+"\n  }\n}\n")
	dist := filepath.Join(dir, "dist")
	writeFile(t, dist, "distribution.hcl", "distribution \"x\" {\n  name = \"X\"\n  "+deep+"\n}\n")
	for _, args := range [][]string{
		{"validate", p},
		{"run", p},
		{"graph", p},
		{"fmt", p},
		{"fmt", "--check", p},
		{"validate", filepath.Join(dist, "distribution.hcl")},
		{"lock", dist},
	} {
		code, _, stderr := piship(t, nil, args...)
		wantConfigInvalid(t, strings.Join(args[:len(args)-1], " "), code, stderr, "nesting too deep", "nests more than 256 levels", ":3:")
		if len(stderr) > 10_000 {
			t.Errorf("%v: %d bytes of stderr", args[0], len(stderr))
		}
	}
	typed := writeFile(t, dir, "typed.hcl", "pipeline \"typed\" {\n  input \"n\" {\n    type = list(any)\n  }\n  stage \"exec\" \"a\" {\n    command = [\"true\"]\n  }\n}\n")
	code, _, stderr := piship(t, nil, "run", typed, "--dry-run", "--input", "n="+strings.Repeat("[", n)+strings.Repeat("]", n))
	wantConfigInvalid(t, "run --input", code, stderr, "--input n", "nesting too deep")
}

// --parallelism takes 0 (the number of CPUs) or 1 to 1024, on run and on
// every command that runs a built-in pipeline: a billion used to allocate
// 857 MB for a one-stage pipeline.
func TestParallelismBound(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "p.hcl", "pipeline \"p\" {\n  stage \"exec\" \"a\" {\n    command = [\"true\"]\n  }\n}\n")
	for _, n := range []string{"1000000000", "5000", "1025", "-1"} {
		code, _, stderr := piship(t, nil, "run", p, "--parallelism", n)
		wantConfigInvalid(t, "run --parallelism "+n, code, stderr, "--parallelism "+n+" is out of range", "1 to 1024")
		code, _, stderr = piship(t, nil, "run", p, "--dry-run", "--parallelism", n)
		wantConfigInvalid(t, "run --dry-run --parallelism "+n, code, stderr, "--parallelism "+n+" is out of range")
	}
	homes := map[string]string{
		"PISHIP_INSTALL_HOME": filepath.Join(dir, "install"), "PISHIP_BIN_HOME": filepath.Join(dir, "bin"),
		"PISHIP_STATE_HOME": filepath.Join(dir, "state"),
	}
	code, _, stderr := piship(t, homes, "rollback", "hello", "--parallelism", "5000")
	wantConfigInvalid(t, "rollback --parallelism 5000", code, stderr, "--parallelism 5000 is out of range")
	for _, n := range []string{"0", "1", "1024"} {
		if code, _, stderr := piship(t, nil, "run", p, "--parallelism", n); code != exitOK {
			t.Errorf("--parallelism %s: exit %d\n%s", n, code, stderr)
		}
	}
}

// A second --input of one name is refused, naming it, instead of the last
// one silently winning.
func TestDuplicateInputRefused(t *testing.T) {
	p := writeFile(t, t.TempDir(), "p.hcl", "pipeline \"p\" {\n  input \"word\" {\n    type = string\n  }\n  stage \"exec\" \"a\" {\n    command = [\"echo\", input.word]\n  }\n}\n")
	code, _, stderr := piship(t, nil, "run", p, "--dry-run", "--input", "word=a", "--input", "word=b")
	wantConfigInvalid(t, "duplicate --input", code, stderr, `--input word is given twice ("word=a", then "word=b")`, "give each input once")
	if code, _, stderr := piship(t, nil, "run", p, "--dry-run", "--input", "word=a"); code != exitOK {
		t.Errorf("one --input: exit %d\n%s", code, stderr)
	}
}
