package graph

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
)

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "pipeline", LabelNames: []string{"name"}}},
}

var pipelineSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "description"}, {Name: "verdicts"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "input", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "stage", LabelNames: []string{"kind", "name"}},
	},
}

var inputSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "description"}},
}

// MetaAttrs are the attributes every stage takes whatever its kind: the
// graph's meta-arguments, not the kind's configuration. `piship stages
// KIND` lists them with the kind's own.
var MetaAttrs = []stage.Attr{
	{Name: "always", Type: cty.Bool, Doc: "run even after a failure or Ctrl-C (cleanup); outputs of a stage that failed or did not run are unknown to it, and attributes that need them are left unset"},
	{Name: "depends_on", Type: cty.List(cty.DynamicPseudoType), Doc: "stages that must finish first, without reading their outputs: [stage.a, ...]"},
	{Name: "when", Type: cty.Bool, Doc: "condition evaluated when the stage is ready; false skips it (its outputs are null to the stages after it)"},
}

var metaSchema = func() *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, a := range MetaAttrs {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: a.Name})
	}
	return s
}()

// isMeta reports whether name is one of MetaAttrs.
func isMeta(name string) bool {
	for _, a := range MetaAttrs {
		if a.Name == name {
			return true
		}
	}
	return false
}

// Parse validates every pipeline in src. filename names the file in
// diagnostics; dir is where relative paths (file(), abspath(), stage paths)
// resolve.
func Parse(src []byte, filename, dir string, reg *stage.Registry) ([]*Graph, map[string]*hcl.File, hcl.Diagnostics) {
	file, diags := parseConfig(src, filename)
	files := map[string]*hcl.File{filename: file}
	if diags.HasErrors() {
		return nil, files, sortDiags(diags)
	}
	content, d := file.Body.Content(fileSchema)
	diags = append(diags, d...)
	var graphs []*Graph
	seen := map[string]hcl.Range{}
	for _, blk := range content.Blocks {
		name := blk.Labels[0]
		if prev, dup := seen[name]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate pipeline name",
				Detail:   fmt.Sprintf("A pipeline named %q was already declared at %s.", name, fmtPos(prev)),
				Subject:  blk.LabelRanges[0].Ptr(),
			})
			continue
		}
		seen[name] = blk.DefRange
		g, d := decodePipeline(blk, filename, dir, reg)
		diags = append(diags, d...)
		if g != nil {
			g.Files = files
			graphs = append(graphs, g)
		}
	}
	if len(content.Blocks) == 0 && !diags.HasErrors() {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No pipeline in file",
			Detail:   `The file declares no pipeline "<name>" { ... } block.`,
			Subject:  file.Body.MissingItemRange().Ptr(),
		})
	}
	if diags.HasErrors() {
		return nil, files, sortDiags(diags)
	}
	return graphs, files, sortDiags(diags)
}

func decodePipeline(blk *hcl.Block, filename, dir string, reg *stage.Registry) (*Graph, hcl.Diagnostics) {
	g := &Graph{Name: blk.Labels[0], File: filename, Dir: dir, byName: map[string]*Stage{}, unknownKind: map[string]bool{}}
	g.funcs = newFuncTable(dir)
	content, diags := blk.Body.Content(pipelineSchema)

	if attr, ok := content.Attributes["description"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type() != cty.String || v.IsNull() {
				diags = append(diags, typeDiag(attr.Expr.Range(), "description", "a string"))
			} else {
				g.Description = v.AsString()
			}
		}
	}

	inputNames := map[string]hcl.Range{}
	var localBlocks []*hcl.Block
	for _, b := range content.Blocks {
		switch b.Type {
		case "input":
			in, d := decodeInput(b)
			diags = append(diags, d...)
			if prev, dup := inputNames[in.Name]; dup {
				diags = append(diags, dupDiag("input", in.Name, prev, b.LabelRanges[0]))
				continue
			}
			inputNames[in.Name] = b.DefRange
			g.Inputs = append(g.Inputs, in)
		case "locals":
			localBlocks = append(localBlocks, b)
		}
	}

	locals, d := g.decodeLocals(localBlocks)
	diags = append(diags, d...)
	g.Locals = locals

	var stageBlocks []*hcl.Block
	for _, b := range content.Blocks {
		if b.Type == "stage" {
			stageBlocks = append(stageBlocks, b)
		}
	}
	// Each stage decodes independently; thousands of them are spread over
	// the CPUs, then names are checked in declaration order.
	decoded := make([]*Stage, len(stageBlocks))
	stageDiags := make([]hcl.Diagnostics, len(stageBlocks))
	schemas := newSchemaCache()
	parallelFor(len(stageBlocks), func(i int) {
		decoded[i], stageDiags[i] = g.decodeStage(stageBlocks[i], reg, schemas)
	})
	for i, b := range stageBlocks {
		s, d := decoded[i], stageDiags[i]
		diags = append(diags, d...)
		if s == nil {
			// Its kind is unknown: the stage still exists for the
			// references to it (with outputs of any name), so the one
			// diagnostic is the unknown kind with its did-you-mean.
			g.unknownKind[b.Labels[1]] = true
			continue
		}
		if prev, dup := g.byName[s.Name]; dup {
			diags = append(diags, dupDiag("stage", s.Name, prev.DeclRange, b.LabelRanges[1]))
			continue
		}
		s.Index = len(g.Stages)
		g.Stages = append(g.Stages, s)
		g.byName[s.Name] = s
	}

	// References are resolved once every stage is known, so a stage may
	// refer to one declared after it.
	resolveDiags := make([]hcl.Diagnostics, len(g.Stages))
	parallelFor(len(g.Stages), func(i int) { resolveDiags[i] = g.resolveStage(g.Stages[i]) })
	for _, d := range resolveDiags {
		diags = append(diags, d...)
	}
	if attr, ok := content.Attributes["verdicts"]; ok {
		diags = append(diags, g.decodeVerdicts(attr)...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	g.link()
	if d := g.checkCycles(); d.HasErrors() {
		return nil, d
	}
	diags = append(diags, g.typeCheck()...)
	if diags.HasErrors() {
		return nil, diags
	}
	inVerdicts := map[*Stage]bool{}
	for _, s := range g.Verdicts {
		inVerdicts[s] = true
	}
	g.VerdictOrder = append(g.VerdictOrder, g.Verdicts...)
	for _, s := range g.Stages {
		if !inVerdicts[s] {
			g.VerdictOrder = append(g.VerdictOrder, s)
		}
	}
	return g, diags
}

func decodeInput(b *hcl.Block) (*Input, hcl.Diagnostics) {
	in := &Input{Name: b.Labels[0], Type: cty.DynamicPseudoType, DeclRange: b.DefRange}
	content, diags := b.Body.Content(inputSchema)
	if attr, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(attr.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			in.Type = ty
		}
	}
	if attr, ok := content.Attributes["description"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() && v.Type() == cty.String && !v.IsNull() {
			in.Description = v.AsString()
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			cv, err := convert.Convert(v, in.Type)
			if err != nil {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid default value",
					Detail:   fmt.Sprintf("The default of input %q does not match its type %s: %v.", in.Name, typeexpr.TypeString(in.Type), err),
					Subject:  attr.Expr.Range().Ptr(),
				})
			} else {
				in.Default = cv
			}
		}
	}
	return in, diags
}

// decodeLocals collects local values and orders them so each follows the
// locals it refers to; locals may refer to inputs and other locals only.
func (g *Graph) decodeLocals(blocks []*hcl.Block) ([]*Local, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	byName := map[string]*Local{}
	var all []*Local
	for _, b := range blocks {
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		names := make([]string, 0, len(attrs))
		for n := range attrs {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return attrs[names[i]].Range.Start.Byte < attrs[names[j]].Range.Start.Byte })
		for _, n := range names {
			a := attrs[n]
			if prev, dup := byName[n]; dup {
				diags = append(diags, dupDiag("local", n, prev.Range, a.NameRange))
				continue
			}
			l := &Local{Name: n, Expr: a.Expr, Range: a.Range}
			byName[n] = l
			all = append(all, l)
		}
	}
	deps := map[*Local][]*Local{}
	for _, l := range all {
		for _, tr := range l.Expr.Variables() {
			switch tr.RootName() {
			case "input":
				diags = append(diags, g.checkInputRef(tr)...)
			case "local":
				name, ok := attrName(tr, 1)
				if !ok {
					diags = append(diags, badRef(tr, "A local value is referred to as local.<name>."))
					continue
				}
				dep, ok := byName[name]
				if !ok {
					diags = append(diags, unknownName(tr, "local value", name, localNames(all)))
					continue
				}
				deps[l] = append(deps[l], dep)
			case "stage":
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Stage reference in a local value",
					Detail:   "Local values are computed before any stage runs, so they can refer to inputs and other locals only. Move the expression into the stage that needs it.",
					Subject:  tr.SourceRange().Ptr(),
				})
			default:
				diags = append(diags, unknownVariable(tr))
			}
		}
	}
	// Kahn's algorithm in declaration order keeps the evaluation order stable.
	var ordered []*Local
	done := map[*Local]bool{}
	for len(ordered) < len(all) {
		progress := false
		for _, l := range all {
			if done[l] {
				continue
			}
			ready := true
			for _, d := range deps[l] {
				if !done[d] {
					ready = false
					break
				}
			}
			if ready {
				done[l] = true
				ordered = append(ordered, l)
				progress = true
			}
		}
		if !progress {
			var names []string
			var first *Local
			for _, l := range all {
				if !done[l] {
					names = append(names, "local."+l.Name+" ("+fmtPos(l.Range)+")")
					if first == nil {
						first = l
					}
				}
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cycle between local values",
				Detail:   "These local values refer to each other: " + strings.Join(names, ", ") + ".",
				Subject:  first.Range.Ptr(),
			})
			break
		}
	}
	return ordered, diags
}

func localNames(ls []*Local) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Name
	}
	return out
}

func (g *Graph) decodeStage(b *hcl.Block, reg *stage.Registry, schemas *schemaCache) (*Stage, hcl.Diagnostics) {
	kindName, name := b.Labels[0], b.Labels[1]
	var diags hcl.Diagnostics
	if !hclsyntax.ValidIdentifier(name) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid stage name",
			Detail:   fmt.Sprintf("%q is not a valid stage name: use letters, digits, underscores and dashes, starting with a letter, so it can be referred to as stage.<name>.", name),
			Subject:  b.LabelRanges[1].Ptr(),
		})
	}
	kind, ok := reg.Lookup(kindName)
	if !ok {
		detail := fmt.Sprintf("There is no stage kind %q.", kindName)
		if s := suggest(kindName, reg.Names()); s != "" {
			detail += fmt.Sprintf(" Did you mean %q?", s)
		}
		detail += " Run `piship stages` to list the kinds."
		return nil, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Unknown stage kind",
			Detail:   detail,
			Subject:  b.LabelRanges[0].Ptr(),
		})
	}
	sch := schemas.get(kind)
	s := &Stage{KindName: kindName, Name: name, Kind: kind, kindAttrs: sch.attrs, Body: b.Body, DeclRange: b.DefRange}
	meta, attrs, fast := fastContent(b.Body, sch)
	var remain hcl.Body
	if !fast {
		var metaContent *hcl.BodyContent
		var d hcl.Diagnostics
		metaContent, remain, d = b.Body.PartialContent(metaSchema)
		diags = append(diags, d...)
		meta = metaContent.Attributes
	}
	if attr, ok := meta["when"]; ok {
		s.When = attr.Expr
	}
	if attr, ok := meta["always"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type() != cty.Bool || v.IsNull() {
				diags = append(diags, typeDiag(attr.Expr.Range(), "always", "true or false"))
			} else {
				s.Always = v.True()
			}
		}
	}
	if attr, ok := meta["depends_on"]; ok {
		exprs, d := hcl.ExprList(attr.Expr)
		diags = append(diags, d...)
		for _, e := range exprs {
			tr, d := hcl.AbsTraversalForExpr(e)
			if d.HasErrors() || tr.RootName() != "stage" || len(tr) != 2 {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Invalid depends_on entry",
					Detail:   "Each depends_on entry is a stage reference: stage.<name>.",
					Subject:  e.Range().Ptr(),
				})
				continue
			}
			// Resolved with the data references in resolveStage, once
			// every stage is known.
			name, _ := attrName(tr, 1)
			s.dependsOn = append(s.dependsOn, pendingDep{name: name, rng: tr.SourceRange()})
		}
	}
	if fast {
		s.attrs = attrs
		return s, diags
	}
	// Unknown and missing attributes are reported here, with their ranges.
	content, d := remain.Content(sch.body)
	if content != nil {
		s.attrs = content.Attributes
	}
	names := make([]string, 0, len(sch.attrs)+len(MetaAttrs))
	for _, a := range sch.attrs {
		names = append(names, a.Name)
	}
	for _, a := range MetaAttrs {
		names = append(names, a.Name)
	}
	diag.ImproveUnsupported(d, fmt.Sprintf("Kind %s (see `piship stages %s`)", kindName, kindName), names, nil)
	diags = append(diags, d...)
	return s, diags
}

// fastContent splits a native-syntax stage body into meta-arguments and
// kind attributes without copying it, when it holds nothing to complain
// about (no blocks, no unknown attribute, every required one present).
// Otherwise ok is false and the caller takes hcl's path, which words the
// diagnostics.
func fastContent(body hcl.Body, sch *kindSchema) (meta, attrs hcl.Attributes, ok bool) {
	sb, isSyntax := body.(*hclsyntax.Body)
	if !isSyntax || len(sb.Blocks) > 0 {
		return nil, nil, false
	}
	attrs = make(hcl.Attributes, len(sb.Attributes))
	for name, a := range sb.Attributes {
		switch {
		case isMeta(name):
			if meta == nil {
				meta = hcl.Attributes{}
			}
			meta[name] = a.AsHCLAttribute()
		case sch.known[name]:
			attrs[name] = a.AsHCLAttribute()
		default:
			return nil, nil, false
		}
	}
	for _, name := range sch.required {
		if _, ok := attrs[name]; !ok {
			return nil, nil, false
		}
	}
	return meta, attrs, true
}

// resolveStage turns the stage's references into edges and reports those
// that name nothing.
func (g *Graph) resolveStage(s *Stage) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, p := range s.dependsOn {
		target, ok := g.byName[p.name]
		if !ok && g.unknownKind[p.name] {
			continue
		}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Reference to an unknown stage",
				Detail:   unknownStageDetail(p.name, g),
				Subject:  p.rng.Ptr(),
			})
			continue
		}
		s.Deps = append(s.Deps, &Edge{From: target, To: s, Range: p.rng})
	}
	for _, tr := range s.variables() {
		switch tr.RootName() {
		case "input":
			diags = append(diags, g.checkInputRef(tr)...)
		case "local":
			name, ok := attrName(tr, 1)
			if !ok {
				diags = append(diags, badRef(tr, "A local value is referred to as local.<name>."))
				continue
			}
			if !g.hasLocal(name) {
				diags = append(diags, unknownName(tr, "local value", name, localNames(g.Locals)))
			}
		case "stage":
			name, ok := attrName(tr, 1)
			if !ok {
				diags = append(diags, badRef(tr, "A stage output is referred to as stage.<name>.<output>."))
				continue
			}
			target, ok := g.byName[name]
			if !ok && g.unknownKind[name] {
				continue
			}
			if !ok {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Reference to an unknown stage",
					Detail:   unknownStageDetail(name, g),
					Subject:  tr.SourceRange().Ptr(),
				})
				continue
			}
			out, ok := attrName(tr, 2)
			if !ok {
				diags = append(diags, badRef(tr, fmt.Sprintf("Refer to one output of stage %q: stage.%s.<output>; it has %s.", name, name, outputList(target.Kind))))
				continue
			}
			if !hasOutput(target.Kind, out) {
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Reference to an undeclared output",
					Detail:   fmt.Sprintf("Stage %q (kind %s) has no output %q. Available outputs: %s.", name, target.KindName, out, outputList(target.Kind)),
					Subject:  tr.SourceRange().Ptr(),
				})
				continue
			}
			s.Deps = append(s.Deps, &Edge{From: target, To: s, Range: tr.SourceRange(), Data: true, Output: out})
		default:
			diags = append(diags, unknownVariable(tr))
		}
	}
	return diags
}

func (g *Graph) decodeVerdicts(attr *hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	exprs, d := hcl.ExprList(attr.Expr)
	diags = append(diags, d...)
	seen := map[*Stage]bool{}
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		name, ok := attrName(tr, 1)
		if d.HasErrors() || tr.RootName() != "stage" || len(tr) != 2 || !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid verdict entry",
				Detail:   "Each verdicts entry is a stage reference: stage.<name>.",
				Subject:  e.Range().Ptr(),
			})
			continue
		}
		s, ok := g.byName[name]
		if !ok && g.unknownKind[name] {
			continue
		}
		if !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Verdict entry is not a stage",
				Detail:   unknownStageDetail(name, g),
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
	ctx, diags := g.validationContext()
	if diags.HasErrors() {
		return diags
	}
	// The context is only read while evaluating, so stages share it.
	stageDiags := make([]hcl.Diagnostics, len(g.Stages))
	parallelFor(len(g.Stages), func(i int) { stageDiags[i] = g.Stages[i].checkConfig(ctx) })
	for _, d := range stageDiags {
		diags = append(diags, d...)
	}
	return diags
}

func (g *Graph) hasLocal(name string) bool {
	for _, l := range g.Locals {
		if l.Name == name {
			return true
		}
	}
	return false
}

func (g *Graph) checkInputRef(tr hcl.Traversal) hcl.Diagnostics {
	name, ok := attrName(tr, 1)
	if !ok {
		return hcl.Diagnostics{badRef(tr, "An input is referred to as input.<name>.")}
	}
	for _, in := range g.Inputs {
		if in.Name == name {
			return nil
		}
	}
	names := make([]string, len(g.Inputs))
	for i, in := range g.Inputs {
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

func unknownStageDetail(name string, g *Graph) string {
	names := make([]string, 0, len(g.byName))
	for n := range g.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	detail := fmt.Sprintf("There is no stage named %q in pipeline %q.", name, g.Name)
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
		Detail:   fmt.Sprintf("There is no variable named %q. Expressions can refer to input.<name>, local.<name> and stage.<name>.<output>.", tr.RootName()),
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
