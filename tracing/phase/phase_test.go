package phase

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestPhaseIsChildOfStage(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, stage := tp.Tracer("test").Start(context.Background(), "install install")
	err := Run(ctx, "extract", func(ctx context.Context) error {
		_, inner := Start(ctx, "fsync")
		inner.SetInt("files", 3)
		inner.End(nil)
		return errors.New("disk full")
	})
	stage.End()
	if err == nil || err.Error() != "disk full" {
		t.Fatalf("Run returned %v, want f's error", err)
	}
	ended := rec.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d spans ended, want 3", len(ended))
	}
	fsync, extract := ended[0], ended[1]
	if fsync.Name() != "fsync" || extract.Name() != "extract" {
		t.Fatalf("span names %q %q", fsync.Name(), extract.Name())
	}
	if fsync.Parent().SpanID() != extract.SpanContext().SpanID() || extract.Parent().SpanID() != stage.SpanContext().SpanID() {
		t.Error("phases are not nested under the stage span")
	}
	if extract.Status().Code != codes.Error || extract.Status().Description != "disk full" {
		t.Errorf("extract status %+v, want the error", extract.Status())
	}
	var marked, files bool
	for _, kv := range fsync.Attributes() {
		marked = marked || (string(kv.Key) == Attr && kv.Value.AsString() == "fsync")
		files = files || (kv.Key == "files" && kv.Value.AsInt64() == 3)
	}
	if !marked || !files {
		t.Errorf("fsync attributes %v lack %s=fsync or files=3", fsync.Attributes(), Attr)
	}
}

// Without a recording span in the context nothing is created and the zero
// Span's methods are safe.
func TestPhaseWithoutTracing(t *testing.T) {
	ctx := context.Background()
	got, p := Start(ctx, "extract")
	if got != ctx || p != (Span{}) {
		t.Error("a phase without a recording parent made a span")
	}
	p.SetInt("files", 1)
	p.End(errors.New("x"))
}
