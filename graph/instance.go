package graph

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"piship.dev/piship/stages/stage"
)

// Instances: a stage with for_each, and every stage of a module with
// for_each, runs once per key. The keys are known when what for_each reads
// is: inputs and locals at the start of the run, a stage's outputs when
// that stage has finished. The engine asks for a stage's instances
// (Scope.Expand) when the stage is ready to start, so a for_each over a
// stage's output is expanded as soon as that output exists, never refused
// for being unknown before the run.

// outcome is what an instance gave: outputs, or gone (failed, cancelled,
// not started); neither means skipped by its condition.
type outcome struct {
	outputs map[string]cty.Value
	gone    bool
}

// modInst is one instance of a module in a run: its address with keys,
// its each (for its call's arguments), and the values computed in it.
type modInst struct {
	m      *Module
	parent *modInst
	addr   string
	each   cty.Value

	mu       sync.Mutex
	vals     map[memoKey]cty.Value
	children map[*Module][]*modInst
	insts    map[*Stage][]*Stage
}

func newModInst(m *Module, parent *modInst, addr string, each cty.Value) *modInst {
	return &modInst{m: m, parent: parent, addr: addr, each: each,
		vals: map[memoKey]cty.Value{}, children: map[*Module][]*modInst{}, insts: make(map[*Stage][]*Stage, len(m.Stages))}
}

// ErrUndecided is the error of a for_each that refers to outputs of a
// stage that failed or did not run.
var ErrUndecided = errors.New("for_each cannot be decided: it needs outputs of a stage that did not succeed")

// forEachKey is one instance's key and each.value (cty.NilVal for an
// element of a list, whose value is its key).
type forEachKey struct {
	key string
	val cty.Value
}

// forEachKeys is the rule of for_each: a map or object gives its keys, a
// list, set or tuple of strings its elements (a duplicate is refused);
// instances are ordered by key as sorted strings.
func forEachKeys(v cty.Value) ([]forEachKey, error) {
	if !v.IsKnown() {
		return nil, ErrUndecided
	}
	if v.IsNull() {
		return nil, fmt.Errorf("for_each is null: give a map, or a list of strings")
	}
	ty := v.Type()
	byName := ty.IsMapType() || ty.IsObjectType()
	if !byName && !ty.IsListType() && !ty.IsSetType() && !ty.IsTupleType() {
		return nil, fmt.Errorf("for_each must be a map, or a list of strings; it is %s", ty.FriendlyName())
	}
	// The elements in one pass (v.IsWhollyKnown would be a second one, and
	// the iterator allocates for each element): an unknown one decides
	// nothing, whatever the others are.
	keys := make([]forEachKey, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if !e.IsWhollyKnown() {
			return nil, ErrUndecided
		}
		if byName {
			keys = append(keys, forEachKey{key: k.AsString(), val: e})
		} else {
			keys = append(keys, forEachKey{val: e})
		}
	}
	if byName {
		byKey := func(a, b forEachKey) int { return strings.Compare(a.key, b.key) }
		if !slices.IsSortedFunc(keys, byKey) { // a map's keys come sorted
			slices.SortFunc(keys, byKey)
		}
		return keys, nil
	}
	// A list: each element is its key and its value, so the keys alone
	// are sorted (strings sort much faster than pairs), and each.value is
	// made from the key when it is read.
	ks := make([]string, len(keys))
	for i, el := range keys {
		s := el.val
		if s.Type() != cty.String {
			var err error
			if s, err = convert.Convert(el.val, cty.String); err != nil {
				s = cty.NullVal(cty.String)
			}
		}
		if s.IsNull() {
			return nil, fmt.Errorf("for_each over a list takes strings (each is its own key); element %s is not one", el.val.GoString())
		}
		ks[i] = s.AsString()
	}
	slices.Sort(ks)
	for i, k := range ks {
		// Sorted, a duplicate is next to its twin: no set of thousands.
		if i > 0 && k == ks[i-1] {
			return nil, fmt.Errorf("for_each has %q twice: each element is a key, so keys must be unique (distinct() removes duplicates)", k)
		}
		keys[i] = forEachKey{key: k}
	}
	return keys, nil
}

func eachValue(k forEachKey) cty.Value {
	v := k.val
	if v == cty.NilVal { // an element of a list: its own value
		v = cty.StringVal(k.key)
	}
	return cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k.key), "value": v})
}

// runView is what a run knows of its stages: outputs and gone by index
// (see EvalStage); instances carry their own (outcome).
type runView struct {
	outputs []map[string]cty.Value
	gone    Gone
}

// Expand makes the instances of a stage that expands (Stage.Expands), in
// order: its module's instances in order, then its own keys as sorted
// strings. Their indexes start at next. It is called once per run, when
// every stage the stage depends on has settled. An error is the for_each's
// (ErrUndecided when it needs a stage that did not succeed).
//
// It runs on the scheduler's loop, which every stage waits on, and a
// for_each may make thousands of instances: the keys of every module
// instance are decided first, so the list of instances and their outcomes
// are allocated once, and each.key and each.value become a value only
// when the instance's expressions are evaluated (genericContext).
func (sc *Scope) Expand(t *Stage, outputs []map[string]cty.Value, gone Gone, next int) ([]*Stage, error) {
	view := runView{outputs, gone}
	mis, err := sc.moduleInstances(t.Module, view)
	if err != nil {
		return nil, err
	}
	keys := make([][]forEachKey, len(mis))
	n := 0
	for i, mi := range mis {
		if t.ForEach == nil {
			n++
			continue
		}
		ctx, diags := sc.exprContext(mi, t.ForEach.Variables(), cty.NilVal, view)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
		v, diags := t.ForEach.Value(ctx)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
		if keys[i], err = forEachKeys(v); err != nil {
			return nil, err
		}
		n += len(keys[i])
	}
	outcomes, out := make([]outcome, n), make([]*Stage, n)
	j := 0
	// add makes instance j; its name is the tail of its address (one
	// string for both).
	add := func(mi *modInst, addr string, nameAt int, each *forEachKey) {
		cp := new(Stage) // one block for thousands would be fresh pages each run
		*cp = *t
		cp.Template, cp.Seq, cp.Index = t, j, next+j
		cp.inst, cp.each, cp.outcome = mi, each, &outcomes[j]
		cp.Addr, cp.Name = addr, addr[nameAt:]
		cp.Dependents = nil
		out[j] = cp
		j++
	}
	for i, mi := range mis {
		from := j
		prefix, base := "stage.", t.LocalName
		if mi.addr != "" {
			prefix, base = "", mi.addr+".stage."+t.LocalName
		}
		if t.ForEach == nil {
			add(mi, prefix+base, len(prefix), nil)
		}
		for k := range keys[i] {
			add(mi, instanceAddr(prefix, base, keys[i][k].key), len(prefix), &keys[i][k])
		}
		mi.mu.Lock()
		mi.insts[t] = out[from:j:j]
		mi.mu.Unlock()
	}
	return out, nil
}

// instanceAddr is prefix+base+keyText(key) in one allocation: a for_each
// makes thousands.
func instanceAddr(prefix, base, key string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(base) + len(key) + 6)
	b.WriteString(prefix)
	b.WriteString(base)
	b.WriteByte('[')
	b.WriteString(strconv.Quote(key))
	b.WriteByte(']')
	return b.String()
}

// TemplateName is the name of the stage an instance name was made from:
// the name without its keys (sign["a"] -> sign, module.t["x"].stage.b ->
// module.t.stage.b); a name without keys is its own.
func TemplateName(name string) string {
	if !strings.Contains(name, "[\"") {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '[' && i+1 < len(name) && name[i+1] == '"' {
			if q, err := strconv.QuotedPrefix(name[i+1:]); err == nil && strings.HasPrefix(name[i+1+len(q):], "]") {
				i += len(q) + 1
				continue
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

// DepNamesOf maps each stage name, and each instance a run recorded
// (names: a run's or a trace's stage names), to the names of the stages it
// waited for: the timing summary's critical path. An instance has its
// stage's dependencies, and a stage that depends on an expanded one waited
// for every recorded instance of it.
// unknown lists the names the graph has no stage for.
func (g *Graph) DepNamesOf(names []string) (deps map[string][]string, unknown []string) {
	instances := map[string][]string{}
	for _, n := range names {
		if t := TemplateName(n); t != n {
			instances[t] = append(instances[t], n)
		}
	}
	// expand names the stages of ds that n waited for: an expanded stage's
	// instances, but of a module instance n runs in, only its own
	// (module.t["a"].stage.x waits for module.t["a"].stage.y, not
	// module.t["b"]'s).
	expand := func(n string, ds []*Stage) []string {
		out := []string{}
		for _, d := range ds {
			in, ok := instances[d.Name]
			if !ok {
				out = append(out, d.Name)
				continue
			}
			for _, c := range in {
				if sameModuleInstance(n, c) {
					out = append(out, c)
				}
			}
		}
		return out
	}
	deps = make(map[string][]string, len(g.Stages)+len(names))
	for _, s := range g.Stages {
		if _, expanded := instances[s.Name]; !expanded { // its instances stand for it
			deps[s.Name] = expand(s.Name, s.DepStages)
		}
	}
	for _, n := range names {
		s, ok := g.byName[TemplateName(n)]
		switch {
		case !ok:
			unknown = append(unknown, n)
		case n != s.Name:
			deps[n] = expand(n, s.DepStages)
		}
	}
	return deps, unknown
}

// sameModuleInstance reports whether instance c can be one n waited for:
// at each key of c's address (module.t["a"]...), n is either outside that
// module (or for_each stage) or in the same instance of it.
func sameModuleInstance(n, c string) bool {
	for i := 0; i < len(c); i++ {
		if c[i] != '[' || i+1 >= len(c) || c[i+1] != '"' {
			continue
		}
		q, err := strconv.QuotedPrefix(c[i+1:])
		if err != nil {
			return true
		}
		end := i + 1 + len(q) + 1 // past the ]
		if strings.HasPrefix(n, c[:i]) && len(n) > i && n[i] == '[' && !strings.HasPrefix(n, c[:end]) {
			return false
		}
		i = end - 1
	}
	return true
}

// Record keeps what an instance gave for the stages that read it; the
// engine calls it before any of those starts.
func (sc *Scope) Record(inst *Stage, outputs map[string]cty.Value, gone bool) {
	if inst.outcome != nil {
		inst.outcome.outputs, inst.outcome.gone = outputs, gone
	}
}

// Key is an instance's key (each.key); empty for a stage without for_each.
func (s *Stage) Key() string {
	if s.each == nil {
		return ""
	}
	return s.each.key
}

// moduleInstances lists the instances of m in a run, in order; the
// caller does not change the list.
func (sc *Scope) moduleInstances(m *Module, view runView) ([]*modInst, error) {
	if m.Addr == "" {
		return []*modInst{sc.root}, nil
	}
	if !m.Expands {
		return []*modInst{sc.static[m]}, nil
	}
	parents, err := sc.moduleInstances(m.Parent, view)
	if err != nil {
		return nil, err
	}
	if len(parents) == 1 {
		return sc.childInsts(parents[0], m, view) // kept by the parent: not to be changed
	}
	var out []*modInst
	for _, p := range parents {
		cs, err := sc.childInsts(p, m, view)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// childInsts is the instances of module m called from p; they are made
// once (the first caller computes them outside the lock: evaluating the
// for_each may need other modules' values).
func (sc *Scope) childInsts(p *modInst, m *Module, view runView) ([]*modInst, error) {
	if !m.Expands {
		return []*modInst{sc.static[m]}, nil
	}
	p.mu.Lock()
	cs, ok := p.children[m]
	p.mu.Unlock()
	if ok {
		return cs, nil
	}
	base := "module." + m.Name
	if p.addr != "" {
		base = p.addr + "." + base
	}
	if m.Call.ForEach == nil {
		cs = []*modInst{newModInst(m, p, base, cty.NilVal)}
	} else {
		ctx, diags := sc.exprContext(p, m.Call.ForEach.Variables(), cty.NilVal, view)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
		v, diags := m.Call.ForEach.Value(ctx)
		if diags.HasErrors() {
			return nil, diagError(diags)
		}
		keys, err := forEachKeys(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Addr, err)
		}
		for _, k := range keys {
			cs = append(cs, newModInst(m, p, base+keyText(k.key), eachValue(k)))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, ok := p.children[m]; ok {
		return prev, nil
	}
	p.children[m] = cs
	return cs, nil
}

// instOf is the module instance a stage's expressions are evaluated in.
func (sc *Scope) instOf(s *Stage) *modInst {
	switch {
	case s.inst != nil:
		return s.inst
	case s.Module == nil || s.Module.Addr == "":
		return sc.root
	case s.Module.Expands:
		// A stage that expands is evaluated as its instances only.
		panic(fmt.Sprintf("graph: %s is evaluated before Scope.Expand made its instances", s.Name))
	}
	return sc.static[s.Module]
}

// genericContext is the evaluation context of a stage whose expressions
// need module values, each or instances (Stage.generic).
func (sc *Scope) genericContext(s *Stage, view runView) (*hcl.EvalContext, hcl.Diagnostics) {
	each := cty.NilVal
	if s.each != nil {
		each = eachValue(*s.each)
	}
	return sc.exprContext(sc.instOf(s), s.traversals, each, view)
}

// exprContext builds the context for expressions in module instance mi
// that make the given references: only the values they name are computed.
// Every stage they reach has settled (the edges say so), so nothing read
// here is still being written.
func (sc *Scope) exprContext(mi *modInst, trs []hcl.Traversal, each cty.Value, view runView) (*hcl.EvalContext, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	inputs, locals, stages, modules := map[string]cty.Value{}, map[string]cty.Value{}, map[string]cty.Value{}, map[string]cty.Value{}
	wholeModule := map[string]bool{}
	moduleOuts := map[string]map[string]bool{}
	for _, tr := range trs {
		name, ok := attrName(tr, 1)
		if !ok {
			continue
		}
		switch tr.RootName() {
		case "input":
			if mi.m.Call != nil {
				if _, done := inputs[name]; !done {
					v, d := sc.inputVal(mi, name, view)
					inputs[name], diags = v, append(diags, d...)
				}
			}
		case "local":
			if mi.m.Call != nil {
				if _, done := locals[name]; !done {
					v, d := sc.localVal(mi, name, view)
					locals[name], diags = v, append(diags, d...)
				}
			}
		case "stage":
			if _, done := stages[name]; !done {
				stages[name] = sc.stageVal(mi, name, view)
			}
		case "module":
			child, ok := mi.m.children[name]
			if !ok {
				continue
			}
			out, isAttr := "", false
			if len(tr) > 2 && child.Call.ForEach == nil {
				out, isAttr = attrName(tr, 2)
			}
			if !isAttr {
				wholeModule[name] = true
				continue
			}
			if moduleOuts[name] == nil {
				moduleOuts[name] = map[string]bool{}
			}
			moduleOuts[name][out] = true
		}
	}
	for name := range wholeModule {
		v, d := sc.moduleVal(mi, mi.m.children[name], nil, view)
		modules[name], diags = v, append(diags, d...)
	}
	for name, outs := range moduleOuts {
		if wholeModule[name] {
			continue
		}
		v, d := sc.moduleVal(mi, mi.m.children[name], outs, view)
		modules[name], diags = v, append(diags, d...)
	}
	vars := map[string]cty.Value{"stage": cty.ObjectVal(stages), "module": cty.ObjectVal(modules)}
	if mi.m.Call == nil {
		vars["input"], vars["local"] = sc.inputs, sc.locals
	} else {
		vars["input"], vars["local"] = cty.ObjectVal(inputs), cty.ObjectVal(locals)
	}
	if each != cty.NilVal {
		vars["each"] = each
	}
	return &hcl.EvalContext{Functions: sc.g.funcs, Variables: vars}, diags
}

// memoVal returns a module instance's value, computing it once.
func (sc *Scope) memoVal(mi *modInst, k memoKey, compute func() (cty.Value, hcl.Diagnostics)) (cty.Value, hcl.Diagnostics) {
	mi.mu.Lock()
	v, ok := mi.vals[k]
	mi.mu.Unlock()
	if ok {
		return v, nil
	}
	v, diags := compute()
	if !diags.HasErrors() {
		mi.mu.Lock()
		mi.vals[k] = v
		mi.mu.Unlock()
	}
	return v, diags
}

// inputVal is input NAME of a module instance: its call's argument,
// evaluated where the call is (with the instance's each), or the default.
func (sc *Scope) inputVal(mi *modInst, name string, view runView) (cty.Value, hcl.Diagnostics) {
	return sc.memoVal(mi, memoKey{mi.m, valInput, name}, func() (cty.Value, hcl.Diagnostics) {
		in := mi.m.inputs[name]
		arg, ok := mi.m.Call.Args[name]
		if !ok {
			if in.Required() {
				return cty.NullVal(in.Type), nil
			}
			return in.Default, nil
		}
		ctx, diags := sc.exprContext(mi.parent, arg.Expr.Variables(), mi.each, view)
		v, d := arg.Expr.Value(ctx)
		diags = append(diags, d...)
		if diags.HasErrors() {
			return cty.DynamicVal, diags
		}
		cv, err := convert.Convert(v, in.Type)
		if err != nil {
			return cty.DynamicVal, append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid module input",
				Detail:   fmt.Sprintf("Input %q of %s must be %s: %v.", name, mi.addr, in.Type.FriendlyName(), err),
				Subject:  arg.Expr.Range().Ptr(),
			})
		}
		return cv, diags
	})
}

func (sc *Scope) localVal(mi *modInst, name string, view runView) (cty.Value, hcl.Diagnostics) {
	return sc.memoVal(mi, memoKey{mi.m, valLocal, name}, func() (cty.Value, hcl.Diagnostics) {
		l := mi.m.locals[name]
		ctx, diags := sc.exprContext(mi, l.Expr.Variables(), cty.NilVal, view)
		v, d := l.Expr.Value(ctx)
		return v, append(diags, d...)
	})
}

func (sc *Scope) outputVal(mi *modInst, name string, view runView) (cty.Value, hcl.Diagnostics) {
	return sc.memoVal(mi, memoKey{mi.m, valOutput, name}, func() (cty.Value, hcl.Diagnostics) {
		o := mi.m.outputs[name]
		ctx, diags := sc.exprContext(mi, o.Expr.Variables(), cty.NilVal, view)
		v, d := o.Expr.Value(ctx)
		return v, append(diags, d...)
	})
}

// moduleVal is module.NAME seen from mi: an object of its outputs (only
// those in outs when it is not nil), or, with for_each, an object of such
// objects by key.
func (sc *Scope) moduleVal(mi *modInst, child *Module, outs map[string]bool, view runView) (cty.Value, hcl.Diagnostics) {
	cs, err := sc.childInsts(mi, child, view)
	if err != nil {
		if errors.Is(err, ErrUndecided) {
			return cty.DynamicVal, nil
		}
		return cty.DynamicVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid for_each", Detail: err.Error(), Subject: child.Call.DeclRange.Ptr()}}
	}
	var diags hcl.Diagnostics
	object := func(ci *modInst) cty.Value {
		vals := map[string]cty.Value{}
		for _, o := range child.Outputs {
			if outs != nil && !outs[o.Name] {
				continue
			}
			v, d := sc.outputVal(ci, o.Name, view)
			vals[o.Name], diags = v, append(diags, d...)
		}
		return cty.ObjectVal(vals)
	}
	if child.Call.ForEach == nil {
		return object(cs[0]), diags
	}
	byKey := map[string]cty.Value{}
	for _, ci := range cs {
		byKey[ci.each.GetAttr("key").AsString()] = object(ci)
	}
	return byKeyVal(byKey), diags
}

// stageVal is stage.NAME seen from mi: the stage's outputs (typed nulls
// when it was skipped, unknown when it is gone), or, for a for_each stage,
// an object of those by key.
func (sc *Scope) stageVal(mi *modInst, name string, view runView) cty.Value {
	t, ok := mi.m.stages[name]
	if !ok {
		return cty.DynamicVal
	}
	if !t.Expands() {
		return outputsOf(t, view.outputs[t.Index], t.Index < len(view.gone) && view.gone[t.Index])
	}
	mi.mu.Lock()
	insts, expanded := mi.insts[t]
	mi.mu.Unlock()
	if !expanded {
		return cty.DynamicVal // never expanded: it did not start
	}
	if t.ForEach == nil {
		o := insts[0].outcome
		return outputsOf(t, o.outputs, o.gone)
	}
	byKey := make(map[string]cty.Value, len(insts))
	for _, in := range insts {
		byKey[in.Key()] = outputsOf(t, in.outcome.outputs, in.outcome.gone)
	}
	return byKeyVal(byKey)
}

// byKeyVal is instances' values by key: a map when they are of one type
// (so lookup() and the collection functions take it), else an object.
func byKeyVal(byKey map[string]cty.Value) cty.Value {
	var ty cty.Type
	for _, v := range byKey {
		if ty == cty.NilType {
			ty = v.Type()
		} else if !v.Type().Equals(ty) {
			return cty.ObjectVal(byKey)
		}
	}
	if ty == cty.NilType || !ty.IsObjectType() && !ty.IsPrimitiveType() {
		return cty.ObjectVal(byKey)
	}
	return cty.MapVal(byKey)
}

func outputsOf(s *Stage, out map[string]cty.Value, gone bool) cty.Value {
	switch {
	case out != nil:
		return cty.ObjectVal(out)
	case gone:
		return cty.UnknownVal(stage.OutputType(s.Kind))
	}
	return nullOutputs(s.Kind)
}

// diagError is a for_each's diagnostics as one error.
func diagError(diags hcl.Diagnostics) error {
	var parts []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		if d.Subject != nil {
			parts = append(parts, fmt.Sprintf("%s: %s: %s", fmtPos(*d.Subject), d.Summary, d.Detail))
		} else {
			parts = append(parts, d.Summary+": "+d.Detail)
		}
	}
	return errors.New(strings.Join(parts, "; "))
}
