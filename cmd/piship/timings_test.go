package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failed run still writes its page (failures are what one looks at), and
// piship timings finds the dependency edges only in the pipeline that ran.
func TestTimingsCommand(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "tp.hcl", `pipeline "tp" {
  stage "exec" "first" { command = ["true"] }
  stage "exec" "second" {
    command    = ["sh", "-c", "echo broke >&2; exit 3"]
    depends_on = [stage.first]
  }
  stage "exec" "after" {
    command    = ["true"]
    depends_on = [stage.second]
  }
}
`)
	other := writeFile(t, dir, "other.hcl", "pipeline \"other\" {\n  stage \"exec\" \"x\" { command = [\"true\"] }\n}\n")
	renamed := writeFile(t, dir, "renamed.hcl", "pipeline \"tp\" {\n  stage \"exec\" \"first\" { command = [\"true\"] }\n}\n")
	page := filepath.Join(dir, "run.html")
	trace := filepath.Join(dir, "run.json")
	code, _, stderr := piship(t, map[string]string{"PISHIP_PROGRESS": "0"}, "run", p, "--timings", page, "--trace-file", trace)
	if code != exitFailed {
		t.Fatalf("run: exit %d, want 1\n%s", code, stderr)
	}
	html := readText(t, page)
	for _, s := range []string{`data-stage="exec second" data-cache="none" data-verdict="failed" data-critical="true"`,
		`<b class="outcome-failed">failed</b>`, "1 of the pipeline's stages did not run (not started, or skipped): after"} {
		if !strings.Contains(html, s) {
			t.Errorf("the failed run's page lacks %q", s)
		}
	}

	// The trace records the file that ran (issue 29 point 7): timings
	// reads the edges from it, though by name tp is nowhere to be found.
	out := filepath.Join(dir, "t.html")
	code, _, stderr = piship(t, nil, "timings", trace, "-o", out)
	if code != exitOK || stderr != "" || readText(t, out) != html {
		t.Fatalf("timings of a trace that records its file: exit %d, or a page unlike --timings'\n%s", code, stderr)
	}
	// A trace that records no file (an older piship) falls back to the
	// name: a page without a critical path, and a warning saying how to
	// get one.
	noFile := writeFile(t, dir, "nofile.json", strings.ReplaceAll(readText(t, trace), `"piship.pipeline.file"`, `"x.unrelated"`))
	code, _, stderr = piship(t, nil, "timings", noFile, "-o", out)
	if code != exitOK || !strings.Contains(stderr, "warning: the critical path is not marked") || !strings.Contains(readText(t, out), "Critical path not marked") {
		t.Fatalf("timings without the pipeline: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = piship(t, nil, "timings", trace, "-o", out, "--pipeline", p); code != exitOK || readText(t, out) != html {
		t.Fatalf("timings --pipeline: exit %d, or a page unlike --timings'\n%s", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--pipeline", other}, "the trace is of pipeline tp, but " + other + " holds pipeline other"},
		{[]string{"--pipeline", renamed}, "has no stage second that the trace ran"},
		{[]string{"--pipeline", filepath.Join(dir, "gone.hcl")}, "CONFIG_INVALID: cannot read pipeline file"},
	} {
		code, _, stderr := piship(t, nil, append([]string{"timings", trace, "-o", out}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("timings %v: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, stderr)
		}
	}

	// A launcher trace is OTLP JSON too, but of phases: refused by name.
	launch := writeFile(t, dir, "launch.json", `{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"piship-launch"},"spans":[
{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"launch hello","kind":1,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000050000000","attributes":[],"status":{}}]}]}]}`)
	if code, _, stderr := piship(t, nil, "timings", launch, "-o", out); code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: "+launch+": no pipeline root span") ||
		!strings.Contains(stderr, "piship-launch") {
		t.Errorf("a launcher trace: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := piship(t, nil, "timings", page, "-o", out); code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: "+page+": not JSON of an OTLP trace") {
		t.Errorf("an HTML file as the trace: exit %d\n%s", code, stderr)
	}
	unwritable := filepath.Join(dir, "no-such-dir", "t.html")
	if code, _, stderr := piship(t, nil, "timings", trace, "-o", unwritable); code != exitFailed ||
		!strings.Contains(stderr, "TIMINGS_FAILED: cannot write the timings page "+unwritable) {
		t.Errorf("an unwritable -o: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := piship(t, nil, "timings", trace); code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID: piship timings needs -o FILE.html") {
		t.Errorf("no -o: exit %d\n%s", code, stderr)
	}
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTimingsUsesTheRecordedFile is issue 29 point 7: a pipeline file whose
// pipeline is called build is not the built-in build pipeline; piship
// timings reads the edges from the file the trace records, not from
// whatever the name finds.
func TestTimingsUsesTheRecordedFile(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "ci/build.hcl", `pipeline "build" {
  stage "exec" "compile" { command = ["true"] }
  stage "exec" "link" {
    command    = ["true"]
    depends_on = [stage.compile]
  }
}
`)
	trace := filepath.Join(dir, "run.json")
	if code, _, stderr := piship(t, map[string]string{"PISHIP_PROGRESS": "0"}, "run", p, "--trace-file", trace); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "t.html")
	code, stdout, stderr := piship(t, nil, "timings", trace, "-o", out)
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "timings of pipeline build") ||
		!strings.Contains(readText(t, out), `data-stage="exec link" data-cache="none" data-verdict="passed" data-critical="true"`) {
		t.Fatalf("timings: exit %d\n%s%s", code, stdout, stderr)
	}
}
