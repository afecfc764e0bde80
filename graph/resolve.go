package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
)

// Resolution, after every block is decoded: a stage's references become
// edges, the verdicts name stages, the type check runs, and a name that
// reaches nothing is worded with what it could have been.

// resolveStage turns the stage's references into edges and reports those
// that name nothing. References through a module's inputs, locals and
// outputs become edges to the stages they reach (resolveModuleValues), and
// every stage of a module with for_each also depends on what that
// for_each reads.
func (g *Graph) resolveStage(s *Stage) hcl.Diagnostics {
	var diags hcl.Diagnostics
	m := s.Module
	for _, p := range s.dependsOn {
		switch p.root {
		case "module":
			targets, d := dependsOnTargets(g, m, p.tr)
			diags = append(diags, d...)
			for _, t := range targets {
				s.Deps = append(s.Deps, &Edge{From: t, To: s, Range: p.rng})
			}
			continue
		case "input":
			// The stages the call's argument is made of, as ordering
			// edges: a module's stage can wait for a stage of its caller.
			refs, d := g.traversalRefs(m, p.tr, refScope{})
			diags = append(diags, d...)
			for _, r := range refs {
				s.Deps = append(s.Deps, &Edge{From: r.stage, To: s, Range: p.rng, Via: r.via})
			}
			continue
		}
		target, ok := m.stages[p.name]
		if !ok && m.unknownKind[p.name] {
			continue
		}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Reference to an unknown stage",
				Detail:   unknownStageDetail(p.name, g, m),
				Subject:  p.rng.Ptr(),
			})
			continue
		}
		s.Deps = append(s.Deps, &Edge{From: target, To: s, Range: p.rng})
	}
	scope := refScope{each: s.ForEach != nil}
	for _, tr := range s.variables() {
		refs, d := g.traversalRefs(m, tr, scope)
		diags = append(diags, d...)
		for _, r := range refs {
			s.Deps = append(s.Deps, &Edge{From: r.stage, To: s, Range: tr.SourceRange(), Data: true, Output: r.output, Via: r.via})
		}
	}
	if s.ForEach != nil {
		for _, tr := range s.ForEach.Variables() {
			if tr.RootName() == "each" {
				diags = append(diags, badRef(tr, "for_each cannot refer to each: each is what it makes."))
				continue
			}
			refs, d := g.traversalRefs(m, tr, refScope{})
			diags = append(diags, d...)
			for _, r := range refs {
				s.Deps = append(s.Deps, &Edge{From: r.stage, To: s, Range: tr.SourceRange(), Data: true, Output: r.output, Via: r.via})
			}
		}
	}
	for mm := m; mm.Call != nil; mm = mm.Parent {
		for _, r := range g.memo[memoKey{mm, valForEach, ""}] {
			s.Deps = append(s.Deps, &Edge{From: r.stage, To: s, Range: mm.Call.ForEach.Range(), Data: true, Output: r.output, Via: r.via})
		}
		for _, tr := range mm.Call.DependsOn {
			targets, _ := dependsOnTargets(g, mm.Parent, tr) // reported by resolveModuleValues
			for _, t := range targets {
				s.Deps = append(s.Deps, &Edge{From: t, To: s, Range: tr.SourceRange()})
			}
		}
	}
	return diags
}

// dependsOnTargets resolves a module call's depends_on entry in the
// caller's scope: a stage, or every stage of a module.
func dependsOnTargets(g *Graph, m *Module, tr hcl.Traversal) ([]*Stage, hcl.Diagnostics) {
	name, _ := attrName(tr, 1)
	if tr.RootName() == "stage" {
		if t, ok := m.stages[name]; ok {
			return []*Stage{t}, nil
		}
		if m.unknownKind[name] {
			return nil, nil
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Reference to an unknown stage", Detail: unknownStageDetail(name, g, m), Subject: tr.SourceRange().Ptr()}}
	}
	c, ok := m.children[name]
	if !ok {
		names := make([]string, len(m.Modules))
		for i, c := range m.Modules {
			names[i] = c.Name
		}
		return nil, hcl.Diagnostics{unknownName(tr, "module", name, names)}
	}
	var out []*Stage
	var walk func(c *Module)
	walk = func(c *Module) {
		out = append(out, c.Stages...)
		for _, cc := range c.Modules {
			walk(cc)
		}
	}
	walk(c)
	return out, nil
}

func (g *Graph) decodeVerdicts(attr *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	exprs, d := hcl.ExprList(attr.Expr)
	diags = append(diags, d...)
	seen := map[*Stage]bool{}
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		// stage.NAME, or a module's stage by its address:
		// module.A.stage.NAME, module.A.module.B.stage.NAME.
		m := g.Root
		for len(tr) >= 4 && tr.RootName() == "module" && !d.HasErrors() {
			cname, _ := attrName(tr, 1)
			c, ok := m.children[cname]
			if !ok {
				break
			}
			m = c
			rest := hcl.Traversal{hcl.TraverseRoot{Name: "stage", SrcRange: tr[2].SourceRange()}}
			if kw, ok := attrName(tr, 2); ok && kw == "module" {
				rest[0] = hcl.TraverseRoot{Name: "module", SrcRange: tr[2].SourceRange()}
			}
			tr = append(rest, tr[3:]...)
		}
		name, ok := attrName(tr, 1)
		if d.HasErrors() || tr.RootName() != "stage" || len(tr) != 2 || !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid verdict entry",
				Detail:   "Each verdicts entry is a stage reference: stage.<name>, or module.<module>.stage.<name> for a module's.",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		s, ok := m.stages[name]
		if !ok && m.unknownKind[name] {
			continue
		}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Verdict entry is not a stage",
				Detail:   unknownStageDetail(name, g, m),
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		if seen[s] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate verdict entry",
				Detail:   fmt.Sprintf("Stage %q is listed in verdicts more than once.", name),
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		seen[s] = true
		g.Verdicts = append(g.Verdicts, s)
	}
	return diags
}

// typeCheck decodes every stage body against its kind's schema with stage
// outputs as unknown values of their declared types, so a wrong type is
// reported before anything runs.
func (g *Graph) typeCheck() hcl.Diagnostics {
	ctxs, diags := g.validationContexts()
	if diags.HasErrors() {
		return diags
	}
	diags = append(diags, g.checkModules(ctxs)...)
	// The contexts are only read while evaluating, so stages share them.
	stageDiags := make([]hcl.Diagnostics, len(g.Stages))
	parallelFor(len(g.Stages), func(i int) {
		s := g.Stages[i]
		ctx := ctxs[s.Module]
		if s.ForEach != nil {
			stageDiags[i] = checkForEach(s.ForEach, ctx)
			ctx = eachContext(ctx)
		}
		stageDiags[i] = append(stageDiags[i], s.checkConfig(ctx)...)
	})
	for _, d := range stageDiags {
		diags = append(diags, d...)
	}
	return diags
}

func (m *Module) checkInputRef(tr hcl.Traversal) hcl.Diagnostics {
	name, ok := attrName(tr, 1)
	if !ok {
		return hcl.Diagnostics{badRef(tr, "An input is referred to as input.<name>.")}
	}
	if _, ok := m.inputs[name]; ok {
		return nil
	}
	names := make([]string, len(m.Inputs))
	for i, in := range m.Inputs {
		names[i] = in.Name
	}
	return hcl.Diagnostics{unknownName(tr, "input", name, names)}
}

func hasOutput(k stage.Kind, name string) bool {
	for _, o := range k.Outputs() {
		if o.Name == name {
			return true
		}
	}
	return false
}

func outputList(k stage.Kind) string {
	outs := k.Outputs()
	if len(outs) == 0 {
		return "none"
	}
	names := make([]string, len(outs))
	for i, o := range outs {
		names[i] = o.Name
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func attrName(tr hcl.Traversal, i int) (string, bool) {
	if len(tr) <= i {
		return "", false
	}
	switch step := tr[i].(type) {
	case hcl.TraverseAttr:
		return step.Name, true
	case hcl.TraverseIndex:
		if step.Key.Type() == cty.String && step.Key.IsKnown() && !step.Key.IsNull() {
			return step.Key.AsString(), true
		}
	}
	return "", false
}

func unknownStageDetail(name string, g *Graph, m *Module) string {
	names := make([]string, 0, len(m.stages))
	for n := range m.stages {
		names = append(names, n)
	}
	sort.Strings(names)
	detail := fmt.Sprintf("There is no stage named %q in pipeline %q.", name, g.Name)
	if m.Addr != "" {
		detail = fmt.Sprintf("There is no stage named %q in %s (%s).", name, m.Addr, m.Source)
	}
	if s := suggest(name, names); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	return detail
}

func unknownName(tr hcl.Traversal, what, name string, available []string) *hcl.Diagnostic {
	detail := fmt.Sprintf("There is no %s named %q.", what, name)
	if s := suggest(name, available); s != "" {
		detail += fmt.Sprintf(" Did you mean %q?", s)
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Reference to an undeclared " + what,
		Detail:   detail,
		Subject:  tr.SourceRange().Ptr(),
	}
}

func unknownVariable(tr hcl.Traversal) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unknown variable",
		Detail:   fmt.Sprintf("There is no variable named %q. Expressions can refer to input.<name>, local.<name>, stage.<name>.<output>, module.<name>.<output> and, under for_each, each.key and each.value.", tr.RootName()),
		Subject:  tr.SourceRange().Ptr(),
	}
}

func badRef(tr hcl.Traversal, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid reference", Detail: detail, Subject: tr.SourceRange().Ptr()}
}

func dupDiag(what, name string, prev, at hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Duplicate " + what + " name",
		Detail:   fmt.Sprintf("A %s named %q was already declared at %s; names must be unique within a pipeline.", what, name, fmtPos(prev)),
		Subject:  at.Ptr(),
	}
}

func typeDiag(r hcl.Range, attr, want string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Incorrect attribute value type",
		Detail:   fmt.Sprintf("%s must be %s.", attr, want),
		Subject:  r.Ptr(),
	}
}

func fmtPos(r hcl.Range) string { return diag.Pos(r) }

func sortDiags(diags hcl.Diagnostics) hcl.Diagnostics { return diag.Sort(diags) }

func suggest(s string, candidates []string) string { return diag.Suggest(s, candidates) }
