package tracing

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkTimingsHTML10000 writes the timings page of the wide
// 10,000-stage run of BenchmarkSummarize10000, beside Summarize alone (the
// baseline: the page is Summarize plus layout and the template).
func BenchmarkTimingsHTML10000(b *testing.B) {
	const n = 10000
	spans := make([]sdktrace.ReadOnlySpan, 0, n+1)
	deps := make(map[string][]string, n)
	spans = append(spans, span(1, PipelineSpanName("build"), 0, 10*time.Second, attribute.String(AttrPipeline, "build")))
	spans = append(spans, stage(2, "go", "source", 0, ms(100), "miss"))
	sink := make([]string, 0, n-2)
	for i := range n - 2 {
		name := fmt.Sprintf("mid%05d", i)
		spans = append(spans, stage(uint64(i+3), "go", name, ms(100), time.Duration(i%997)*time.Millisecond, []string{"hit", "miss", ""}[i%3]))
		deps[name] = []string{"source"}
		sink = append(sink, name)
	}
	spans = append(spans, stage(n+1, "docker", "sink", 5*time.Second, ms(500), ""))
	deps["sink"] = sink

	b.Run("summarize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if t := Summarize(spans, "build", deps); len(t.CriticalPath) != 3 {
				b.Fatal(t.CriticalPath)
			}
		}
	})
	b.Run("page", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		for b.Loop() {
			buf.Reset()
			if err := WriteTimingsHTML(&buf, spans, deps); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(buf.Len())/(1<<20), "MiB/page")
	})
}
