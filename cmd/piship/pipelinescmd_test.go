package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/pipelines"
)

// piship pipelines lists every built-in pipeline with its description in
// aligned columns; piship pipelines show NAME prints one byte for byte,
// and what it prints is a pipeline file that validates.
func TestPipelinesListAndShow(t *testing.T) {
	code, stdout, stderr := piship(t, nil, "pipelines")
	if code != exitOK || stderr != "" {
		t.Fatalf("pipelines: exit %d\n%s%s", code, stdout, stderr)
	}
	names := pipelines.EmbeddedNames()
	if len(names) < 7 {
		t.Fatalf("only %d built-in pipelines: %v", len(names), names)
	}
	lines := strings.Split(stdout, "\n")
	col := -1
	for i, name := range names {
		m := regexp.MustCompile(`^(` + regexp.QuoteMeta(name) + ` +)(\S.*)$`).FindStringSubmatch(lines[i])
		if m == nil {
			t.Fatalf("line %d is not %s and its description: %q\n%s", i+1, name, lines[i], stdout)
		}
		if col >= 0 && len(m[1]) != col {
			t.Errorf("%s's description starts at column %d, the others' at %d:\n%s", name, len(m[1]), col, stdout)
		}
		col = len(m[1])
	}
	if !strings.Contains(lines[1], "Hash a Go source tree") { // demo's description
		t.Errorf("demo's line: %q", lines[1])
	}
	if !strings.Contains(stdout, "piship pipelines show NAME") {
		t.Errorf("the listing does not say how to print one:\n%s", stdout)
	}

	for _, name := range names {
		want, err := os.ReadFile(filepath.Join("..", "..", "pipelines", name+".hcl"))
		if err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := piship(t, nil, "pipelines", "show", name)
		if code != exitOK || stdout != string(want) || stderr != "" {
			t.Errorf("pipelines show %s: exit %d, %d bytes (the file has %d)\n%s", name, code, len(stdout), len(want), stderr)
		}
	}
	_, shown, _ := piship(t, nil, "pipelines", "show", "release.hcl")
	p := writeFile(t, t.TempDir(), "release.hcl", shown)
	if code, stdout, stderr := piship(t, nil, "validate", p); code != exitOK {
		t.Errorf("validate what pipelines show release printed: exit %d\n%s%s", code, stdout, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"pipelines", "show", "relase"}, `USAGE_INVALID: no built-in pipeline "relase" (did you mean "release"?); the built-in pipelines are build, `},
		{[]string{"pipelines", "show", "../../pipelines/build.hcl"}, `USAGE_INVALID: no built-in pipeline "../../pipelines/build.hcl"`},
		{[]string{"pipelines", "show"}, "USAGE_INVALID: piship pipelines show needs NAME"},
		{[]string{"pipelines", "lsit"}, `USAGE_INVALID: unknown command "lsit" for "piship pipelines"`},
	} {
		code, stdout, stderr := piship(t, nil, tc.args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("piship %s: exit %d, want 2 and %q\n%s%s", strings.Join(tc.args, " "), code, tc.want, stdout, stderr)
		}
	}
}
