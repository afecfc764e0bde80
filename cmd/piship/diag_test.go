package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// build, release and lock print a distribution.hcl's mistake exactly as
// validate does (file:line:col: error:, the snippet, the fix), not hcl's
// `distribution.hcl:3,22-22` range in one line, and exit 2.
func TestBuildPrintsDiagnosticsAsValidateDoes(t *testing.T) {
	dir := copyDist(t, "hello")
	file := filepath.Join(dir, "distribution.hcl")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(src), `name    = "Hello"`, `name    = Hello`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	want := file + ":4:13: error: Variables not allowed\n" +
		"    4 |   name    = Hello\n" +
		"      |             ^^^^^\n" +
		"  Variables may not be used here: distribution.hcl is static; write the value itself.\n\n"
	code, _, stderr := piship(t, nil, "validate", file)
	if code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Fatalf("validate: exit %d\n%s\nwant it to start with\n%s", code, stderr, want)
	}
	for _, cmd := range []string{"build", "release", "lock"} {
		code, _, stderr := piship(t, buildEnv(t), cmd, dir)
		if code != exitUsage || !strings.HasPrefix(stderr, want) || !strings.Contains(stderr, "CONFIG_INVALID") {
			t.Errorf("%s: exit %d, want %d and validate's diagnostic, then CONFIG_INVALID:\n%s", cmd, code, exitUsage, stderr)
		}
		if strings.Contains(stderr, ",13-18") || strings.Contains(stderr, "<nil>") {
			t.Errorf("%s: hcl's range format:\n%s", cmd, stderr)
		}
	}
}
