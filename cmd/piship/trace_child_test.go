package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A piship run inside an exec stage joins the outer run's trace under
// that stage: its root span's parent is the exec stage's span (both runs
// write --trace-file; issue 15, item 1).
func TestNestedRunJoinsTheTraceUnderItsExecStage(t *testing.T) {
	// This test binary is piship under PISHIP_TEST_MAIN=1 (TestMain).
	piship, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inner := filepath.Join(dir, "inner.hcl")
	innerTrace := filepath.Join(dir, "inner.json")
	outer := filepath.Join(dir, "outer.hcl")
	outerTrace := filepath.Join(dir, "outer.json")
	os.WriteFile(inner, []byte("pipeline \"inner\" {\n  stage \"exec\" \"hello\" { command = [\"true\"] }\n}\n"), 0o644)
	os.WriteFile(outer, []byte(fmt.Sprintf("pipeline \"outer\" {\n  stage \"exec\" \"nested\" {\n    command = [%q, \"run\", \"--trace-file\", %q, %q]\n    env     = { PISHIP_TEST_MAIN = \"1\" }\n  }\n}\n", piship, innerTrace, inner)), 0o644)
	t.Setenv("TRACEPARENT", "")
	var stdout, stderr bytes.Buffer
	if code := runMain(t.Context(), []string{"run", "--trace-file", outerTrace, outer}, &stdout, &stderr, os.Getenv); code != 0 {
		t.Fatalf("outer run: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	var stage traceFileSpan
	for _, s := range readTraceFile(t, outerTrace) {
		if s.name == "exec nested" { // the stage span: "<kind> <name>"
			stage = s
		}
	}
	if stage.spanID == "" {
		t.Fatalf("no span of the exec stage in %v", readTraceFile(t, outerTrace))
	}
	var root *traceFileSpan
	spans := readTraceFile(t, innerTrace)
	for i, s := range spans {
		if s.traceID != stage.traceID {
			t.Errorf("inner span %q is in trace %s, the outer run's is %s", s.name, s.traceID, stage.traceID)
		}
		if s.parentSpanID != "" && normSpanID(s.parentSpanID) == stage.spanID {
			root = &spans[i]
		}
	}
	if root == nil {
		t.Fatalf("no inner span has the exec stage's span %s as its parent: %v", stage.spanID, spans)
	}
}
