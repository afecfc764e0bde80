package graph

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages"
)

func parse(t *testing.T, src string) ([]*Graph, hcl.Diagnostics) {
	t.Helper()
	gs, _, diags := Parse([]byte(src), "p.hcl", t.TempDir(), stages.Default())
	return gs, diags
}

func TestValidationErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string // substrings of the diagnostics, in order
	}{
		{
			name: "unknown kind with suggestion",
			src:  "pipeline \"p\" {\n  stage \"exce\" \"a\" { command = [\"x\"] }\n}",
			want: []string{`p.hcl:2,9-15: Unknown stage kind; There is no stage kind "exce". Did you mean "exec"?`},
		},
		{
			name: "unknown attribute",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" {\n    command = [\"x\"]\n    comand = 1\n  }\n}",
			want: []string{`p.hcl:4,5-11: Unsupported argument; An argument named "comand" is not expected here. Did you mean "command"?`},
		},
		{
			name: "missing required attribute",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" {}\n}",
			want: []string{`Missing required argument; The argument "command" is required`},
		},
		{
			name: "wrong type",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = \"make\" }\n}",
			want: []string{`p.hcl:2,32-38: Incorrect attribute value type`},
		},
		{
			name: "wrong type through a stage output",
			src:  "pipeline \"p\" {\n  stage \"digest\" \"d\" { files = [\"x\"] }\n  stage \"exec\" \"a\" { command = stage.d.sha256 }\n}",
			want: []string{`p.hcl:3,32-46: Incorrect attribute value type`},
		},
		{
			name: "duplicate stage names",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"x\"] }\n  stage \"digest\" \"a\" { files = [\"x\"] }\n}",
			want: []string{`p.hcl:3,18-21: Duplicate stage name; A stage named "a" was already declared at p.hcl:2:3`},
		},
		{
			name: "undeclared output lists the available ones",
			src:  "pipeline \"p\" {\n  stage \"digest\" \"d\" { files = [\"x\"] }\n  stage \"exec\" \"a\" { command = [stage.d.sha512] }\n}",
			want: []string{`p.hcl:3,33-47: Reference to an undeclared output; Stage "d" (kind digest) has no output "sha512". Available outputs: files, sha256.`},
		},
		{
			name: "unknown stage",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"build\" { command = [\"x\"] }\n  stage \"exec\" \"a\" {\n    command = [\"x\"]\n    depends_on = [stage.biuld]\n  }\n}",
			want: []string{`p.hcl:5,19-30: Reference to an unknown stage; There is no stage named "biuld" in pipeline "p". Did you mean "build"?`},
		},
		{
			name: "verdict entry that is not a stage",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [\"x\"] }\n  verdicts = [stage.a, stage.b, input.x]\n}",
			want: []string{`p.hcl:3,24-31: Verdict entry is not a stage`, `p.hcl:3,33-40: Invalid verdict entry`},
		},
		{
			name: "unknown input and variable",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [input.nope, var.x] }\n}",
			want: []string{`Reference to an undeclared input; There is no input named "nope"`, `Unknown variable; There is no variable named "var"`},
		},
		{
			name: "self reference is a cycle",
			src:  "pipeline \"p\" {\n  stage \"exec\" \"a\" { command = [stage.a.stdout] }\n}",
			want: []string{`Dependency cycle; These stages depend on each other, so none of them can start: a -> a.`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := parse(t, tc.src)
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			var got []string
			for _, d := range diags {
				got = append(got, diagString(d))
			}
			all := strings.Join(got, "\n")
			last := -1
			for _, w := range tc.want {
				i := strings.Index(all, w)
				if i < 0 {
					t.Fatalf("missing %q in\n%s", w, all)
				}
				if i < last {
					t.Fatalf("%q out of order in\n%s", w, all)
				}
				last = i
			}
		})
	}
}

func diagString(d *hcl.Diagnostic) string {
	if d.Subject == nil {
		return d.Summary + "; " + d.Detail
	}
	return fmt.Sprintf("%s: %s; %s", d.Subject, d.Summary, d.Detail)
}

func TestCycleNamesEveryEdgeWithPosition(t *testing.T) {
	src := `pipeline "p" {
  stage "exec" "c" {
    command = [stage.b.stdout]
  }
  stage "exec" "a" {
    command    = ["x"]
    depends_on = [stage.c]
  }
  stage "exec" "b" {
    command = [stage.a.stdout]
  }
}`
	_, diags := parse(t, src)
	if len(diags) != 1 {
		t.Fatalf("want one diagnostic, got %d: %s", len(diags), diags.Error())
	}
	d := diags[0]
	// The rotation starts at the earliest-declared stage (c).
	for _, want := range []string{
		"c -> b -> a -> c.",
		`stage "c" refers to stage "b" at p.hcl:3:16`,
		`stage "b" refers to stage "a" at p.hcl:10:16`,
		`stage "a" depends_on stage "c" at p.hcl:7:19`,
	} {
		if !strings.Contains(d.Detail, want) {
			t.Errorf("missing %q in:\n%s", want, d.Detail)
		}
	}
	if d.Subject.Start.Line != 3 {
		t.Errorf("subject at line %d, want 3", d.Subject.Start.Line)
	}
}

func TestDiagnosticsAreSortedByPosition(t *testing.T) {
	src := "pipeline \"p\" {\n  stage \"zzz\" \"a\" {}\n  stage \"yyy\" \"b\" {}\n  stage \"exec\" \"c\" { bogus = 1 }\n}"
	for range 20 {
		_, diags := parse(t, src)
		if len(diags) < 3 {
			t.Fatalf("diags: %s", diags.Error())
		}
		for i := 1; i < len(diags); i++ {
			if diags[i-1].Subject.Start.Byte > diags[i].Subject.Start.Byte {
				t.Fatalf("unsorted: %s", diags.Error())
			}
		}
	}
}

func TestEdgesAndVerdictOrder(t *testing.T) {
	gs, diags := parse(t, `pipeline "p" {
  description = "demo"
  input "dir" {
    type    = string
    default = "."
  }
  locals {
    files = ["a", "b"]
    more  = concat(local.files, ["c"])
  }
  stage "digest" "d" {
    dir   = input.dir
    files = local.more
  }
  stage "exec" "build" {
    command = ["echo", stage.d.sha256]
  }
  stage "exec" "test" {
    command    = ["true"]
    depends_on = [stage.build]
  }
  verdicts = [stage.test]
}`)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g := gs[0]
	if g.Description != "demo" || len(g.Inputs) != 1 || len(g.Locals) != 2 {
		t.Fatalf("decoded %+v", g)
	}
	build, _ := g.Stage("build")
	if len(build.Deps) != 1 || !build.Deps[0].Data || build.Deps[0].From.Name != "d" {
		t.Fatalf("build deps %+v", build.Deps)
	}
	test, _ := g.Stage("test")
	if len(test.Deps) != 1 || test.Deps[0].Data {
		t.Fatalf("test deps %+v", test.Deps)
	}
	var order []string
	for _, s := range g.VerdictOrder {
		order = append(order, s.Name)
	}
	if got := strings.Join(order, ","); got != "test,d,build" {
		t.Fatalf("verdict order %s", got)
	}
}

func TestRenderingIsStable(t *testing.T) {
	src := `pipeline "p" {
  stage "digest" "d" { files = ["x"] }
  stage "exec" "build" { command = [stage.d.sha256] }
  stage "exec" "clean" {
    command    = ["true"]
    always     = true
    depends_on = [stage.build, stage.d]
  }
  verdicts = [stage.build]
}`
	gs, diags := parse(t, src)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var dot, mer bytes.Buffer
	if err := gs[0].WriteDOT(&dot); err != nil {
		t.Fatal(err)
	}
	if err := gs[0].WriteMermaid(&mer); err != nil {
		t.Fatal(err)
	}
	wantDOT := `digraph "p" {
  label=<<B>p</B>>;
  labelloc=t;
  fontname="Helvetica";
  rankdir=LR;
  nodesep=0.3;
  ranksep=0.45;
  node [shape=box, style=rounded, fontname="Helvetica", fontsize=12];
  edge [fontname="Helvetica", fontsize=10];
  "d" [label=<<B>d</B><BR/><FONT POINT-SIZE="10" COLOR="#555555">digest</FONT>>];
  "build" [label=<<B>build</B><BR/><FONT POINT-SIZE="10" COLOR="#555555">exec</FONT><BR/><FONT COLOR="#8a4b00">verdict 1</FONT>>, style="rounded,filled", fillcolor="#fff1c1"];
  "clean" [label=<<B>clean</B><BR/><FONT POINT-SIZE="10" COLOR="#555555">exec</FONT><BR/><FONT POINT-SIZE="10">always</FONT>>, peripheries=2];
  "d" -> "build";
  "d" -> "clean" [style=dashed];
  "build" -> "clean" [style=dashed];
  "legend:" [`
	// The legend follows the edges; TestDOTLegend checks what it says.
	if !strings.HasPrefix(dot.String(), wantDOT) || !strings.HasSuffix(dot.String(), "  { rank=sink; \"legend:\"; }\n}\n") {
		t.Errorf("dot:\n%s\nwant it to start:\n%s", dot.String(), wantDOT)
	}
	var again bytes.Buffer
	if err := gs[0].WriteDOT(&again); err != nil || again.String() != dot.String() {
		t.Errorf("a second rendering differs (%v)", err)
	}
	wantMermaid := `flowchart LR
  s0["digest d"]
  s1["exec build<br/>verdict 1"]
  s2[["exec clean"]]
  s0 --> s1
  s0 -.-> s2
  s1 -.-> s2
`
	if mer.String() != wantMermaid {
		t.Errorf("mermaid:\n%s\nwant:\n%s", mer.String(), wantMermaid)
	}
}

func TestInputsAndFunctions(t *testing.T) {
	dir := t.TempDir()
	gs, _, diags := Parse([]byte(`pipeline "p" {
  input "n" { type = number }
  input "name" { default = "x" }
  locals { label = format("%s-%d", upper(input.name), input.n) }
  stage "exec" "a" { command = [local.label, abspath("f"), trimspace("  y ")] }
}`), "p.hcl", dir, stages.Default())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g := gs[0]
	if _, err := g.NewScope(nil); err == nil || !strings.Contains(err.Error(), `input "n" is required`) {
		t.Fatalf("missing input error: %v", err)
	}
	v, err := g.ParseInput("n", "41+1")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := g.NewScope(map[string]cty.Value{"n": v})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, d := sc.EvalStage(g.Stages[0], nil, nil)
	if d.HasErrors() {
		t.Fatal(d.Error())
	}
	got := cfg.GetAttr("command").AsValueSlice()
	if got[0].AsString() != "X-42" || got[1].AsString() != dir+"/f" || got[2].AsString() != "y" {
		t.Fatalf("command %#v", got)
	}
	if _, err := g.NewScope(map[string]cty.Value{"n": v, "extra": v}); err == nil || !strings.Contains(err.Error(), `no input "extra"`) {
		t.Fatalf("unknown input error: %v", err)
	}
}
