package graph

import (
	"fmt"
	"path/filepath"
	"slices"
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
		{Type: "module", LabelNames: []string{"name"}},
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
	{Name: "for_each", Type: cty.DynamicPseudoType, Doc: "run the stage once per key of a map, or per element of a list of strings; each.key and each.value inside, instances addressed stage.NAME[\"KEY\"]"},
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
	return ParseWith(src, filename, dir, Options{Kinds: reg})
}

// Options are what parsing needs besides the file: the stage kinds, and
// where module sources are found.
type Options struct {
	Kinds *stage.Registry
	// Builtin returns the files of a built-in module (`source =
	// "builtin:NAME"`); nil means there are none.
	Builtin func(name string) ([]ModuleFile, bool)
	// SourceDir is the directory relative module sources of the pipeline
	// file resolve against: the file's own directory; empty means dir.
	SourceDir string
}

// ParseWith is Parse with modules: opts says where their sources are.
func ParseWith(src []byte, filename, dir string, opts Options) ([]*Graph, map[string]*hcl.File, hcl.Diagnostics) {
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
		g, d := decodePipeline(blk, filename, dir, opts)
		diags = append(diags, d...)
		if g != nil {
			for name, f := range g.Files {
				files[name] = f
			}
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

func decodePipeline(blk *hcl.Block, filename, dir string, opts Options) (*Graph, hcl.Diagnostics) {
	g := newGraph(blk.Labels[0], filename, dir, opts)
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
	return g.build(content.Blocks, content.Attributes["verdicts"], diags)
}

func newGraph(name, filename, dir string, opts Options) *Graph {
	g := &Graph{Name: name, File: filename, Dir: dir, byName: map[string]*Stage{}, Files: map[string]*hcl.File{}, opts: opts}
	g.funcs = newFuncTable(dir)
	g.Root = newModule("", nil, filename, opts.SourceDir)
	if opts.SourceDir == "" {
		g.Root.dir = dir
	}
	return g
}

// build decodes the pipeline's (or a module file's) blocks into g and
// checks everything: references, verdicts, cycles, types.
func (g *Graph) build(blocks []*hcl.Block, verdicts *hcl.Attribute, diags hcl.Diagnostics) (*Graph, hcl.Diagnostics) {
	diags = append(diags, g.decodeScope(g.Root, blocks, newSchemaCache(), nil)...)
	g.Inputs, g.Locals = g.Root.Inputs, g.Root.Locals

	// References are resolved once every stage is known, so a stage may
	// refer to one declared after it. Module values (inputs, locals,
	// outputs) are resolved first, in one pass, so stages read them only.
	diags = append(diags, g.resolveModuleValues()...)
	resolveDiags := make([]hcl.Diagnostics, len(g.Stages))
	parallelFor(len(g.Stages), func(i int) { resolveDiags[i] = g.resolveStage(g.Stages[i]) })
	for _, d := range resolveDiags {
		diags = append(diags, d...)
	}
	if verdicts != nil {
		diags = append(diags, g.decodeVerdicts(verdicts)...)
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

// IsModuleFile reports whether src holds a module (top-level input,
// stage, module or output blocks) rather than pipelines.
func IsModuleFile(src []byte, filename string) bool {
	f, diags := diag.ParseConfig(src, filename, hcl.InitialPos) // the nesting bound first
	if diags.HasErrors() {
		return false
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return false
	}
	found := false
	for _, b := range body.Blocks {
		switch b.Type {
		case "pipeline":
			return false
		case "input", "locals", "stage", "module", "output":
			found = true
		}
	}
	return found
}

// ParseModule validates a module file on its own, as piship validate does
// with one: its inputs are unknown values of their types, as a pipeline's
// are when it is validated.
func ParseModule(src []byte, filename, dir string, opts Options) (*Graph, map[string]*hcl.File, hcl.Diagnostics) {
	file, diags := parseConfig(src, filename)
	files := map[string]*hcl.File{filename: file}
	if diags.HasErrors() {
		return nil, files, sortDiags(diags)
	}
	content, d := file.Body.Content(moduleFileSchema)
	diags = append(diags, d...)
	g := newGraph(filepath.Base(filename), filename, dir, opts)
	g.Files[filename] = file
	g, d = g.build(content.Blocks, nil, diags)
	if g != nil {
		for name, f := range g.Files {
			files[name] = f
		}
		g.Files = files
	}
	return g, files, sortDiags(d)
}

// decodeScope decodes the blocks of the pipeline or of one module into m:
// inputs, locals, outputs, and, in declaration order, its stages and the
// stages of the modules it calls (appended to g.Stages, so a module's
// stages take the place of its call in declaration order).
func (g *Graph) decodeScope(m *Module, blocks []*hcl.Block, schemas *schemaCache, calls []string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var localBlocks, stageBlocks []*hcl.Block
	for _, b := range blocks {
		switch b.Type {
		case "input":
			in, d := decodeInput(b)
			diags = append(diags, d...)
			if prev, dup := m.inputs[in.Name]; dup {
				diags = append(diags, dupDiag("input", in.Name, prev.DeclRange, b.LabelRanges[0]))
				continue
			}
			m.inputs[in.Name] = in
			m.Inputs = append(m.Inputs, in)
		case "locals":
			localBlocks = append(localBlocks, b)
		case "stage":
			stageBlocks = append(stageBlocks, b)
		case "output":
			o, d := decodeOutput(b)
			diags = append(diags, d...)
			if o == nil {
				continue
			}
			if prev, dup := m.outputs[o.Name]; dup {
				diags = append(diags, dupDiag("output", o.Name, prev.DeclRange, b.LabelRanges[0]))
				continue
			}
			m.outputs[o.Name] = o
			m.Outputs = append(m.Outputs, o)
		}
	}
	locals, d := g.decodeLocals(m, localBlocks)
	diags = append(diags, d...)
	m.Locals = locals

	// Each stage decodes independently; thousands of them are spread over
	// the CPUs, then names are checked in declaration order.
	decoded := make([]*Stage, len(stageBlocks))
	stageDiags := make([]hcl.Diagnostics, len(stageBlocks))
	parallelFor(len(stageBlocks), func(i int) {
		decoded[i], stageDiags[i] = g.decodeStage(stageBlocks[i], g.opts.Kinds, schemas)
	})
	next := 0
	for _, b := range blocks {
		switch b.Type {
		case "stage":
			i := next
			next++
			s, d := decoded[i], stageDiags[i]
			diags = append(diags, d...)
			if s == nil {
				// Its kind is unknown: the stage still exists for the
				// references to it (with outputs of any name), so the one
				// diagnostic is the unknown kind with its did-you-mean.
				m.unknownKind[b.Labels[1]] = true
				continue
			}
			if prev, dup := m.stages[s.LocalName]; dup {
				diags = append(diags, dupDiag("stage", s.LocalName, prev.DeclRange, b.LabelRanges[1]))
				continue
			}
			s.Module = m
			s.Index = len(g.Stages)
			if m.Addr != "" {
				s.Name = m.Addr + ".stage." + s.LocalName
			}
			s.Addr = stageAddr(m.Addr, s.LocalName)
			g.Stages = append(g.Stages, s)
			g.byName[s.Name] = s
			m.stages[s.LocalName] = s
			m.Stages = append(m.Stages, s)
		case "module":
			diags = append(diags, g.decodeModuleCall(m, b, schemas, calls)...)
		}
	}
	return diags
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
func (g *Graph) decodeLocals(m *Module, blocks []*hcl.Block) ([]*Local, hcl.Diagnostics) {
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
			m.locals[n] = l
			all = append(all, l)
		}
	}
	deps := map[*Local][]*Local{}
	for _, l := range all {
		for _, tr := range l.Expr.Variables() {
			switch tr.RootName() {
			case "input":
				diags = append(diags, m.checkInputRef(tr)...)
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
			case "stage", "module", "each":
				diags = append(diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Stage reference in a local value",
					Detail:   "Local values are computed from inputs and other locals only. Move the expression into the stage that needs it, or into a module's output.",
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
	s := &Stage{KindName: kindName, Name: name, LocalName: name, Kind: kind, kindAttrs: sch.attrs, Body: b.Body, DeclRange: b.DefRange}
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
	if attr, ok := meta["for_each"]; ok {
		s.ForEach = attr.Expr
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
		trs, d := dependsOnList(attr.Expr, "Each depends_on entry is a stage reference, stage.<name>; or module.<name> (its every stage); or, in a module, input.<name> (every stage its argument refers to).", "stage", "module", "input")
		diags = append(diags, d...)
		for _, tr := range trs {
			// Resolved with the data references in resolveStage, once
			// every stage is known.
			name, _ := attrName(tr, 1)
			s.dependsOn = append(s.dependsOn, pendingDep{root: tr.RootName(), name: name, rng: tr.SourceRange(), tr: tr})
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

// dependsOnList reads a depends_on list: ROOT.NAME entries whose root is
// one of roots; detail words the rule for an entry that breaks it.
func dependsOnList(expr hcl.Expression, detail string, roots ...string) ([]hcl.Traversal, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(expr)
	var out []hcl.Traversal
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() || len(tr) != 2 || !slices.Contains(roots, tr.RootName()) {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on entry", Detail: detail, Subject: e.Range().Ptr()})
			continue
		}
		out = append(out, tr)
	}
	return out, diags
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
