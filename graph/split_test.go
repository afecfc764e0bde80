package graph

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/stages"
)

// The parallel parse must give exactly what a single parse gives: the same
// stages, ranges and diagnostics, whatever the file holds.
func TestSplitParseEqualsSingleParse(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
	var tricky strings.Builder
	tricky.WriteString(`pipeline "one" {
  description = "braces { in } a string"
  input "x" { default = "}" }
  locals {
    y = { a = "{" }
  }
`)
	for i := range 40 {
		fmt.Fprintf(&tricky, `  stage "exec" "s%d" {
    # a comment with a brace }
    command = ["sh", "-c", "echo ${upper("}")} %%{ if true }x%%{ endif } $${lit}", local.y.a] // tail {
    env     = { N = "%d" }
  }
`, i, i)
		if i%10 == 0 {
			fmt.Fprintf(&tricky, "  stage \"digest\" \"d%d\" { files = [\"a\"] }   # trailing\n", i)
		}
	}
	tricky.WriteString(`  verdicts = [stage.s1, stage.s0]
}

pipeline "two" {
`)
	for i := range 30 {
		fmt.Fprintf(&tricky, "  stage \"exec\" \"t%d\" { command = [\"echo\", \"é—ü\"] }\n", i)
	}
	tricky.WriteString("}\n")

	heredoc := "pipeline \"h\" {\n" + strings.Repeat("  stage \"exec\" \"x\" {\n    command = [<<EOT\n}\nEOT\n    ]\n  }\n", 1) +
		func() string {
			var b strings.Builder
			for i := range 30 {
				fmt.Fprintf(&b, "  stage \"exec\" \"y%d\" { command = [\"true\"] }\n", i)
			}
			return b.String()
		}() + "}\n"

	broken := strings.Replace(tricky.String(), `stage "exec" "s7" {`, `stage "exec" "s7" { bogus = `, 1)
	cyclic := tricky.String() + "pipeline \"c\" {\n" + func() string {
		var b strings.Builder
		for i := range 30 {
			fmt.Fprintf(&b, "  stage \"exec\" \"c%d\" { command = [stage.c%d.stdout] }\n", i, (i+1)%30)
		}
		return b.String()
	}() + "}\n"

	for name, src := range map[string]string{"tricky": tricky.String(), "heredoc": heredoc, "broken": broken, "cyclic": cyclic} {
		t.Run(name, func(t *testing.T) {
			if name == "tricky" || name == "cyclic" {
				// These must really take the parallel path.
				spans, ok := scanStageSpans([]byte(src))
				if !ok {
					t.Fatal("scan refused the file")
				}
				if _, ok := parseSplit([]byte(src), "f.hcl", spans, 2); !ok {
					t.Fatal("split parse fell back")
				}
			}
			single := describeParse(t, src, 1<<30)
			split := describeParse(t, src, 0)
			if single != split {
				t.Fatalf("split parse differs from single parse:\n--- single\n%s\n--- split\n%s", single, split)
			}
		})
	}
}

func TestScanFindsStageBlocks(t *testing.T) {
	src := "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"{\"] }\n  stage \"exec\" \"b\" {\n    command = [\"x\"]\n  }\n}\n"
	spans, ok := scanStageSpans([]byte(src))
	if !ok || len(spans) != 2 {
		t.Fatalf("spans %v ok %v", spans, ok)
	}
	if got := src[spans[1].start:spans[1].end]; got != "  stage \"exec\" \"b\" {\n    command = [\"x\"]\n  }" {
		t.Fatalf("second span %q", got)
	}
	for _, bad := range []string{
		"pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [<<EOT\nx\nEOT\n] }\n}\n",
		"pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"x\"] } stage \"exec\" \"b\" {}\n}\n",
		"pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"unterminated] }\n}\n",
	} {
		if _, ok := scanStageSpans([]byte(bad)); ok {
			t.Errorf("scan accepted %q", bad)
		}
	}
}

// describeParse renders everything a parse decided, with positions.
func describeParse(t *testing.T, src string, threshold int) string {
	t.Helper()
	old := splitThreshold
	splitThreshold = threshold
	defer func() { splitThreshold = old }()
	gs, _, diags := Parse([]byte(src), "f.hcl", "/dir", stages.Default())
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "diag %s: %s; %s\n", rangeString(d.Subject), d.Summary, d.Detail)
	}
	for _, g := range gs {
		fmt.Fprintf(&b, "pipeline %s %q verdicts=%d\n", g.Name, g.Description, len(g.Verdicts))
		for _, s := range g.Stages {
			fmt.Fprintf(&b, "  %d %s %s at %s always=%v\n", s.Index, s.KindName, s.Name, rangeString(&s.DeclRange), s.Always)
			names := make([]string, 0, len(s.attrs))
			for n := range s.attrs {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Fprintf(&b, "    attr %s %s\n", n, rangeString(s.attrs[n].Expr.Range().Ptr()))
			}
			for _, e := range s.Deps {
				fmt.Fprintf(&b, "    dep %s data=%v %s\n", e.From.Name, e.Data, rangeString(&e.Range))
			}
		}
	}
	return b.String()
}

func rangeString(r *hcl.Range) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s:%d:%d-%d:%d(%d-%d)", r.Filename, r.Start.Line, r.Start.Column, r.End.Line, r.End.Column, r.Start.Byte, r.End.Byte)
}
