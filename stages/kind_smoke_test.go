package stages

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
)

// A failed smoke test is reported at its smoke block in distribution.hcl,
// the program's output line by line (not a quoted string with \n
// escapes), then what to fix; a passing test beside it is not reported.
func TestSmokeFailureIsADiagnosticAtItsBlock(t *testing.T) {
	dir := smokeDist(t, `  smoke "passes" {
    args   = ["--version"]
    expect = "line one"
  }
  smoke "greets" {
    args   = ["hi"]
    expect = "^hello$"
  }
`, "printf 'line one\\nline two\\n'\n")
	_, err := Smoke{}.Run(context.Background(), &stage.Invocation{Name: "tests", Dir: dir},
		SmokeConfig{Payload: filepath.Join(dir, "payload"), Distribution: dir})
	var de *diag.Error
	if !errors.As(err, &de) || de.Code != "SMOKE_FAILED" || len(de.Diags) != 1 {
		t.Fatalf("err %v, want one SMOKE_FAILED diagnostic", err)
	}
	file := filepath.Join(dir, "distribution.hcl")
	if want := "SMOKE_FAILED: " + file + `:15:9: smoke test greets failed: its output does not match "^hello$" (1 of 2 smoke tests failed)`; err.Error() != want {
		t.Errorf("message\n%s\nwant\n%s", err, want)
	}
	src, _ := os.ReadFile(file)
	got := diag.Render(de.Diags, diag.RenderOptions{Source: func(string) []byte { return src }})
	for _, w := range []string{
		file + ":15:9: error: smoke test greets failed",
		"   15 |   smoke \"greets\" {\n      |         ^^^^^^^^\n",
		"  demo hi printed:\n      | line one\n      | line two\n",
		"  Fix the program, or the test's expect",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("rendered failure lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, `\n`) {
		t.Errorf("escaped newlines in\n%s", got)
	}
}

// smokeDist writes a distribution "demo" whose distribution.hcl has the
// given smoke blocks (its first one on line 10) and whose payload's
// bin/demo is a shell script of body, and returns its directory.
func smokeDist(t *testing.T, smokes, body string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel, src string, mode os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("distribution.hcl", `distribution "demo" {
  name    = "Demo"
  version = "1.0.0"
  command = "demo"
  runtime {
    entry = "node_modules/demo-cli/bin/demo.js"
  }
  release {
    targets = ["linux-x64"]
  }
`+smokes+"}\n", 0o644)
	write("runtime/package.json", `{"name":"demo","version":"1.0.0"}`, 0o644)
	write("runtime/package-lock.json", `{"name":"demo","lockfileVersion":3,"packages":{}}`, 0o644)
	write("payload/bin/demo", "#!/bin/sh\n"+body, 0o755)
	return dir
}
