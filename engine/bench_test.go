package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

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
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Err(); err != nil {
			b.Fatal(err)
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

// BenchmarkSchedulerInstances measures the engine's overhead per instance
// of a for_each (a stage's or a module's) against the same number of
// declared stages. Each iteration runs the instance graph and its flat
// counterpart, in alternating order, so both see the same machine: ns/op,
// µs/stage and allocs/stage are the instance graph's, flat-µs/stage and
// flat-allocs/stage the flat graph's in the same iterations, x-flat the
// ratio of their times. Both run 10,000 no-op stages at parallelism 2:
//
//   - wide: the flat graph of BenchmarkScheduler (one root, 9,998
//     dependents, one sink) against a root, one stage with for_each over
//     9,998 keys, and a sink after it;
//   - chains: 100 chains of 100 stages written out against a module of a
//     100-stage chain called with for_each over 100 keys (each of its
//     stages expands into 100 instances when the one before has settled).
func BenchmarkSchedulerInstances(b *testing.B) {
	dir := b.TempDir()
	var mod strings.Builder
	mod.WriteString("stage \"noop\" \"s0\" {}\n")
	for i := 1; i < 100; i++ {
		fmt.Fprintf(&mod, "stage \"noop\" \"s%d\" { depends_on = [stage.s%d] }\n", i, i-1)
	}
	if err := os.WriteFile(filepath.Join(dir, "chain.hcl"), []byte(mod.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	// The wide for_each's keys are an input, so what is measured is the
	// instances, not an expression that makes 9,998 strings.
	keys := make([]cty.Value, 9998)
	for i := range keys {
		keys[i] = cty.StringVal(strconv.Itoa(i))
	}
	reg := testRegistry(newRecorder())
	parseIn := func(src string) *graph.Graph {
		gs, _, diags := graph.ParseWith([]byte(src), filepath.Join(dir, "p.hcl"), dir, graph.Options{Kinds: reg, SourceDir: dir})
		if diags.HasErrors() {
			b.Fatalf("parse: %s", diags.Error())
		}
		return gs[0]
	}
	for _, shape := range []struct {
		name       string
		flat, inst *graph.Graph
		inputs     map[string]cty.Value // the instance graph's
	}{
		{"wide", mustParse(b, wideSource(10000), reg), parseIn(`pipeline "wide" {
  input "keys" { type = list(string) }
  stage "noop" "root" {}
  stage "noop" "many" {
    depends_on = [stage.root]
    for_each   = input.keys
  }
  stage "noop" "sink" { depends_on = [stage.many] }
}`), map[string]cty.Value{"keys": cty.ListVal(keys)}},
		{"chains", mustParse(b, chainsSource(100, 100), reg), parseIn(`pipeline "chains" {
  module "c" {
    source   = "./chain.hcl"
    for_each = [for i in range(100) : tostring(i)]
  }
}`), nil},
	} {
		for _, traced := range []bool{false, true} {
			name := shape.name + "/untraced"
			if traced {
				name = shape.name + "/traced"
			}
			b.Run(name, func(b *testing.B) {
				prov, ctx, err := tracing.Setup(context.Background(), tracing.Options{Disabled: !traced, Getenv: func(string) string { return "" }})
				if err != nil {
					b.Fatal(err)
				}
				var flat, inst runCost
				for i := 0; b.Loop(); i++ {
					if i%2 == 0 {
						inst.add(b, ctx, shape.inst, shape.inputs, prov)
						flat.add(b, ctx, shape.flat, nil, prov)
					} else {
						flat.add(b, ctx, shape.flat, nil, prov)
						inst.add(b, ctx, shape.inst, shape.inputs, prov)
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(inst.time.Nanoseconds())/n, "ns/op")
				b.ReportMetric(inst.perStage(b.N), "µs/stage")
				b.ReportMetric(flat.perStage(b.N), "flat-µs/stage")
				b.ReportMetric(float64(inst.time)/float64(flat.time), "x-flat")
				b.ReportMetric(float64(inst.allocs)/n/float64(inst.stages), "allocs/stage")
				b.ReportMetric(float64(flat.allocs)/n/float64(flat.stages), "flat-allocs/stage")
			})
		}
	}
}

// runCost adds up the runs of one graph: their time, allocations and the
// stages (instances included) each ran.
type runCost struct {
	time   time.Duration
	allocs uint64
	stages int
}

func (c *runCost) add(b *testing.B, ctx context.Context, g *graph.Graph, inputs map[string]cty.Value, prov *tracing.Provider) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	res, err := Run(ctx, g, Options{Parallelism: 2, Tracer: prov.Tracer(), Inputs: inputs})
	c.time += time.Since(start)
	runtime.ReadMemStats(&after)
	c.allocs += after.Mallocs - before.Mallocs
	if err != nil {
		b.Fatal(err)
	}
	if err := res.Err(); err != nil {
		b.Fatal(err)
	}
	if len(res.Stages) != 10000 {
		b.Fatalf("%s ran %d stages, want 10000", g.Name, len(res.Stages))
	}
	c.stages = len(res.Stages)
	prov.Recorder().Reset()
}

func (c *runCost) perStage(n int) float64 {
	return float64(c.time.Nanoseconds()) / float64(n) / float64(c.stages) / 1000
}

// chainsSource is a pipeline of n independent chains of length stages each.
func chainsSource(n, length int) string {
	var b strings.Builder
	b.WriteString("pipeline \"chains\" {\n")
	for c := range n {
		fmt.Fprintf(&b, "  stage \"noop\" \"c%d_s0\" {}\n", c)
		for i := 1; i < length; i++ {
			fmt.Fprintf(&b, "  stage \"noop\" \"c%d_s%d\" { depends_on = [stage.c%d_s%d] }\n", c, i, c, i-1)
		}
	}
	b.WriteString("}\n")
	return b.String()
}
