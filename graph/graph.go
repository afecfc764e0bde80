// Package graph turns pipeline files into validated, typed graphs of stages.
//
// A pipeline file is HCL:
//
//	pipeline "<name>" {
//	  description = "..."
//	  input "<n>" { type = string  default = "..." }
//	  locals { x = upper(input.n) }
//	  stage "<kind>" "<name>" { ...  depends_on = [stage.a]  always = false }
//	  verdicts = [stage.a, stage.b]
//	}
//
// References to stage.<name>.<output> create data edges, depends_on creates
// ordering edges. Everything is checked before anything runs, and every
// problem is an hcl.Diagnostic with a source range, sorted by a total order so
// the same file always gives the same report.
package graph

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// Graph is one validated pipeline.
type Graph struct {
	Name        string
	Description string
	// File is the pipeline file's name as shown in diagnostics; Dir is the
	// directory relative paths in the file are resolved against.
	File string
	Dir  string

	Inputs []*Input
	Locals []*Local // in evaluation order
	// Stages are in declaration order; Stage.Index is the position here.
	Stages []*Stage
	// Verdicts are the stages listed in `verdicts`, in that order.
	Verdicts []*Stage
	// VerdictOrder is Verdicts followed by every other stage in declaration
	// order: the order in which a run's result is decided.
	VerdictOrder []*Stage

	// Files holds the parsed sources, for printing diagnostics with snippets.
	Files map[string]*hcl.File

	byName map[string]*Stage
	// unknownKind names the stages whose kind is unknown: they exist for
	// reference checking only (the file has an error already).
	unknownKind map[string]bool
	funcs       funcTable
}

// Input is a declared pipeline input.
type Input struct {
	Name        string
	Type        cty.Type
	Default     cty.Value // cty.NilVal when the input is required
	Description string
	DeclRange   hcl.Range
}

// Required reports whether the input has no default.
func (in *Input) Required() bool { return in.Default == cty.NilVal }

// Local is a named expression in a locals block.
type Local struct {
	Name  string
	Expr  hcl.Expression
	Range hcl.Range
}

// Stage is a configured stage: one vertex of the graph.
type Stage struct {
	Index    int
	KindName string
	Name     string
	Kind     stage.Kind
	// Body is the stage's configuration without the meta-arguments.
	Body hcl.Body
	// attrs are Body's attributes, extracted once at validation so a run
	// evaluates expressions without decoding the body again.
	attrs     hcl.Attributes
	kindAttrs []stage.Attr
	dependsOn []pendingDep // depends_on entries until resolveStage
	Always    bool
	// When, if set, is evaluated when the stage is ready; false skips the
	// stage (its outputs are null) and its dependents still run.
	When      hcl.Expression
	DeclRange hcl.Range

	// Deps are the edges into this stage: the stages that must finish
	// before it starts, sorted by the dependency's index then source offset.
	Deps []*Edge
	// Dependents are the stages that depend on this one, by index, each once.
	Dependents []*Stage
	// DepStages are the distinct stages of Deps, by index.
	DepStages []*Stage
	// DataDeps are the distinct stages whose outputs the configuration
	// refers to, by index: the only ones evaluation needs.
	DataDeps []*Stage
}

// pendingDep is a depends_on entry before stage names are resolved.
type pendingDep struct {
	name string
	rng  hcl.Range
}

// Label is the stage's span name, "<kind> <name>".
func (s *Stage) Label() string { return s.KindName + " " + s.Name }

// Title is how progress and listings name the stage for people: "<kind>
// <name>", or only the name when it is the kind's ("audit", not "audit
// audit"). Stage names are unique in a pipeline, so titles are too.
func (s *Stage) Title() string {
	if s.Name == s.KindName {
		return s.Name
	}
	return s.Label()
}

// Edge says To cannot start before From has finished.
type Edge struct {
	From, To *Stage
	// Range is the referencing expression in To's block.
	Range hcl.Range
	// Data is true for a stage.<name>.<output> reference, false for depends_on.
	Data bool
	// Output is the output a data edge reads; empty for depends_on.
	Output string
}

// Stage returns the stage called name.
func (g *Graph) Stage(name string) (*Stage, bool) {
	s, ok := g.byName[name]
	return s, ok
}

// link fills Dependents and DepStages from Deps.
func (g *Graph) link() {
	for _, s := range g.Stages {
		sort.SliceStable(s.Deps, func(i, j int) bool {
			a, b := s.Deps[i], s.Deps[j]
			if a.From.Index != b.From.Index {
				return a.From.Index < b.From.Index
			}
			return a.Range.Start.Byte < b.Range.Start.Byte
		})
		var last *Stage
		for _, e := range s.Deps {
			if e.Data && (len(s.DataDeps) == 0 || s.DataDeps[len(s.DataDeps)-1] != e.From) {
				s.DataDeps = append(s.DataDeps, e.From)
			}
			if e.From == last {
				continue
			}
			last = e.From
			s.DepStages = append(s.DepStages, e.From)
			e.From.Dependents = append(e.From.Dependents, s)
		}
	}
	// Dependents were appended in increasing order of the dependent's index
	// because the outer loop walks stages in declaration order.
}

// DepNames maps each stage name to the names of the stages it depends on;
// the timing summary uses it for the critical path.
func (g *Graph) DepNames() map[string][]string {
	m := make(map[string][]string, len(g.Stages))
	for _, s := range g.Stages {
		names := make([]string, len(s.DepStages))
		for i, d := range s.DepStages {
			names[i] = d.Name
		}
		m[s.Name] = names
	}
	return m
}
