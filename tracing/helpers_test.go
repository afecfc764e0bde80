package tracing

import (
	"encoding/binary"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/tracing/phase"
)

// base is an arbitrary fixed instant; tests place spans at explicit offsets
// from it so ordering never depends on the clock.
var base = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

var testTraceID = trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}

// spanID returns a deterministic, valid span id.
func spanID(n uint64) trace.SpanID {
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

func spanContext(n uint64) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    testTraceID,
		SpanID:     spanID(n),
		TraceFlags: trace.FlagsSampled,
	})
}

// span builds an ended span [base+start, base+start+dur].
func span(id uint64, name string, start, dur time.Duration, attrs ...attribute.KeyValue) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{
		Name:        name,
		SpanContext: spanContext(id),
		StartTime:   base.Add(start),
		EndTime:     base.Add(start + dur),
		Attributes:  attrs,
	}.Snapshot()
}

// stage builds a stage span the way the engine does. cache is "hit", "miss"
// or "" for a stage that is not cacheable.
func stage(id uint64, kind, name string, start, dur time.Duration, cache string) sdktrace.ReadOnlySpan {
	attrs := []attribute.KeyValue{
		attribute.String(AttrPipeline, "build"),
		attribute.String(AttrStageKind, kind),
		attribute.String(AttrStageName, name),
		attribute.String(AttrVerdict, VerdictPassed),
	}
	if cache != "" {
		attrs = append(attrs, attribute.String(AttrCacheKey, "sha256:"+name), attribute.Bool(AttrCacheHit, cache == "hit"))
	}
	return span(id, StageSpanName(kind, name), start, dur, attrs...)
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// phaseSpan builds a phase span (phase.Attr) whose parent is span parent.
func phaseSpan(id, parent uint64, name string, start, dur time.Duration) sdktrace.ReadOnlySpan {
	return tracetest.SpanStub{
		Name:        name,
		SpanContext: spanContext(id),
		Parent:      spanContext(parent),
		StartTime:   base.Add(start),
		EndTime:     base.Add(start + dur),
		Attributes:  []attribute.KeyValue{attribute.String(phase.Attr, name)},
	}.Snapshot()
}
