package graph

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"piship.dev/piship/stages"
)

// BenchmarkValidate10000 parses and validates a 10,000-stage file (650 KB)
// in which every stage refers to an output of the one before it, so every
// reference, the cycle check and the type check have work to do. The baseline
// sub-benchmark only parses the HCL syntax, so the ratio is what decoding,
// reference resolution, cycle detection and type checking add.
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
}
