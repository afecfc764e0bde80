package tracing

import (
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkSummarize10000 summarises a 10,000-stage wide graph: one source,
// 9,998 parallel stages depending on it, and one sink depending on all of
// them, so the critical path must weigh every branch.
func BenchmarkSummarize10000(b *testing.B) {
	const n = 10000
	spans := make([]sdktrace.ReadOnlySpan, 0, n+1)
	deps := make(map[string][]string, n)
	spans = append(spans, span(1, PipelineSpanName("build"), 0, 10*time.Second))
	spans = append(spans, stage(2, "go", "source", 0, ms(100), "miss"))
	sink := make([]string, 0, n-2)
	for i := range n - 2 {
		name := fmt.Sprintf("mid%05d", i)
		cache := []string{"hit", "miss", ""}[i%3]
		spans = append(spans, stage(uint64(i+3), "go", name, ms(100), time.Duration(i%997)*time.Millisecond, cache))
		deps[name] = []string{"source"}
		sink = append(sink, name)
	}
	spans = append(spans, stage(n+1, "docker", "sink", 5*time.Second, ms(500), ""))
	deps["sink"] = sink

	b.ReportAllocs()
	for b.Loop() {
		t := Summarize(spans, "build", deps)
		if len(t.Lines) != n || len(t.CriticalPath) != 3 {
			b.Fatalf("got %d lines, critical path %q", len(t.Lines), t.CriticalPath)
		}
	}
}
