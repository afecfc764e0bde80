package engine

import (
	"context"
	"sync"
	"testing"

	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// BenchmarkScheduler measures the engine's overhead per no-op stage on
// 10,000-stage graphs, with tracing off (no-op tracer) and on (the SDK
// provider with the in-memory recorder the CLI always uses). The baseline
// sub-benchmark runs the same kind directly, one goroutine per stage in
// dependency order, so the ratio shows what scheduling and tracing add.
func BenchmarkScheduler(b *testing.B) {
	for _, shape := range []struct {
		name string
		src  string
	}{
		{"wide", wideSource(10000)},
		{"deep", chainSource(10000)},
	} {
		g := mustParse(b, shape.src, testRegistry(newRecorder()))
		b.Run(shape.name+"/baseline", func(b *testing.B) {
			for b.Loop() {
				runDirect(g)
			}
			perStage(b, len(g.Stages))
		})
		b.Run(shape.name+"/untraced", func(b *testing.B) {
			prov, ctx, err := tracing.Setup(context.Background(), tracing.Options{Disabled: true, Getenv: func(string) string { return "" }})
			if err != nil {
				b.Fatal(err)
			}
			benchRun(b, ctx, g, prov)
		})
		b.Run(shape.name+"/traced", func(b *testing.B) {
			prov, ctx, err := tracing.Setup(context.Background(), tracing.Options{Getenv: func(string) string { return "" }})
			if err != nil {
				b.Fatal(err)
			}
			benchRun(b, ctx, g, prov)
		})
	}
}

func benchRun(b *testing.B, ctx context.Context, g *graph.Graph, prov *tracing.Provider) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, g, Options{Parallelism: 2, Tracer: prov.Tracer()})
		if err != nil || res.Err() != nil {
			b.Fatal(err, res.Err())
		}
		prov.Recorder().Reset()
	}
	perStage(b, len(g.Stages))
}

// runDirect is the baseline: every stage's Run called once, each in its
// own goroutine started when its dependencies are done.
func runDirect(g *graph.Graph) {
	done := make([]chan struct{}, len(g.Stages))
	for i := range done {
		done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for _, st := range g.Stages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, d := range st.DepStages {
				<-done[d.Index]
			}
			_, _ = st.Kind.Run(context.Background(), &stage.Invocation{Name: st.Name})
			close(done[st.Index])
		}()
	}
	wg.Wait()
}

func perStage(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1000, "µs/stage")
}
