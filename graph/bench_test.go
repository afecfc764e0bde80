package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"piship.dev/piship/stages"
)

// BenchmarkValidate10000 parses and validates a 10,000-stage file (650 KB)
// in which every stage refers to an output of the one before it, so every
// reference, the cycle check and the type check have work to do. The baseline
// sub-benchmark only parses the HCL syntax, so the ratio is what decoding,
// reference resolution, cycle detection and type checking add.
//
// The modules sub-benchmarks validate the same 10,000 stage blocks written
// as a 100-stage module called 100 times (validation counts a for_each
// stage or module once, as the template it is). Each iteration validates
// the module pipeline and the flat file, in alternating order, so both
// see the same machine: ns/op and ms/file are the module pipeline's,
// flat-ms/file the flat file's in the same iterations, x-flat their ratio
// (B/op and allocs/op count both files).
func BenchmarkValidate10000(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("pipeline \"big\" {\n  stage \"exec\" \"s0\" { command = [\"true\"] }\n")
	for i := 1; i < 10000; i++ {
		fmt.Fprintf(&sb, "  stage \"exec\" \"s%d\" { command = [\"echo\", stage.s%d.stdout] }\n", i, i-1)
	}
	sb.WriteString("}\n")
	src := []byte(sb.String())
	reg := stages.Default()
	b.Run("hcl-syntax-only", func(b *testing.B) {
		for b.Loop() {
			if _, diags := hclsyntax.ParseConfig(src, "big.hcl", hcl.InitialPos); diags.HasErrors() {
				b.Fatal(diags)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/file")
	})
	b.Run("validate", func(b *testing.B) {
		for b.Loop() {
			if _, _, diags := Parse(src, "big.hcl", ".", reg); diags.HasErrors() {
				b.Fatal(diags)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/file")
	})
	// The CLI runs with GOGC=400 (cmd/piship main); this is the figure a
	// user of `piship validate` sees, minus process start.
	b.Run("validate-cli-gc", func(b *testing.B) {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
		for b.Loop() {
			if _, _, diags := Parse(src, "big.hcl", ".", reg); diags.HasErrors() {
				b.Fatal(diags)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/file")
	})
	for _, variant := range []struct {
		name string
		// stageForEach gives every stage of the module for_each =
		// input.keys, each reading the previous stage's instance of
		// its own key.
		stageForEach bool
	}{
		{"modules", false},
		{"modules-foreach-stages", true},
	} {
		dir := b.TempDir()
		pipeline, module := moduleSources(variant.stageForEach)
		if err := os.WriteFile(filepath.Join(dir, "chain.hcl"), module, 0o644); err != nil {
			b.Fatal(err)
		}
		file := filepath.Join(dir, "big.hcl")
		opts := Options{Kinds: reg, SourceDir: dir}
		b.Run(variant.name, func(b *testing.B) {
			var mod, flat time.Duration
			validateModules := func() {
				start := time.Now()
				gs, _, diags := ParseWith(pipeline, file, dir, opts)
				mod += time.Since(start)
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				if n := len(gs[0].Stages); n != 10000 {
					b.Fatalf("%d stage blocks validated, want 10000", n)
				}
			}
			validateFlat := func() {
				start := time.Now()
				_, _, diags := Parse(src, "big.hcl", ".", reg)
				flat += time.Since(start)
				if diags.HasErrors() {
					b.Fatal(diags)
				}
			}
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					validateModules()
					validateFlat()
				} else {
					validateFlat()
					validateModules()
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(mod.Nanoseconds())/n, "ns/op")
			b.ReportMetric(float64(mod.Microseconds())/1000/n, "ms/file")
			b.ReportMetric(float64(flat.Microseconds())/1000/n, "flat-ms/file")
			b.ReportMetric(float64(mod)/float64(flat), "x-flat")
		})
	}
}

// moduleSources is a pipeline of 100 calls of a module of 100 chained exec
// stages, each call reading the previous call's output: every tenth call
// has for_each over a list of two keys (the next call reads one of its
// instances), the others are plain. With stageForEach every stage of the
// module has for_each = input.keys too.
func moduleSources(stageForEach bool) (pipeline, module []byte) {
	var mb strings.Builder
	mb.WriteString("input \"seed\" { type = string }\ninput \"keys\" {\n  type    = list(string)\n  default = [\"a\", \"b\"]\n}\n")
	for i := range 100 {
		prev := "input.seed"
		if i > 0 {
			prev = fmt.Sprintf("stage.s%d.stdout", i-1)
		}
		if stageForEach {
			if i > 0 {
				prev = fmt.Sprintf("stage.s%d[each.key].stdout", i-1)
			}
			fmt.Fprintf(&mb, "stage \"exec\" \"s%d\" {\n  for_each = input.keys\n  command  = [\"echo\", each.key, %s]\n}\n", i, prev)
		} else {
			fmt.Fprintf(&mb, "stage \"exec\" \"s%d\" { command = [\"echo\", %s] }\n", i, prev)
		}
	}
	if stageForEach {
		mb.WriteString("output \"out\" { value = stage.s99[\"a\"].stdout }\n")
	} else {
		mb.WriteString("output \"out\" { value = stage.s99.stdout }\n")
	}
	var pb strings.Builder
	pb.WriteString("pipeline \"big\" {\n")
	for i := range 100 {
		seed := `"start"`
		if i > 0 {
			seed = fmt.Sprintf("module.m%d.out", i-1)
			if (i-1)%10 == 9 {
				seed = fmt.Sprintf("module.m%d[\"b\"].out", i-1)
			}
		}
		if i%10 == 9 {
			fmt.Fprintf(&pb, "  module \"m%d\" {\n    source   = \"./chain.hcl\"\n    for_each = [\"a\", \"b\"]\n    seed     = \"${each.key}-${%s}\"\n  }\n", i, seed)
		} else {
			fmt.Fprintf(&pb, "  module \"m%d\" {\n    source = \"./chain.hcl\"\n    seed   = %s\n  }\n", i, seed)
		}
	}
	pb.WriteString("}\n")
	return []byte(pb.String()), []byte(mb.String())
}
