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
	"piship.dev/piship/stages/stage/errcode"
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
		// for_each over a list of strings, written as Terraform users do.
		"toset": makeToFunc(cty.Set(cty.String)),
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

// validationContexts evaluate nothing that depends on run-time values:
// inputs and stage outputs are unknown values of their declared types
// (a for_each stage's and a module's outputs of any type); locals are
// evaluated over those, so they are typed too. There is one per module.
func (g *Graph) validationContexts() (map[*Module]*hcl.EvalContext, hcl.Diagnostics) {
	ctxs := map[*Module]*hcl.EvalContext{}
	var diags hcl.Diagnostics
	var walk func(m *Module)
	walk = func(m *Module) {
		inputs := map[string]cty.Value{}
		for _, in := range m.Inputs {
			inputs[in.Name] = cty.UnknownVal(in.Type)
		}
		ctx := &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": cty.ObjectVal(inputs)}}
		locals, d := evalLocals(m.Locals, ctx)
		diags = append(diags, d...)
		ctx.Variables["local"] = locals
		stageVals := map[string]cty.Value{}
		for _, s := range m.Stages {
			if s.ForEach != nil {
				stageVals[s.LocalName] = cty.DynamicVal
			} else {
				stageVals[s.LocalName] = cty.UnknownVal(stage.OutputType(s.Kind))
			}
		}
		for name := range m.unknownKind {
			stageVals[name] = cty.DynamicVal
		}
		ctx.Variables["stage"] = cty.ObjectVal(stageVals)
		modules := map[string]cty.Value{}
		for _, c := range m.Modules {
			if c.Call.ForEach != nil {
				modules[c.Name] = cty.DynamicVal
				continue
			}
			outs := map[string]cty.Value{}
			for _, o := range c.Outputs {
				outs[o.Name] = cty.DynamicVal
			}
			modules[c.Name] = cty.ObjectVal(outs)
		}
		ctx.Variables["module"] = cty.ObjectVal(modules)
		ctxs[m] = ctx
		for _, c := range m.Modules {
			walk(c)
		}
	}
	walk(g.Root)
	return ctxs, diags
}

// eachContext adds each (of unknown key and value) to ctx, for an
// expression under for_each.
func eachContext(ctx *hcl.EvalContext) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.UnknownVal(cty.String), "value": cty.DynamicVal})}
	return child
}

// checkModules type-checks what is written in module calls and modules:
// each argument against its input's type, for_each, and outputs.
func (g *Graph) checkModules(ctxs map[*Module]*hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var walk func(m *Module)
	walk = func(m *Module) {
		for _, o := range m.Outputs {
			_, d := o.Expr.Value(ctxs[m])
			diags = append(diags, d...)
		}
		for _, c := range m.Modules {
			ctx := ctxs[m]
			if c.Call.ForEach != nil {
				diags = append(diags, checkForEach(c.Call.ForEach, ctx)...)
				ctx = eachContext(ctx)
			}
			for _, in := range c.Inputs {
				arg, ok := c.Call.Args[in.Name]
				if !ok {
					continue
				}
				v, d := arg.Expr.Value(ctx)
				diags = append(diags, d...)
				if d.HasErrors() {
					continue
				}
				if _, err := convert.Convert(v, in.Type); err != nil {
					diags = append(diags, &hcl.Diagnostic{
						Severity: hcl.DiagError,
						Summary:  "Invalid module input",
						Detail:   fmt.Sprintf("Input %q of module %q must be %s (declared at %s): %v.", in.Name, c.Name, typeexpr.TypeString(in.Type), fmtPos(in.DeclRange), err),
						Subject:  arg.Expr.Range().Ptr(),
					})
				}
			}
			walk(c)
		}
	}
	walk(g.Root)
	return diags
}

// checkForEach refuses a for_each whose value, known at validation (a
// literal), breaks the rule of forEachKeys.
func checkForEach(expr hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return diags
	}
	if _, err := forEachKeys(v); err != nil {
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid for_each", Detail: err.Error() + ".", Subject: expr.Range().Ptr()})
	}
	return diags
}

func evalLocals(ls []*Local, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	vals := map[string]cty.Value{}
	for _, l := range ls {
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
	// root is the pipeline's module instance; static those of the modules
	// that run once (no for_each on the way to them).
	root   *modInst
	static map[*Module]*modInst
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
		return nil, errcode.Newf(errcode.ConfigInvalid, "%s: %s", g.File, strings.Join(problems, "; "))
	}
	sc := &Scope{g: g, inputs: cty.ObjectVal(vals)}
	ctx := &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": sc.inputs}}
	locals, diags := evalLocals(g.Locals, ctx)
	if diags.HasErrors() {
		return nil, diag.NewError(errcode.ConfigInvalid, diags)
	}
	sc.locals = locals
	sc.root = newModInst(g.Root, nil, "", cty.NilVal)
	sc.static = map[*Module]*modInst{}
	var walk func(m *Module, p *modInst)
	walk = func(m *Module, p *modInst) {
		for _, c := range m.Modules {
			if c.Expands {
				continue
			}
			ci := newModInst(c, p, c.Addr, cty.NilVal)
			sc.static[c] = ci
			walk(c, ci)
		}
	}
	walk(g.Root, sc.root)
	sc.base = &hcl.EvalContext{Functions: g.funcs, Variables: map[string]cty.Value{"input": sc.inputs, "local": sc.locals}}
	return sc, nil
}

// Gone marks, by stage index, the stages whose outputs will never come in
// this run: they failed, were cancelled or did not start. Only an `always`
// stage can still start after one of its dependencies is gone.
type Gone []bool

// Undecided is an attribute of an always stage that cannot be decided
// because its expression refers to outputs of a stage that is gone.
type Undecided struct {
	Attr     string
	Required bool
	// Stages are the gone stages the expression refers to, by index.
	Stages []string
}

// EvalStage evaluates a stage's configuration with the outputs of the
// stages it depends on. outputs is indexed by stage index; a dependency
// without outputs has a nil entry. How such a dependency is seen is the
// rule of `always` stages:
//
//   - skipped by its `when` condition (gone[i] false): its outputs are
//     typed nulls, so `stage.x.out == null` can be tested;
//   - failed, cancelled or not started (gone[i] true): its outputs are
//     unknown, and so is every expression over them (`2 + stage.x.n`,
//     "${stage.x.dir}/y", a conditional on them). An attribute whose value is
//     not wholly known is undecided: it is left unset (null, the kind's
//     default) and listed in the returned Undecided, so the stage runs with
//     the attributes that can be decided. The engine skips the stage
//     instead when a required attribute is undecided.
func (sc *Scope) EvalStage(s *Stage, outputs []map[string]cty.Value, gone Gone) (cty.Value, []Undecided, hcl.Diagnostics) {
	if len(s.kindAttrs) == 0 {
		return cty.EmptyObjectVal, nil, nil
	}
	ctx, anyGone, diags := sc.stageContext(s, outputs, gone)
	if diags.HasErrors() {
		return cty.NilVal, nil, diags
	}
	cfg, diags := s.evalConfig(ctx)
	if !anyGone || diags.HasErrors() {
		return cfg, nil, diags
	}
	vals := cfg.AsValueMap()
	var undecided []Undecided
	for _, a := range s.kindAttrs {
		if v := vals[a.Name]; v.IsWhollyKnown() {
			continue
		}
		vals[a.Name] = cty.NullVal(a.Type)
		undecided = append(undecided, Undecided{Attr: a.Name, Required: a.Required, Stages: s.goneRefs(s.attrs[a.Name].Expr, gone)})
	}
	if len(undecided) == 0 {
		return cfg, nil, diags
	}
	return cty.ObjectVal(vals), undecided, diags
}

// goneRefs names the gone stages expr refers to, in order of first reference.
func (s *Stage) goneRefs(expr hcl.Expression, gone Gone) []string {
	var names []string
	if s.generic {
		// Through module values the reference names no stage: every gone
		// stage it depends on is named.
		for _, d := range s.DataDeps {
			if d.Index < len(gone) && gone[d.Index] {
				names = append(names, d.Name)
			}
		}
		return names
	}
	seen := map[string]bool{}
	for _, tr := range expr.Variables() {
		if len(tr) < 2 || tr.RootName() != "stage" {
			continue
		}
		step, ok := tr[1].(hcl.TraverseAttr)
		if !ok || seen[step.Name] {
			continue
		}
		for _, d := range s.DataDeps {
			if d.Name == step.Name && d.Index < len(gone) && gone[d.Index] {
				seen[step.Name] = true
				names = append(names, step.Name)
			}
		}
	}
	return names
}

// nullOutputs stands for the outputs of a stage skipped by its condition:
// every output is a typed null, so `stage.x.out == null` can be tested.
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
// A condition that refers to outputs of a gone stage (see EvalStage) and
// cannot be decided without them returns ok false and the gone stages it
// refers to; the engine then skips the stage with that reason.
func (sc *Scope) EvalWhen(s *Stage, outputs []map[string]cty.Value, gone Gone) (run bool, undecided []string, diags hcl.Diagnostics) {
	if s.When == nil {
		return true, nil, nil
	}
	ctx, _, diags := sc.stageContext(s, outputs, gone)
	if diags.HasErrors() {
		return false, nil, diags
	}
	v, diags := s.evalWhen(ctx)
	if !v.IsKnown() {
		return false, s.goneRefs(s.When, gone), diags
	}
	return v.True(), nil, diags
}

// stageContext is the evaluation context of one stage: inputs, locals and
// the outputs of the stages its expressions refer to. anyGone reports
// whether one of those is gone (its outputs are then unknown).
func (sc *Scope) stageContext(s *Stage, outputs []map[string]cty.Value, gone Gone) (ctx *hcl.EvalContext, anyGone bool, diags hcl.Diagnostics) {
	if s.generic {
		for _, d := range s.DataDeps {
			if d.Index < len(gone) && gone[d.Index] {
				anyGone = true
			}
		}
		ctx, diags = sc.genericContext(s, runView{outputs, gone})
		return ctx, anyGone, diags
	}
	if len(s.DataDeps) == 0 {
		return sc.base, false, nil
	}
	st := make(map[string]cty.Value, len(s.DataDeps))
	for _, d := range s.DataDeps {
		out := outputs[d.Index]
		switch {
		case out != nil:
			st[d.Name] = cty.ObjectVal(out)
		case d.Index < len(gone) && gone[d.Index]:
			st[d.Name] = cty.UnknownVal(stage.OutputType(d.Kind))
			anyGone = true
		default:
			st[d.Name] = nullOutputs(d.Kind)
		}
	}
	vars := map[string]cty.Value{"input": sc.inputs, "local": sc.locals, "stage": cty.ObjectVal(st)}
	return &hcl.EvalContext{Functions: sc.g.funcs, Variables: vars}, anyGone, nil
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
