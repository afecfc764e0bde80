package distribution

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// Load reads and validates dir/distribution.hcl, then checks that the files
// it names exist: the runtime's package.json and package-lock.json, every
// resource, every local tool and every osv: audit database.
func Load(dir string) (*Distribution, hcl.Diagnostics) {
	file := filepath.Join(dir, FileName)
	src, err := atomicfs.ReadRegular(file, 0)
	if err != nil {
		detail := fmt.Sprintf("%v.", err)
		if os.IsNotExist(err) {
			detail = fmt.Sprintf("%s has no %s. A distribution directory holds one file %s with one distribution \"<id>\" { ... } block.", dir, FileName, FileName)
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read the distribution", Detail: detail, Subject: fileRange(file)}}
	}
	d, diags := Parse(src, file, dir)
	if diags.HasErrors() {
		return nil, diags
	}
	diags = append(diags, d.checkFiles()...)
	if diags.HasErrors() {
		return nil, sortDiags(diags)
	}
	return d, sortDiags(diags)
}

// Parse decodes and validates a distribution.hcl held in src. filename
// names the file in diagnostics; dir is the distribution directory, where
// relative paths resolve. Parse does not look at the file system; Load
// does. On errors the distribution is nil.
func Parse(src []byte, filename, dir string) (*Distribution, hcl.Diagnostics) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}

	d := &Distribution{
		Dir:      abs,
		File:     filename,
		SHA256:   canon.SHA256Hex(src),
		Tools:    map[string]Tool{},
		ranges:   map[string]hcl.Range{},
		shownDir: filepath.Clean(dir),
	}
	file, diags := parseConfig(src, filename)
	if diags.HasErrors() {
		return nil, sortDiags(diags)
	}
	content, cd := file.Body.Content(fileSchema)
	improveUnsupported(cd, FileName, nil, []string{"distribution"})
	diags = append(diags, cd...)
	switch {
	case len(content.Blocks) == 0:
		if !diags.HasErrors() {
			diags = append(diags, errDiag("No distribution in file",
				`The file declares no distribution "<id>" { ... } block; write one, e.g. distribution "hello" { name = "Hello" ... }.`,
				file.Body.MissingItemRange()))
		}
	default:
		for _, extra := range content.Blocks[1:] {
			diags = append(diags, errDiag("More than one distribution",
				fmt.Sprintf("%s holds one distribution; %q was already declared at %s. Put each distribution in its own directory.",
					FileName, content.Blocks[0].Labels[0], fmtPos(content.Blocks[0].DefRange)),
				extra.DefRange))
		}
		dc := &decoder{d: d}
		dc.distribution(content.Blocks[0])
		diags = append(diags, dc.diags...)
	}
	if diags.HasErrors() {
		return nil, sortDiags(diags)
	}
	return d, sortDiags(diags)
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "distribution", LabelNames: []string{"id"}}},
}

// bodySchema builds the hcl schema of one block from the documented fields.
func bodySchema(prefix string, blocks ...string) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, f := range schema {
		rest, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || strings.Contains(rest, ".") {
			continue
		}
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: rest, Required: f.Required})
	}
	for _, b := range blocks {
		// "type" or "type:label".
		typ, label, labelled := strings.Cut(b, ":")
		h := hcl.BlockHeaderSchema{Type: typ}
		if labelled {
			h.LabelNames = []string{label}
		}
		s.Blocks = append(s.Blocks, h)
	}
	return s
}

var (
	topSchema         = bodySchema("", "runtime", "release", "audit", "signatures", "smoke:name", "updates", "package:name", "search_tools", "node", "installers")
	searchToolsSchema = bodySchema("search_tools.")
	nodeSchema        = bodySchema("node.")
	installersSchema  = bodySchema("installers.")
	runtimeSchema     = bodySchema("runtime.")
	releaseSchema     = bodySchema("release.")
	auditSchema       = bodySchema("audit.", "allow:id")
	allowSchema       = bodySchema("audit.allow.")
	signaturesSchema  = bodySchema("signatures.")
	smokeSchema       = bodySchema("smoke.")
	packageSchema     = bodySchema("package.")
	updatesSchema     = withRemoved(bodySchema("updates."), removedUpdates)
)

// withRemoved adds attributes that were removed, so that their decoder can
// say what replaced them.
func withRemoved(s *hcl.BodySchema, names []string) *hcl.BodySchema {
	for _, n := range names {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: n})
	}
	return s
}

func attrNames(s *hcl.BodySchema) []string {
	out := make([]string, len(s.Attributes))
	for i, a := range s.Attributes {
		out[i] = a.Name
	}
	return out
}

type decoder struct {
	d     *Distribution
	diags hcl.Diagnostics
}

func (dc *decoder) add(ds ...*hcl.Diagnostic) { dc.diags = append(dc.diags, ds...) }

func (dc *decoder) content(body hcl.Body, s *hcl.BodySchema, where, prefix string) *hcl.BodyContent {
	var blocks []string
	for _, b := range s.Blocks {
		blocks = append(blocks, b.Type)
	}
	content, diags := body.Content(s)
	for _, diag := range diags {
		if diag.Summary == "Missing required argument" {
			// hcl says which; add what it is.
			if n, ok := strings.CutPrefix(diag.Detail, `The argument "`); ok {
				n, _, _ = strings.Cut(n, `"`)
				if f, ok := fieldByName(prefix + n); ok {
					diag.Detail = fmt.Sprintf("%s requires %s: %s.", where, n, f.Doc)
				}
			}
		}
	}
	improveUnsupported(diags, where, attrNames(s), blocks)
	dc.add(diags...)
	return content
}

func (dc *decoder) distribution(blk *hcl.Block) {
	d := dc.d
	d.ID = blk.Labels[0]
	d.DeclRange = blk.DefRange
	d.ranges["id"] = blk.LabelRanges[0]
	if msg := checkName(d.ID); msg != "" {
		dc.add(errDiag("Invalid distribution id", fmt.Sprintf("distribution %q: %s It names apps/<id>/ and receipts/<id>.json.", d.ID, msg), blk.LabelRanges[0]))
	}
	where := fmt.Sprintf("distribution %q", d.ID)
	content := dc.content(blk.Body, topSchema, where, "")
	attrs := content.Attributes

	if v, r, ok := dc.str(attrs, "name"); ok {
		d.Name = v
		switch {
		case strings.TrimSpace(v) == "":
			dc.add(errDiag("Invalid name", "name is the display name and cannot be empty, e.g. name = \"Hello\".", r))
		case strings.IndexFunc(v, unicode.IsControl) >= 0:
			dc.add(errDiag("Invalid name", "name cannot hold control characters (newlines, tabs, escapes).", r))
		}
	}
	if v, r, ok := dc.str(attrs, "version"); ok {
		d.Version = v
		if !semverRE().MatchString(v) {
			detail := fmt.Sprintf("version %q is not a semantic version: write MAJOR.MINOR.PATCH, e.g. \"1.0.0\", optionally with a pre-release (\"1.0.0-beta.1\") or build metadata (\"1.0.0+build.5\").", v)
			if fix := fixVersion(v); fix != "" {
				detail += fmt.Sprintf(" Did you mean %q?", fix)
			}
			dc.add(errDiag("Invalid version", detail, r))
		}
	}
	if v, r, ok := dc.str(attrs, "command"); ok {
		d.Command = v
		if msg := checkName(v); msg != "" {
			detail := fmt.Sprintf("command %q: %s It becomes the shim <bin-home>/%s.", v, msg, v)
			if low := strings.ToLower(v); low != v && checkName(low) == "" {
				detail += fmt.Sprintf(" Did you mean %q?", low)
			}
			dc.add(errDiag("Invalid command", detail, r))
		}
	}
	if list, rs, ok := dc.strList(attrs, "resources"); ok {
		dc.resources(list, rs)
	}
	if attr, ok := attrs["tools"]; ok {
		dc.tools(attr)
	}
	if v, _, ok := dc.boolean(attrs, "verify_at_launch"); ok {
		d.VerifyAtLaunch = v
	}

	var runtimeBlk, releaseBlk, auditBlk, signaturesBlk, updatesBlk, searchBlk, nodeBlk, installersBlk *hcl.Block
	var smokeBlks, packageBlks []*hcl.Block
	for _, b := range content.Blocks {
		var p **hcl.Block
		switch b.Type {
		case "runtime":
			p = &runtimeBlk
		case "release":
			p = &releaseBlk
		case "audit":
			p = &auditBlk
		case "signatures":
			p = &signaturesBlk
		case "updates":
			p = &updatesBlk
		case "search_tools":
			p = &searchBlk
		case "node":
			p = &nodeBlk
		case "installers":
			p = &installersBlk
		case "smoke":
			smokeBlks = append(smokeBlks, b)
			continue
		case "package":
			packageBlks = append(packageBlks, b)
			continue
		default:
			continue
		}
		if *p != nil {
			dc.add(errDiag("Duplicate "+b.Type+" block",
				fmt.Sprintf("A distribution has one %s block; the first is at %s.", b.Type, fmtPos((*p).DefRange)), b.DefRange))
			continue
		}
		*p = b
	}
	if runtimeBlk == nil {
		dc.add(errDiag("Missing runtime block",
			fmt.Sprintf("%s has no runtime block. Add one naming the npm project and its entry:\n  runtime {\n    dir   = \"runtime\"\n    entry = \"node_modules/<package>/<file>.js\"\n  }", where),
			blk.Body.MissingItemRange()))
	} else {
		dc.runtime(runtimeBlk)
	}
	if releaseBlk == nil {
		dc.add(errDiag("Missing release block",
			fmt.Sprintf("%s has no release block. Add one naming at least the targets:\n  release {\n    targets = [\"linux-x64\"]\n  }", where),
			blk.Body.MissingItemRange()))
	} else {
		dc.release(releaseBlk)
	}
	if runtimeBlk != nil {
		dc.checkOverlaps()
	}
	d.Audit = Audit{Sources: []string{SourceNPM}, FailOn: SeverityHigh}
	if auditBlk != nil {
		dc.audit(auditBlk)
	}
	if signaturesBlk != nil {
		dc.signatures(signaturesBlk)
	}
	dc.smokes(smokeBlks)
	dc.piPackages(packageBlks)
	if updatesBlk != nil {
		dc.updates(updatesBlk)
	}
	if searchBlk != nil {
		dc.searchTools(searchBlk)
		dc.checkSearchTargets()
	}
	if nodeBlk != nil {
		dc.node(nodeBlk)
		dc.checkNodeTargets()
	}
	if installersBlk != nil {
		dc.installers(installersBlk)
	}
}

func (dc *decoder) runtime(blk *hcl.Block) {
	d := dc.d
	d.ranges["runtime"] = blk.DefRange
	content := dc.content(blk.Body, runtimeSchema, "the runtime block", "runtime.")
	attrs := content.Attributes
	d.Runtime.Dir = "runtime"
	if v, r, ok := dc.str(attrs, "runtime.dir"); ok {
		if p, msg := cleanRel(v); msg != "" {
			dc.add(errDiag("Invalid runtime directory", fmt.Sprintf("runtime.dir %q: %s", v, msg), r))
		} else {
			d.Runtime.Dir = p
		}
	}
	if v, r, ok := dc.str(attrs, "runtime.entry"); ok {
		d.Runtime.Entry = v
		p, msg := cleanRel(v)
		if msg == "" {
			if _, rest, ok := splitPackagePath(p); !ok || rest == "" {
				msg = "the entry is a file inside an installed package, so it is locked: node_modules/<package>/<file>, e.g. \"node_modules/hello-cli/bin/hello.js\" (see the package's \"bin\" in its package.json)."
			}
		} else {
			msg += " It is relative to the runtime directory, e.g. \"node_modules/hello-cli/bin/hello.js\"."
		}
		if msg != "" {
			dc.add(errDiag("Invalid runtime entry", fmt.Sprintf("runtime.entry %q: %s", v, msg), r))
		} else {
			d.Runtime.Entry = p
		}
	}
	if list, rs, ok := dc.strList(attrs, "runtime.allow_install_scripts"); ok {
		names, _ := dc.uniqueList(list, rs, "Duplicate package", func(name string, r hcl.Range) (string, bool) {
			if !pkgNameRE().MatchString(name) {
				dc.add(errDiag("Invalid package name",
					fmt.Sprintf("%q is not an npm package name: write it as package-lock.json does, e.g. \"koffi\" or \"@google/genai\" (no version).", name), r))
				return "", false
			}
			return name, true
		})
		d.Runtime.AllowInstallScripts = append(d.Runtime.AllowInstallScripts, names...)
	}
}

func (dc *decoder) release(blk *hcl.Block) {
	d := dc.d
	d.ranges["release"] = blk.DefRange
	content := dc.content(blk.Body, releaseSchema, "the release block", "release.")
	attrs := content.Attributes
	if v, _, ok := dc.boolean(attrs, "release.bundle"); ok {
		d.Release.Bundle = v
	}
	if v, _, ok := dc.boolean(attrs, "release.strip"); ok {
		d.Release.Strip = v
	}
	if list, rs, ok := dc.strList(attrs, "release.targets"); ok {
		if len(list) == 0 {
			dc.add(errDiag("No release target", "release.targets needs at least one <platform>-<arch>, e.g. [\"linux-x64\"].", d.ranges["release.targets"]))
		}
		targets, _ := dc.uniqueList(list, rs, "Duplicate release target", func(t string, r hcl.Range) (string, bool) {
			if _, err := ParseTarget(t); err != nil {
				dc.add(errDiag("Invalid release target", sentence(err.Error()), r))
				return "", false
			}
			return t, true
		})
		d.Release.Targets = append(d.Release.Targets, targets...)
	}
	d.Release.Sources = []string{SourceNPM}
	if list, rs, ok := dc.strList(attrs, "release.sources"); ok {
		d.Release.Sources, _ = dc.uniqueList(list, rs, "Duplicate package source", func(s string, r hcl.Range) (string, bool) {
			if msg := checkSource(s); msg != "" {
				dc.add(errDiag("Invalid package source", fmt.Sprintf("release.sources entry %q: %s", s, msg), r))
				return "", false
			}
			return s, true
		})
	}
}

func (dc *decoder) resources(list []string, rs []hcl.Range) {
	d := dc.d
	var ranges []hcl.Range
	d.Resources, ranges = dc.uniqueList(list, rs, "Duplicate resource", func(v string, r hcl.Range) (string, bool) {
		p, msg := cleanRel(v)
		if msg == "" {
			switch p {
			case ".":
				msg = "a resource is a file or directory inside the distribution directory, not the directory itself."
			case FileName, LockFileName:
				msg = fmt.Sprintf("%s is part of every payload already; it is not a resource.", p)
			}
		}
		if msg != "" {
			dc.add(errDiag("Invalid resource path", fmt.Sprintf("resources entry %q: %s", v, msg), r))
			return "", false
		}
		return p, true
	})
	for k, r := range ranges {
		d.ranges[fmt.Sprintf("resources[%d]", k)] = r
	}
	// A resource inside another would be listed twice in the payload.
	for i, a := range d.Resources {
		for j, b := range d.Resources {
			if i != j && strings.HasPrefix(a, b+"/") {
				dc.add(errDiag("Overlapping resources",
					fmt.Sprintf("%q is inside %q (listed at %s), which is copied whole; remove one of them.", a, b, d.Pos(fmt.Sprintf("resources[%d]", j))),
					d.Range(fmt.Sprintf("resources[%d]", i))))
			}
		}
	}
}

// checkOverlaps refuses resources that would copy the runtime project or
// its installed tree into the payload a second time.
func (dc *decoder) checkOverlaps() {
	d := dc.d
	rt := d.Runtime.Dir
	for i, r := range d.Resources {
		key := fmt.Sprintf("resources[%d]", i)
		if rt == r || strings.HasPrefix(rt, r+"/") || (rt == "." && r == "node_modules") ||
			r == path.Join(rt, "node_modules") || strings.HasPrefix(r, path.Join(rt, "node_modules")+"/") {
			dc.add(errDiag("Resource overlaps the runtime",
				fmt.Sprintf("resources entry %q holds the runtime project %q (or its node_modules), which piship assembles itself from the lock; list only the files to copy as they are.", r, rt),
				d.Range(key)))
		}
	}
}

func (dc *decoder) tools(attr *hcl.Attribute) {
	d := dc.d
	d.ranges["tools"] = attr.Expr.Range()
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type",
			`tools must be a map of tool name to { source, sha256 }, e.g. tools = { rg = { source = "tools/rg", sha256 = "<64 hex digits>" } }.`,
			attr.Expr.Range()))
		return
	}
	for _, kv := range pairs {
		kr := kv.Key.Range()
		kval, kd := kv.Key.Value(nil)
		if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
			dc.add(errDiag("Invalid tool name", "A tool name is a string or a bare name, e.g. rg.", kr))
			continue
		}
		name := kval.AsString()
		if msg := checkName(name); msg != "" {
			dc.add(errDiag("Invalid tool name", fmt.Sprintf("tool %q: %s It becomes the file tools/%s in the payload.", name, msg, name), kr))
			continue
		}
		if _, dup := d.Tools[name]; dup {
			dc.add(errDiag("Duplicate tool", fmt.Sprintf("tool %q is already declared at %s.", name, d.Pos("tools."+name)), kr))
			continue
		}
		key := "tools." + name
		d.ranges[key] = kr
		t, ok := dc.tool(name, kv.Value)
		if ok {
			d.Tools[name] = t
		}
	}
}

func (dc *decoder) tool(name string, expr hcl.Expression) (Tool, bool) {
	d := dc.d
	key := "tools." + name
	example := fmt.Sprintf(`%s = { source = "tools/%s", sha256 = "<64 hex digits>" }`, name, name)
	fields, diags := hcl.ExprMap(expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type", fmt.Sprintf("tool %q must be an object with source and sha256: %s.", name, example), expr.Range()))
		return Tool{}, false
	}
	t := Tool{Name: name}
	var have = map[string]bool{}
	ok := true
	for _, kv := range fields {
		kval, kd := kv.Key.Value(nil)
		if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
			dc.add(errDiag("Invalid tool attribute", "Tool attributes are source and sha256.", kv.Key.Range()))
			ok = false
			continue
		}
		field := kval.AsString()
		if field != "source" && field != "sha256" {
			detail := fmt.Sprintf("tool %q has no attribute %q.", name, field)
			if s := suggest(field, []string{"source", "sha256"}); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			} else {
				detail += " A tool takes source and sha256."
			}
			dc.add(errDiag("Unsupported argument", detail, kv.Key.Range()))
			ok = false
			continue
		}
		if have[field] {
			dc.add(errDiag("Duplicate tool attribute", fmt.Sprintf("tool %q sets %s twice.", name, field), kv.Key.Range()))
			ok = false
			continue
		}
		have[field] = true
		v, r, vok := dc.exprString(kv.Value, key+"."+field, fmt.Sprintf("tool %q %s", name, field))
		if !vok {
			ok = false
			continue
		}
		d.ranges[key+"."+field] = r
		switch field {
		case "source":
			src, msg := checkToolSource(v)
			if msg != "" {
				dc.add(errDiag("Invalid tool source", fmt.Sprintf("tool %q source %q: %s", name, v, msg), r))
				ok = false
				continue
			}
			t.Source = src
		case "sha256":
			if !canon.IsSHA256Hex(v) {
				detail := fmt.Sprintf("tool %q sha256 %q is not a SHA-256 digest: write its 64 lowercase hex digits (sha256sum prints them).", name, v)
				if low := strings.ToLower(strings.TrimPrefix(v, "sha256:")); canon.IsSHA256Hex(low) {
					detail += fmt.Sprintf(" Did you mean %q?", low)
				}
				dc.add(errDiag("Invalid tool digest", detail, r))
				ok = false
				continue
			}
			t.SHA256 = v
		}
	}
	for _, field := range []string{"source", "sha256"} {
		if !have[field] {
			what := "where it comes from: a path relative to the distribution directory or an https:// URL"
			if field == "sha256" {
				what = "its pinned SHA-256 (64 lowercase hex digits; sha256sum prints them)"
			}
			dc.add(errDiag("Missing required argument", fmt.Sprintf("tool %q requires %s: %s. %s.", name, field, what, example), expr.Range()))
			ok = false
		}
	}
	return t, ok
}
