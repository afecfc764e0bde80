package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// What a reference reaches: a stage's expression that names input.x,
// local.x or module.c.out depends on the stages those values are made of,
// through as many modules as it takes. Those are resolved once per module
// value (memo) before the stages' own references.

type valKind uint8

const (
	valInput valKind = iota
	valLocal
	valOutput
	valForEach // a module call's for_each
)

type memoKey struct {
	m    *Module
	kind valKind
	name string
}

// ref is a stage a reference reaches, and the module values it went
// through ("input.dir given at release.hcl:12,9") for cycle reports.
type ref struct {
	stage  *Stage
	output string
	via    []string
}

// refScope says what a reference may name besides the module's values:
// each, under for_each.
type refScope struct{ each bool }

// memoEntry is a module value's references; inProgress catches a value
// made of itself.
type memoEntry struct {
	refs       []ref
	inProgress bool
}

// resolveModuleValues checks every module call's arguments against the
// module's inputs and resolves what each module value reaches, once, so
// the stages (resolved in parallel) only read g.memo.
func (g *Graph) resolveModuleValues() hcl.Diagnostics {
	g.memo = map[memoKey][]ref{}
	g.inProgress = map[memoKey]bool{}
	var diags hcl.Diagnostics
	var walk func(m *Module)
	walk = func(m *Module) {
		if m.Call != nil {
			diags = append(diags, checkArgs(m)...)
			for _, tr := range m.Call.DependsOn {
				_, d := dependsOnTargets(g, m.Parent, tr)
				diags = append(diags, d...)
			}
			if m.Call.ForEach != nil {
				_, d := g.valueRefs(memoKey{m, valForEach, ""})
				diags = append(diags, d...)
			}
			for _, in := range m.Inputs {
				_, d := g.valueRefs(memoKey{m, valInput, in.Name})
				diags = append(diags, d...)
			}
		}
		for _, l := range m.Locals {
			_, d := g.valueRefs(memoKey{m, valLocal, l.Name})
			diags = append(diags, d...)
		}
		for _, o := range m.Outputs {
			_, d := g.valueRefs(memoKey{m, valOutput, o.Name})
			diags = append(diags, d...)
		}
		for _, c := range m.Modules {
			walk(c)
		}
	}
	walk(g.Root)
	g.memoDone = true
	return diags
}

// checkArgs reports arguments the module has no input for and required
// inputs the call does not give.
func checkArgs(m *Module) hcl.Diagnostics {
	var diags hcl.Diagnostics
	names := make([]string, 0, len(m.Call.Args))
	for n := range m.Call.Args {
		names = append(names, n)
	}
	sort.Strings(names)
	inputNames := make([]string, len(m.Inputs))
	for i, in := range m.Inputs {
		inputNames[i] = in.Name
	}
	for _, n := range names {
		if _, ok := m.inputs[n]; ok {
			continue
		}
		detail := fmt.Sprintf("Module %q (%s) has no input %q.", m.Name, m.Source, n)
		if s := suggest(n, inputNames); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		if len(inputNames) > 0 {
			detail += " Its inputs: " + strings.Join(inputNames, ", ") + "."
		}
		diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Unsupported argument", Detail: detail, Subject: m.Call.Args[n].NameRange.Ptr()})
	}
	for _, in := range m.Inputs {
		if _, ok := m.Call.Args[in.Name]; !ok && in.Required() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required input",
				Detail:   fmt.Sprintf("Module %q (%s) needs input %q (declared at %s): add %s = ... to the call.", m.Name, m.Source, in.Name, fmtPos(in.DeclRange), in.Name),
				Subject:  m.Call.DeclRange.Ptr(),
			})
		}
	}
	return diags
}

// valueRefs returns the stages a module value is made of. Before
// resolveModuleValues is done it fills g.memo; after, it only reads it (the
// stages are resolved in parallel), computing a missing value without
// keeping it.
func (g *Graph) valueRefs(k memoKey) ([]ref, hcl.Diagnostics) {
	if refs, ok := g.memo[k]; ok {
		return refs, nil
	}
	if g.memoDone {
		refs, _ := g.computeValueRefs(k)
		return refs, nil
	}
	if g.inProgress[k] {
		return nil, hcl.Diagnostics{g.valueCycleDiag(k)}
	}
	g.inProgress[k] = true
	refs, diags := g.computeValueRefs(k)
	delete(g.inProgress, k)
	g.memo[k] = refs
	return refs, diags
}

func (g *Graph) computeValueRefs(k memoKey) ([]ref, hcl.Diagnostics) {
	m := k.m
	var expr hcl.Expression
	var in *Module
	var scope refScope
	var via string
	switch k.kind {
	case valInput:
		arg, ok := m.Call.Args[k.name]
		if !ok {
			return nil, nil // the default: no stage in it
		}
		expr, in, scope = arg.Expr, m.Parent, refScope{each: m.Call.ForEach != nil}
		via = fmt.Sprintf("input.%s of %s given at %s", k.name, m.Addr, fmtPos(arg.Expr.Range()))
	case valLocal:
		expr, in = m.locals[k.name].Expr, m
		via = fmt.Sprintf("local.%s at %s", k.name, fmtPos(m.locals[k.name].Range))
	case valOutput:
		o := m.outputs[k.name]
		expr, in = o.Expr, m
		via = fmt.Sprintf("output %q of %s at %s", k.name, m.Addr, fmtPos(o.Expr.Range()))
	case valForEach:
		expr, in = m.Call.ForEach, m.Parent
		via = fmt.Sprintf("for_each of %s at %s", m.Addr, fmtPos(expr.Range()))
	}
	var out []ref
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if k.kind == valLocal && tr.RootName() != "input" && tr.RootName() != "local" {
			continue // decodeLocals reported it
		}
		if k.kind == valForEach && tr.RootName() == "each" {
			diags = append(diags, badRef(tr, "for_each cannot refer to each: each is what it makes."))
			continue
		}
		refs, d := g.traversalRefs(in, tr, scope)
		diags = append(diags, d...)
		for _, r := range refs {
			r.via = append([]string{via}, r.via...)
			out = append(out, r)
		}
	}
	return out, diags
}

func (g *Graph) valueCycleDiag(k memoKey) *hcl.Diagnostic {
	var names []string
	for p := range g.inProgress {
		names = append(names, describeValue(p))
	}
	sort.Strings(names)
	var subject hcl.Range
	switch k.kind {
	case valInput:
		subject = k.m.Call.Args[k.name].Expr.Range()
	case valLocal:
		subject = k.m.locals[k.name].Range
	case valOutput:
		subject = k.m.outputs[k.name].Expr.Range()
	case valForEach:
		subject = k.m.Call.ForEach.Range()
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Dependency cycle between module values",
		Detail:   fmt.Sprintf("%s is made of itself through %s. Remove one of these references to break the cycle.", describeValue(k), strings.Join(names, ", ")),
		Subject:  subject.Ptr(),
	}
}

func describeValue(k memoKey) string {
	switch k.kind {
	case valInput:
		return fmt.Sprintf("input.%s of %s (given at %s)", k.name, k.m.Addr, fmtPos(k.m.Call.Args[k.name].Expr.Range()))
	case valLocal:
		return fmt.Sprintf("local.%s of %s (%s)", k.name, orPipeline(k.m.Addr), fmtPos(k.m.locals[k.name].Range))
	case valOutput:
		return fmt.Sprintf("output %q of %s (%s)", k.name, k.m.Addr, fmtPos(k.m.outputs[k.name].Expr.Range()))
	}
	return fmt.Sprintf("for_each of %s (%s)", k.m.Addr, fmtPos(k.m.Call.ForEach.Range()))
}

func orPipeline(addr string) string {
	if addr == "" {
		return "the pipeline"
	}
	return addr
}

// traversalRefs checks one reference made in module m and returns the
// stages it reaches.
func (g *Graph) traversalRefs(m *Module, tr hcl.Traversal, scope refScope) ([]ref, hcl.Diagnostics) {
	switch tr.RootName() {
	case "input":
		if d := m.checkInputRef(tr); d.HasErrors() {
			return nil, d
		}
		if m.Call == nil {
			return nil, nil
		}
		name, _ := attrName(tr, 1)
		refs, diags := g.valueRefs(memoKey{m, valInput, name})
		if arg, ok := m.Call.Args[name]; ok {
			refs = narrow(refs, arg.Expr, tr, 2)
		}
		return refs, diags
	case "local":
		name, ok := attrName(tr, 1)
		if !ok {
			return nil, hcl.Diagnostics{badRef(tr, "A local value is referred to as local.<name>.")}
		}
		if _, ok := m.locals[name]; !ok {
			return nil, hcl.Diagnostics{unknownName(tr, "local value", name, localNames(m.Locals))}
		}
		return g.valueRefs(memoKey{m, valLocal, name})
	case "stage":
		return g.stageRefs(m, tr)
	case "module":
		return g.moduleRefs(m, tr)
	case "each":
		if !scope.each {
			return nil, hcl.Diagnostics{badRef(tr, "each.key and each.value exist only in a stage or a module call that has for_each.")}
		}
		if name, ok := attrName(tr, 1); !ok || (name != "key" && name != "value") {
			return nil, hcl.Diagnostics{badRef(tr, "Under for_each, each.key is the instance's key and each.value its value.")}
		}
		return nil, nil
	}
	return nil, hcl.Diagnostics{unknownVariable(tr)}
}

// stageRefs resolves stage.NAME.OUTPUT, and for a for_each stage
// stage.NAME["KEY"].OUTPUT or stage.NAME (every instance).
func (g *Graph) stageRefs(m *Module, tr hcl.Traversal) ([]ref, hcl.Diagnostics) {
	name, ok := attrName(tr, 1)
	if !ok {
		return nil, hcl.Diagnostics{badRef(tr, "A stage output is referred to as stage.<name>.<output>.")}
	}
	target, ok := m.stages[name]
	if !ok && m.unknownKind[name] {
		return nil, nil
	}
	if !ok {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Reference to an unknown stage",
			Detail:   unknownStageDetail(name, g, m),
			Subject:  tr.SourceRange().Ptr(),
		}}
	}
	at := 2
	if target.ForEach != nil {
		if len(tr) <= 2 {
			return []ref{{stage: target}}, nil
		}
		if len(tr) <= 3 {
			return []ref{{stage: target}}, nil
		}
		at = 3
	}
	if len(tr) <= at {
		return []ref{{stage: target}}, nil // every output, as an object
	}
	out, ok := attrName(tr, at)
	if !ok {
		return nil, hcl.Diagnostics{badRef(tr, fmt.Sprintf("Refer to one output of stage %q: stage.%s.<output>; it has %s.", name, name, outputList(target.Kind)))}
	}
	if !hasOutput(target.Kind, out) {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Reference to an undeclared output",
			Detail:   fmt.Sprintf("Stage %q (kind %s) has no output %q. Available outputs: %s.", name, target.KindName, out, outputList(target.Kind)),
			Subject:  tr.SourceRange().Ptr(),
		}}
	}
	return []ref{{stage: target, output: out}}, nil
}

// moduleRefs resolves module.NAME.OUTPUT, and module.NAME (every output)
// or module.NAME["KEY"].OUTPUT for a module with for_each, which reads
// every output of every instance.
func (g *Graph) moduleRefs(m *Module, tr hcl.Traversal) ([]ref, hcl.Diagnostics) {
	name, ok := attrName(tr, 1)
	if !ok {
		return nil, hcl.Diagnostics{badRef(tr, "A module output is referred to as module.<name>.<output>.")}
	}
	child, ok := m.children[name]
	if !ok {
		names := make([]string, len(m.Modules))
		for i, c := range m.Modules {
			names[i] = c.Name
		}
		return nil, hcl.Diagnostics{unknownName(tr, "module", name, names)}
	}
	var outs []*Output
	if child.Call.ForEach == nil && len(tr) > 2 {
		out, ok := attrName(tr, 2)
		o, found := child.outputs[out]
		if !ok || !found {
			names := make([]string, len(child.Outputs))
			for i, o := range child.Outputs {
				names[i] = o.Name
			}
			return nil, hcl.Diagnostics{unknownName(tr, "output of module "+name, out, names)}
		}
		outs = []*Output{o}
	} else {
		if child.Call.ForEach == nil {
			// module.NAME as a whole: every output.
		}
		outs = child.Outputs
	}
	var refs []ref
	var diags hcl.Diagnostics
	if child.Call.ForEach != nil {
		r, d := g.valueRefs(memoKey{child, valForEach, ""})
		refs, diags = append(refs, r...), append(diags, d...)
	}
	for _, o := range outs {
		r, d := g.valueRefs(memoKey{child, valOutput, o.Name})
		if len(outs) == 1 && child.Call.ForEach == nil {
			r = narrow(r, o.Expr, tr, 3)
		}
		refs, diags = append(refs, r...), append(diags, d...)
	}
	return refs, diags
}

// narrow names the output a reference reads when a module value passes a
// whole stage on unchanged (inputs = stage.inputs, value = stage.inventory)
// and the reference reads one attribute of it (input.inputs.dir): the edge
// then says which output it reads, as a direct reference would.
func narrow(refs []ref, value hcl.Expression, tr hcl.Traversal, at int) []ref {
	if len(refs) != 1 || refs[0].output != "" || len(tr) <= at {
		return refs
	}
	if vt, d := hcl.AbsTraversalForExpr(value); d.HasErrors() || len(vt) != 2 {
		return refs
	}
	out, ok := attrName(tr, at)
	if !ok || !hasOutput(refs[0].stage.Kind, out) {
		return refs
	}
	r := refs[0]
	r.output = out
	return []ref{r}
}
