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
	code, _, stderr := cli(t, map[string]string{"PISHIP_PROGRESS": "0"}, "run", p, "--timings", page, "--trace-file", trace)
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

	// By name, tp is nowhere to be found: a page without a critical path,
	// and a warning saying how to get one.
	out := filepath.Join(dir, "t.html")
	code, _, stderr = cli(t, nil, "timings", trace, "-o", out)
	if code != exitOK || !strings.Contains(stderr, "warning: the critical path is not marked") || !strings.Contains(readText(t, out), "Critical path not marked") {
		t.Fatalf("timings without the pipeline: exit %d\n%s", code, stderr)
	}
	if code, _, stderr = cli(t, nil, "timings", trace, "-o", out, "--pipeline", p); code != exitOK || readText(t, out) != html {
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
		code, _, stderr := cli(t, nil, append([]string{"timings", trace, "-o", out}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("timings %v: exit %d, want 2 with %q\n%s", tc.args, code, tc.want, stderr)
		}
	}

	// A launcher trace is OTLP JSON too, but of phases: refused by name.
	launch := writeFile(t, dir, "launch.json", `{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"piship-launch"},"spans":[
{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"launch hello","kind":1,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000050000000","attributes":[],"status":{}}]}]}]}`)
	if code, _, stderr := cli(t, nil, "timings", launch, "-o", out); code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: "+launch+": no pipeline root span") ||
		!strings.Contains(stderr, "piship-launch") {
		t.Errorf("a launcher trace: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := cli(t, nil, "timings", page, "-o", out); code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: "+page+": not JSON of an OTLP trace") {
		t.Errorf("an HTML file as the trace: exit %d\n%s", code, stderr)
	}
	unwritable := filepath.Join(dir, "no-such-dir", "t.html")
	if code, _, stderr := cli(t, nil, "timings", trace, "-o", unwritable); code != exitFailed ||
		!strings.Contains(stderr, "TIMINGS_FAILED: cannot write the timings page "+unwritable) {
		t.Errorf("an unwritable -o: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := cli(t, nil, "timings", trace); code != exitUsage || !strings.Contains(stderr, "USAGE_INVALID: piship timings needs -o FILE.html") {
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
