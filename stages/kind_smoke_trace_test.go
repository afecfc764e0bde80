package stages

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// Each smoke test is a child span of the stage's span, with its verdict,
// args and exit code, and the program it runs gets that span's TRACEPARENT.
func TestSmokeTestsAreChildSpans(t *testing.T) {
	tpFile := filepath.Join(t.TempDir(), "traceparent")
	dir := smokeDist(t, `  smoke "parent" {
    args   = ["trace", "`+tpFile+`"]
    expect = "^written$"
  }
  smoke "exits" {
    args   = ["fail"]
    expect = "."
  }
`, "[ \"$1\" = fail ] && exit 3\necho \"$TRACEPARENT\" > \"$2\"\necho written\n")

	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	ctx, stageSpan := tp.Tracer("t").Start(context.Background(), "smoke tests")
	_, err := Smoke{}.Run(ctx, &stage.Invocation{Name: "tests", Dir: dir},
		SmokeConfig{Payload: filepath.Join(dir, "payload"), Distribution: dir})
	stageSpan.End()
	if err == nil || !strings.Contains(err.Error(), "smoke test exits failed: exit status 3") {
		t.Fatalf("err %v, want test exits to fail with exit status 3", err)
	}

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range sr.Ended() {
		byName[s.Name()] = s
	}
	for _, w := range []struct {
		name, verdict string
		args          []string
		code          int64
	}{
		{"smoke parent", "passed", []string{"trace", tpFile}, 0},
		{"smoke exits", "failed", []string{"fail"}, 3},
	} {
		s, ok := byName[w.name]
		if !ok {
			t.Fatalf("no span %q among %d", w.name, len(sr.Ended()))
		}
		if s.Parent().SpanID() != stageSpan.SpanContext().SpanID() {
			t.Errorf("%s: not a child of the stage span", w.name)
		}
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
		}
		if a[tracing.AttrVerdict].AsString() != w.verdict || !slices.Equal(a[tracing.AttrSmokeArgs].AsStringSlice(), w.args) || a[tracing.AttrExitCode].AsInt64() != w.code {
			t.Errorf("%s: verdict %q args %q exit code %d, want %q %q %d", w.name, a[tracing.AttrVerdict].AsString(),
				a[tracing.AttrSmokeArgs].AsStringSlice(), a[tracing.AttrExitCode].AsInt64(), w.verdict, w.args, w.code)
		}
		if failed := s.Status().Code == codes.Error; failed != (w.verdict == "failed") {
			t.Errorf("%s: error status %v, want %v", w.name, failed, w.verdict == "failed")
		}
	}
	// The program's TRACEPARENT names its own test's span, not the stage's.
	parent := byName["smoke parent"].SpanContext()
	got, err := os.ReadFile(tpFile)
	if want := "00-" + parent.TraceID().String() + "-" + parent.SpanID().String() + "-01\n"; err != nil || string(got) != want {
		t.Errorf("program's TRACEPARENT %q (%v), want %q", got, err, want)
	}
}
