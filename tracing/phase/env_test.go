package phase

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// A child gets the traceparent of the span it runs under, in place of the
// caller's; with tracing off it gets the caller's environment unchanged.
func TestChildEnvNamesTheStageSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "stage")
	defer span.End()
	sc := span.SpanContext()
	caller := []string{"PATH=/bin", "TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "TRACESTATE=a=b"}
	got := ChildEnv(ctx, caller)
	want := "TRACEPARENT=00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if !slices.Contains(got, want) || slices.Contains(got, caller[1]) || slices.Contains(got, caller[2]) || !slices.Contains(got, "PATH=/bin") {
		t.Fatalf("ChildEnv = %q, want PATH, %s and not the caller's trace context", got, want)
	}
	if off := ChildEnv(trace.ContextWithSpanContext(context.Background(), trace.SpanContext{}), caller); !slices.Equal(off, caller) {
		t.Fatalf("without a span: %q, want the caller's %q", off, caller)
	}
}
