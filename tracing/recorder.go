package tracing

import (
	"context"
	"slices"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Recorder is a span processor that keeps every ended span in memory. Setup
// always attaches one because every timing piship prints is computed from
// recorded spans. The zero value is ready to use and it is safe for
// concurrent use.
type Recorder struct {
	mu    sync.Mutex
	ended []sdktrace.ReadOnlySpan
}

var _ sdktrace.SpanProcessor = (*Recorder)(nil)

// OnStart does nothing: only ended spans carry their final timing.
func (r *Recorder) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd records s.
func (r *Recorder) OnEnd(s sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	r.ended = append(r.ended, s)
	r.mu.Unlock()
}

// Shutdown does nothing and keeps the recorded spans: the summary is usually
// computed after the provider has been shut down.
func (r *Recorder) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing; spans are recorded synchronously in OnEnd.
func (r *Recorder) ForceFlush(context.Context) error { return nil }

// Ended returns a copy of the ended spans in the order they ended (the order
// in which End was called).
func (r *Recorder) Ended() []sdktrace.ReadOnlySpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

// Reset forgets the recorded spans; a long-lived process (or a benchmark)
// calls it between runs.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.ended = nil
	r.mu.Unlock()
}
