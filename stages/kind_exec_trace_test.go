package stages_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages"
)

// A process an exec stage starts gets the TRACEPARENT of that stage's
// span, not the caller's, so an instrumented child (a nested piship run,
// an OpenTelemetry-instrumented script) joins the trace under the stage.
func TestExecChildJoinsTheTraceUnderItsStage(t *testing.T) {
	t.Setenv("TRACEPARENT", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	g := mustParse(t, `
pipeline "p" {
  stage "exec" "child" { command = ["sh", "-c", "printf %s \"$TRACEPARENT\""] }
}`, stages.Default())
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	res, err := engine.Run(context.Background(), g, engine.Options{Tracer: tp.Tracer("test")})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	var want string
	for _, s := range rec.Ended() {
		if s.Name() == res.Stages[0].Stage.Label() {
			sc := s.SpanContext()
			want = "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
		}
	}
	if got := res.Stages[0].Outputs["stdout"].AsString(); want == "" || got != want {
		t.Fatalf("the child saw TRACEPARENT %q, want the stage span's %q", got, want)
	}
}
