// Package phase marks the steps inside one stage (extract, verify, commit
// ...) as child spans of the stage's span, so a trace viewer and the timing
// summary show where a long stage spends its time.
//
// It imports only the OpenTelemetry API: stage code calls it whether or not
// tracing records anything (with the no-op provider a phase costs a few
// nanoseconds), and it adds no exporter to the packages that use it.
package phase

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attr is the attribute naming a phase span's phase; its presence marks a
// span as a phase for the timing summary.
const Attr = "piship.phase"

// InstrumentationName is the instrumentation scope of phase spans (the
// same as the engine's).
const InstrumentationName = "piship.dev/piship"

// Span is one running phase.
type Span struct{ s trace.Span }

// Start begins phase name as a child of the span in ctx (normally the
// stage's) and returns the context to run the phase's own steps in.
func Start(ctx context.Context, name string) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, s := parent.TracerProvider().Tracer(InstrumentationName).Start(ctx, name,
		trace.WithAttributes(attribute.String(Attr, name)))
	return ctx, Span{s}
}

// End ends the phase, recording err (if not nil) as its status. Calling it
// on the zero Span does nothing.
func (p Span) End(err error) {
	if p.s == nil {
		return
	}
	if err != nil {
		p.s.SetStatus(codes.Error, err.Error())
	}
	p.s.End()
}

// Set records attributes on the phase (a smoke test's verdict, args and
// exit code).
func (p Span) Set(kv ...attribute.KeyValue) {
	if p.s != nil {
		p.s.SetAttributes(kv...)
	}
}

// SetInt records a count (files, bytes ...) on the phase.
func (p Span) SetInt(key string, v int64) {
	if p.s != nil {
		p.s.SetAttributes(attribute.Int64(key, v))
	}
}

// Run runs f as phase name and ends the phase with f's error.
func Run(ctx context.Context, name string, f func(context.Context) error) error {
	ctx, p := Start(ctx, name)
	err := f(ctx)
	p.End(err)
	return err
}
