package graph

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
)

type funcTable map[string]function.Function

// newFuncTable returns the functions available in pipeline expressions: the
// go-cty standard library plus file() and abspath() relative to dir.
func newFuncTable(dir string) funcTable {
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	fileFn := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := resolve(args[0].AsString())
			b, err := atomicfs.ReadRegular(p, 0)
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %v", p, err)
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not valid UTF-8 text", p)
			}
			return cty.StringVal(string(b)), nil
		},
	})
	abspathFn := function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.StringVal(filepath.ToSlash(resolve(args[0].AsString()))), nil
		},
	})
	return funcTable{
		"abs": stdlib.AbsoluteFunc, "abspath": abspathFn, "ceil": stdlib.CeilFunc,
		"chomp": stdlib.ChompFunc, "chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc,
		"contains": stdlib.ContainsFunc, "csvdecode": stdlib.CSVDecodeFunc, "distinct": stdlib.DistinctFunc,
		"element": stdlib.ElementFunc, "file": fileFn, "flatten": stdlib.FlattenFunc,
		"floor": stdlib.FloorFunc, "format": stdlib.FormatFunc, "formatdate": stdlib.FormatDateFunc,
		"formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc, "index": stdlib.IndexFunc,
		"join": stdlib.JoinFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
		"keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "log": stdlib.LogFunc,
		"lookup": stdlib.LookupFunc, "lower": stdlib.LowerFunc, "max": stdlib.MaxFunc,
		"merge": stdlib.MergeFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc,
		"pow": stdlib.PowFunc, "range": stdlib.RangeFunc, "regex": stdlib.RegexFunc,
		"regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc, "replace": stdlib.ReplaceFunc,
		"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
		"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc,
		"setunion": stdlib.SetUnionFunc, "signum": stdlib.SignumFunc, "slice": stdlib.SliceFunc,
		"sort": stdlib.SortFunc, "split": stdlib.SplitFunc, "strrev": stdlib.ReverseFunc,
		"substr": stdlib.SubstrFunc, "timeadd": stdlib.TimeAddFunc, "title": stdlib.TitleFunc,
		"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc,
		"zipmap":   stdlib.ZipmapFunc,
		"tostring": makeToFunc(cty.String), "tonumber": makeToFunc(cty.Number), "tobool": makeToFunc(cty.Bool),
	}
}

func makeToFunc(ty cty.Type) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true}},
		Type:   function.StaticReturnType(ty),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return convert.Convert(args[0], ty)
		},
	})
}

// validationContext evaluates nothing that depends on run-time values:
// inputs and stage outputs are unknown values of their declared types; locals
// are evaluated over those, so they are typed too.
func (g *Graph) validationContext() (*hcl.EvalContext, hcl.Diagnostics) {
	inputs := map[string]cty.Value{}
	for _, in := range g.Inputs {
		inputs[in.Name] = cty.UnknownVal(in.Type)
	}
	ctx := &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": cty.ObjectVal(inputs)}}
	locals, diags := g.evalLocals(ctx)
	ctx.Variables["local"] = locals
	stageVals := map[string]cty.Value{}
	for _, s := range g.Stages {
		stageVals[s.Name] = cty.UnknownVal(stage.OutputType(s.Kind))
	}
	ctx.Variables["stage"] = cty.ObjectVal(stageVals)
	return ctx, diags
}

func (g *Graph) evalLocals(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vals := map[string]cty.Value{}
	for _, l := range g.Locals {
		ctx.Variables["local"] = cty.ObjectVal(vals)
		v, d := l.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			v = cty.DynamicVal
		}
		vals[l.Name] = v
	}
	return cty.ObjectVal(vals), diags
}

// Scope holds the values of one run: inputs and locals. Stage outputs are
// added per stage by EvalStage.
type Scope struct {
	g      *Graph
	inputs cty.Value
	locals cty.Value
	// base is the evaluation context of stages that refer to no stage
	// outputs; evaluation only reads it, so stages share it.
	base *hcl.EvalContext
}

// NewScope checks the given input values against the declared inputs (every
// required input set, no unknown name, each converted to its type) and
// evaluates the locals.
func (g *Graph) NewScope(values map[string]cty.Value) (*Scope, error) {
	vals := map[string]cty.Value{}
	var problems []string
	declared := map[string]bool{}
	for _, in := range g.Inputs {
		declared[in.Name] = true
		v, ok := values[in.Name]
		if !ok {
			if in.Required() {
				problems = append(problems, fmt.Sprintf("input %q is required (%s): pass --input %s=VALUE", in.Name, typeexpr.TypeString(in.Type), in.Name))
				continue
			}
			v = in.Default
		}
		cv, err := convert.Convert(v, in.Type)
		if err != nil {
			problems = append(problems, fmt.Sprintf("input %q must be %s: %v", in.Name, typeexpr.TypeString(in.Type), err))
			continue
		}
		vals[in.Name] = cv
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !declared[n] {
			problems = append(problems, fmt.Sprintf("pipeline %q has no input %q", g.Name, n))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("CONFIG_INVALID: %s: %s", g.File, strings.Join(problems, "; "))
	}
	sc := &Scope{g: g, inputs: cty.ObjectVal(vals)}
	ctx := &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": sc.inputs}}
	locals, diags := g.evalLocals(ctx)
	if diags.HasErrors() {
		return nil, diag.NewError("CONFIG_INVALID", diags)
	}
	sc.locals = locals
	sc.base = &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": sc.inputs, "local": sc.locals}}
	return sc, nil
}

// EvalStage evaluates a stage's configuration with the outputs of the
// stages it depends on. outputs is indexed by stage index; a dependency
// without outputs (skipped, or failed before an always stage) has a nil
// entry and its outputs are seen as nulls.
func (sc *Scope) EvalStage(s *Stage, outputs []map[string]cty.Value) (cty.Value, hcl.Diagnostics) {
	if len(s.kindAttrs) == 0 {
		return cty.EmptyObjectVal, nil
	}
	return s.evalConfig(sc.stageContext(s, outputs))
}

// nullOutputs stands for the outputs of a stage that did not produce any
// (skipped by its condition, or failed before an always stage): every
// output is a typed null, so `stage.x.out == null` can be tested.
func nullOutputs(k stage.Kind) cty.Value {
	outs := k.Outputs()
	if len(outs) == 0 {
		return cty.EmptyObjectVal
	}
	vals := make(map[string]cty.Value, len(outs))
	for _, o := range outs {
		vals[o.Name] = cty.NullVal(o.Type)
	}
	return cty.ObjectVal(vals)
}

// EvalWhen evaluates a stage's `when` condition (true when it has none).
func (sc *Scope) EvalWhen(s *Stage, outputs []map[string]cty.Value) (bool, hcl.Diagnostics) {
	if s.When == nil {
		return true, nil
	}
	v, diags := s.evalWhen(sc.stageContext(s, outputs))
	return v.True(), diags
}

// stageContext is the evaluation context of one stage: inputs, locals and
// the outputs of the stages its expressions refer to.
func (sc *Scope) stageContext(s *Stage, outputs []map[string]cty.Value) *hcl.EvalContext {
	if len(s.DataDeps) == 0 {
		return sc.base
	}
	st := make(map[string]cty.Value, len(s.DataDeps))
	for _, d := range s.DataDeps {
		out := outputs[d.Index]
		if out == nil {
			st[d.Name] = nullOutputs(d.Kind)
			continue
		}
		st[d.Name] = cty.ObjectVal(out)
	}
	vars := map[string]cty.Value{"input": sc.inputs, "local": sc.locals, "stage": cty.ObjectVal(st)}
	return &hcl.EvalContext{Functions: sc.g.funcs, Variables: vars}
}

// evalConfig evaluates the stage's attributes into an object with one
// attribute per declared Attr (null where unset), converting each to its
// declared type.
func (s *Stage) evalConfig(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if len(s.kindAttrs) == 0 {
		return cty.EmptyObjectVal, nil
	}
	vals := make(map[string]cty.Value, len(s.kindAttrs))
	diags := s.evalAttrs(ctx, vals)
	return cty.ObjectVal(vals), diags
}

// checkConfig type-checks the stage's attributes without building the
// configuration object (validation evaluates thousands of stages).
func (s *Stage) checkConfig(ctx *hcl.EvalContext) hcl.Diagnostics {
	diags := s.evalAttrs(ctx, nil)
	if s.When != nil {
		_, d := s.evalWhen(ctx)
		diags = append(diags, d...)
	}
	return diags
}

// evalWhen evaluates the stage's `when` condition: true, false, or (during
// validation) unknown. Null counts as false.
func (s *Stage) evalWhen(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := s.When.Value(ctx)
	if diags.HasErrors() {
		return cty.False, diags
	}
	if v.IsNull() {
		return cty.False, nil
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		return cty.False, append(diags, &hcl.Diagnostic{
			Severity:    hcl.DiagError,
			Summary:     "Invalid when condition",
			Detail:      fmt.Sprintf("when must be true or false: %s.", err),
			Subject:     s.When.Range().Ptr(),
			Expression:  s.When,
			EvalContext: ctx,
		})
	}
	return b, diags
}

// evalAttrs evaluates and converts each attribute, storing the results in
// vals unless it is nil.
func (s *Stage) evalAttrs(ctx *hcl.EvalContext, vals map[string]cty.Value) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range s.kindAttrs {
		attr, ok := s.attrs[a.Name]
		if !ok {
			if vals != nil {
				vals[a.Name] = cty.NullVal(a.Type)
			}
			continue
		}
		v, d := attr.Expr.Value(ctx)
		diags = append(diags, d...)
		cv, err := convert.Convert(v, a.Type)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity:    hcl.DiagError,
				Summary:     "Incorrect attribute value type",
				Detail:      fmt.Sprintf("Inappropriate value for attribute %q: %s.", a.Name, err),
				Subject:     attr.Expr.Range().Ptr(),
				Context:     hcl.RangeBetween(attr.NameRange, attr.Expr.Range()).Ptr(),
				Expression:  attr.Expr,
				EvalContext: ctx,
			})
			cv = cty.UnknownVal(a.Type)
		}
		if vals != nil {
			vals[a.Name] = cv
		}
	}
	return diags
}

// variables lists the traversals of the stage's attribute expressions.
func (s *Stage) variables() []hcl.Traversal {
	var out []hcl.Traversal
	if s.When != nil {
		out = append(out, s.When.Variables()...)
	}
	for _, a := range s.kindAttrs {
		if attr, ok := s.attrs[a.Name]; ok {
			out = append(out, attr.Expr.Variables()...)
		}
	}
	return out
}
