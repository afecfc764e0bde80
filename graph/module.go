package graph

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// A module is a file, or a directory of .hcl files, of top-level input,
// locals, stage, module and output blocks. A pipeline (or another module)
// calls it:
//
//	module "payload" {
//	  source   = "./payload.hcl"   // or a directory, or "builtin:NAME"
//	  for_each = ...               // optional: one instance per key
//	  depends_on = [stage.x]       // optional: every stage inside waits
//	  dir      = input.dir         // one argument per input of the module
//	}
//
// and reads what its output blocks give as module.payload.<output>. The
// stages inside keep their own spans and cache keys; they are addressed
//
//	module.payload.stage.bundle
//	module.targets["linux-x64"].stage.npm_install
//
// while a stage of the pipeline itself keeps its name (bundle, and
// sign["key"] for an instance of a for_each stage). Addresses are how
// progress, errors, the timing JSON, explain and spans name them.

// moduleFileSchema is what a module file holds.
var moduleFileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "input", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "stage", LabelNames: []string{"kind", "name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "output", LabelNames: []string{"name"}},
	},
}

var outputSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "value", Required: true}, {Name: "description"}},
}

// maxModuleDepth bounds how deeply module calls nest, so a module that
// calls itself through another is refused instead of recursing forever.
const maxModuleDepth = 32

// ModuleFile is one file of a module's source.
type ModuleFile struct {
	Name string // shown in diagnostics
	Src  []byte
}

// Module is a scope of names: the pipeline itself (Root, Addr "") or one
// module call. Stages see input, local, stage and module names of their
// own module only.
type Module struct {
	// Name is the call's label; Addr the module's address without
	// instance keys ("module.a.module.b"); Source the call's source.
	Name, Addr, Source string
	Parent             *Module
	Call               *ModuleCall // nil for the pipeline itself
	// Expands is true when the module or one that calls it has for_each:
	// its stages then run once per instance.
	Expands bool

	Inputs  []*Input
	Locals  []*Local
	Outputs []*Output
	Stages  []*Stage  // its own, in declaration order
	Modules []*Module // the modules it calls, in declaration order

	// dir is where the module's own module sources resolve.
	dir         string
	inputs      map[string]*Input
	locals      map[string]*Local
	outputs     map[string]*Output
	stages      map[string]*Stage
	children    map[string]*Module
	unknownKind map[string]bool
}

// ModuleCall is a module block.
type ModuleCall struct {
	Source string
	// Args are the input values given, by input name.
	Args    map[string]*hcl.Attribute
	ForEach hcl.Expression
	// DependsOn are stage.NAME and module.NAME entries, in the caller's
	// scope, that every stage of the module waits for.
	DependsOn []hcl.Traversal
	DeclRange hcl.Range
}

// Output is an output block of a module.
type Output struct {
	Name        string
	Expr        hcl.Expression
	Description string
	DeclRange   hcl.Range
}

func newModule(name string, parent *Module, source, dir string) *Module {
	m := &Module{Name: name, Parent: parent, Source: source, dir: dir,
		inputs: map[string]*Input{}, locals: map[string]*Local{}, outputs: map[string]*Output{},
		stages: map[string]*Stage{}, children: map[string]*Module{}, unknownKind: map[string]bool{}}
	if parent != nil {
		m.Addr = "module." + name
		if parent.Addr != "" {
			m.Addr = parent.Addr + "." + m.Addr
		}
		m.Expands = parent.Expands
	}
	return m
}

// stageAddr is a stage's address: stage.NAME in the pipeline,
// MODULE.stage.NAME in a module.
func stageAddr(moduleAddr, name string) string {
	if moduleAddr == "" {
		return "stage." + name
	}
	return moduleAddr + ".stage." + name
}

// keyText is an instance key as an address writes it: ["linux-x64"].
func keyText(key string) string {
	return "[" + strconv.Quote(key) + "]" // as %q writes it, without fmt: a for_each makes thousands
}

// decodeModuleCall decodes a module block of m, loads its source and
// decodes the module's blocks.
func (g *Graph) decodeModuleCall(m *Module, b *hcl.Block, schemas *schemaCache, calls []string) hcl.Diagnostics {
	name := b.Labels[0]
	var diags hcl.Diagnostics
	if prev, dup := m.children[name]; dup {
		return hcl.Diagnostics{dupDiag("module", name, prev.Call.DeclRange, b.LabelRanges[0])}
	}
	attrs, d := b.Body.JustAttributes()
	if d.HasErrors() {
		return d
	}
	call := &ModuleCall{Args: map[string]*hcl.Attribute{}, DeclRange: b.DefRange}
	for n, a := range attrs {
		switch n {
		case "source":
			v, d := a.Expr.Value(nil)
			if d.HasErrors() || v.Type() != cty.String || v.IsNull() {
				diags = append(diags, typeDiag(a.Expr.Range(), "source", `a string written as is: a file or directory relative to this file, or "builtin:NAME"`))
				continue
			}
			call.Source = v.AsString()
		case "for_each":
			call.ForEach = a.Expr
		case "depends_on":
			trs, d := dependsOnList(a.Expr, "Each depends_on entry of a module call is a stage or a module: stage.<name> or module.<name>.", "stage", "module")
			diags = append(diags, d...)
			call.DependsOn = append(call.DependsOn, trs...)
		case "when", "always":
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported argument",
				Detail:   fmt.Sprintf("A module call takes source, for_each, depends_on and the module's inputs; %s belongs on the stages inside it.", n),
				Subject:  a.NameRange.Ptr(),
			})
		default:
			call.Args[n] = a
		}
	}
	if call.Source == "" {
		if !diags.HasErrors() {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing module source",
				Detail:   `A module call needs source = "<file or directory>" (relative to this file) or source = "builtin:NAME" (piship pipelines lists them).`,
				Subject:  b.DefRange.Ptr(),
			})
		}
		return diags
	}
	if len(calls) >= maxModuleDepth || containsString(calls, call.Source) {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Module calls itself",
			Detail:   fmt.Sprintf("Module %q (%s) is already being loaded through %s: a module cannot call itself.", name, call.Source, strings.Join(calls, " -> ")),
			Subject:  b.DefRange.Ptr(),
		})
	}
	files, dir, err := g.loadModule(call.Source, m.dir)
	if err != nil {
		return append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Cannot load module",
			Detail:   fmt.Sprintf("Module %q: %v.", name, err),
			Subject:  b.DefRange.Ptr(),
		})
	}
	child := newModule(name, m, call.Source, dir)
	child.Call = call
	child.Expands = m.Expands || call.ForEach != nil
	m.children[name] = child
	m.Modules = append(m.Modules, child)

	var blocks []*hcl.Block
	for _, f := range files {
		file, ok := g.Files[f.Name]
		if !ok || !bytes.Equal(file.Bytes, f.Src) {
			var d hcl.Diagnostics
			file, d = parseConfig(f.Src, f.Name)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			g.Files[f.Name] = file
		}
		content, d := file.Body.Content(moduleFileSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	if diags.HasErrors() {
		return diags
	}
	return append(diags, g.decodeScope(child, blocks, schemas, append(append([]string(nil), calls...), call.Source))...)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// loadModule reads a module's files: "builtin:NAME" from the binary, a
// file, or every .hcl file of a directory (sorted by name), relative to
// fromDir.
func (g *Graph) loadModule(source, fromDir string) ([]ModuleFile, string, error) {
	if name, ok := strings.CutPrefix(source, "builtin:"); ok {
		if g.opts.Builtin != nil {
			if files, ok := g.opts.Builtin(name); ok {
				return files, fromDir, nil
			}
		}
		return nil, "", fmt.Errorf("there is no built-in module %q (piship pipelines lists them)", name)
	}
	p := source
	if !filepath.IsAbs(p) {
		p = filepath.Join(fromDir, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, "", fmt.Errorf("source %s: %v", source, err)
	}
	if !fi.IsDir() {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		return []ModuleFile{{Name: displayPath(p), Src: b}}, filepath.Dir(p), nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, "", err
	}
	var files []ModuleFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".hcl") {
			continue
		}
		fp := filepath.Join(p, e.Name())
		b, err := os.ReadFile(fp)
		if err != nil {
			return nil, "", err
		}
		files = append(files, ModuleFile{Name: displayPath(fp), Src: b})
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("source %s: the directory has no .hcl file", source)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, p, nil
}

// displayPath shows a module file relative to the working directory when
// it is below it, as the pipeline file is shown.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}

func decodeOutput(b *hcl.Block) (*Output, hcl.Diagnostics) {
	content, diags := b.Body.Content(outputSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	o := &Output{Name: b.Labels[0], Expr: content.Attributes["value"].Expr, DeclRange: b.DefRange}
	if attr, ok := content.Attributes["description"]; ok {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() && v.Type() == cty.String && !v.IsNull() {
			o.Description = v.AsString()
		}
	}
	return o, diags
}
