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

	// Root is the pipeline's own scope; the modules it calls hang off it.
	Root *Module

	byName map[string]*Stage
	funcs  funcTable
	opts   Options
	// memo holds what each module value reaches (refs.go).
	memo       map[memoKey][]ref
	inProgress map[memoKey]bool
	memoDone   bool
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
	// Name is how the stage is named to people and in documents: its label
	// for a stage of the pipeline itself, its address in a module
	// (module.payload.stage.bundle), with the key for an instance
	// (sign["linux-x64"]). LocalName is its label, unique in its module;
	// Addr its full address (stage.bundle).
	Name      string
	LocalName string
	Addr      string
	Kind      stage.Kind
	// Module is the scope the stage's expressions see.
	Module *Module
	// ForEach, if set, makes the stage run once per key (instances).
	ForEach hcl.Expression
	// Template is, for an instance, the stage it was made from; Seq its
	// position among the template's instances (module instance order,
	// then keys as sorted strings). Both are set by Scope.Expand.
	Template *Stage
	Seq      int
	inst     *modInst    // the module instance it runs in (instances)
	each     *forEachKey // each.key and each.value (instances of a for_each stage)
	outcome  *outcome    // what it gave (instances; written by Scope.Record)
	// generic is set when the stage's expressions need more than inputs,
	// locals and outputs of the pipeline's stages (a module's values,
	// each, instances): evaluation then builds its context by reference.
	generic bool
	// traversals are the references of its attributes and condition.
	traversals []hcl.Traversal
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
	root string // stage, module or input
	tr   hcl.Traversal
	name string
	rng  hcl.Range
}

// Label is the stage's span name: "<kind> <name>" for a stage of the
// pipeline itself, its address for one in a module or an instance
// (module.payload.stage.bundle, stage.sign["a"]).
func (s *Stage) Label() string {
	switch {
	case !s.addressed():
		return s.KindName + " " + s.Name
	case s.Module == nil || s.Module.Addr == "":
		return "stage." + s.Name
	}
	return s.Name
}

// addressed reports whether the stage is named by its address: it is in a
// module, or an instance.
func (s *Stage) addressed() bool {
	return s.Template != nil || (s.Module != nil && s.Module.Addr != "")
}

// Sets reports whether the stage's block sets the kind attribute name.
func (s *Stage) Sets(name string) bool {
	_, ok := s.attrs[name]
	return ok
}

// Expands reports whether the stage runs as instances: it has for_each or
// a module that calls it has.
func (s *Stage) Expands() bool {
	return s.Template == nil && (s.ForEach != nil || (s.Module != nil && s.Module.Expands))
}

// TemplateIndex is the declaration index of the stage an instance was made
// from (the stage's own for any other).
func (s *Stage) TemplateIndex() int {
	if s.Template != nil {
		return s.Template.Index
	}
	return s.Index
}

// Title is how progress and listings name the stage for people: "<kind>
// <name>", or only the name when it is the kind's ("audit", not "audit
// audit"). Stage names are unique in a pipeline, so titles are too.
func (s *Stage) Title() string {
	if s.Name == s.KindName || s.addressed() {
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
	// Via lists the module values a data edge goes through, with their
	// positions: "input.dir of module.payload given at release.hcl:12,9".
	Via []string
}

// Stage returns the stage called name.
func (g *Graph) Stage(name string) (*Stage, bool) {
	s, ok := g.byName[name]
	return s, ok
}

// link fills Dependents and DepStages from Deps, and decides how each
// stage's expressions are evaluated (Stage.generic).
func (g *Graph) link() {
	for _, s := range g.Stages {
		s.traversals = s.variables()
		s.generic = s.Module.Addr != "" || s.ForEach != nil
		for _, tr := range s.traversals {
			if r := tr.RootName(); r == "module" || r == "each" {
				s.generic = true
			}
		}
		for _, e := range s.Deps {
			if e.From.Expands() && e.Data {
				s.generic = true
			}
		}
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
