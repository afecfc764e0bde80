package distribution

import (
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// FileName is the distribution file in a distribution directory.
const FileName = "distribution.hcl"

// SourceNPM in release.sources stands for the registry npm is configured
// for.
const SourceNPM = "npm"

// Distribution is a decoded, validated distribution.hcl.
type Distribution struct {
	// ID is the block label: distribution "<id>". It names apps/<id>/ and
	// receipts/<id>.json.
	ID      string
	Name    string
	Version string
	// Command is the shim's file name: <bin-home>/<command>.
	Command string
	// Dir is the distribution directory, absolute. Every relative path of
	// the distribution resolves against it.
	Dir string
	// File is distribution.hcl's path as diagnostics name it.
	File    string
	Runtime Runtime
	// Resources are slash-separated, cleaned paths relative to Dir, in the
	// order written.
	Resources []string
	Tools     map[string]Tool
	// SearchTools are the bundled search tools (fd, rg) by name; nil
	// without a search_tools block.
	SearchTools    map[string]SearchTool
	Release        Release
	VerifyAtLaunch bool
	// Audit is the audit block, defaults filled in when there is none.
	Audit Audit
	// Signatures is the signatures block (its defaults when there is none).
	Signatures Signatures
	// Smoke are the smoke tests in the order written.
	Smoke []Smoke
	// Updates is the updates block, nil when it is not written.
	Updates *Updates
	// Packages are the vendored Pi packages (package blocks), in the
	// order written.
	Packages []PiPackage
	// SHA256 is the lowercase hex SHA-256 of the distribution.hcl bytes
	// this was decoded from.
	SHA256 string

	// DeclRange is the distribution block's header.
	DeclRange hcl.Range
	// ranges maps "name", "runtime.entry", "resources[0]", "tools.rg",
	// "tools.rg.sha256", "release.targets[0]"... to where they are written.
	ranges map[string]hcl.Range
	// shownDir is the directory as the caller named it, for messages.
	shownDir string
}

// Runtime is the runtime block: an npm project whose locked dependency tree
// is the program.
type Runtime struct {
	// Dir holds package.json and package-lock.json; slash-separated,
	// relative to the distribution directory.
	Dir string
	// Entry is the program's main module, relative to Dir, inside an
	// installed package: node_modules/<package>/<file>.
	Entry string
	// AllowInstallScripts names the packages that may declare install
	// scripts. The scripts are never run (npm ci --ignore-scripts).
	AllowInstallScripts []string
}

// Tool is a pinned extra executable copied into the payload's tools/.
type Tool struct {
	Name string
	// Source is a path relative to the distribution directory
	// (slash-separated, cleaned) or an https:// URL.
	Source string
	// SHA256 is the pinned lowercase hex digest of the executable.
	SHA256 string
}

// IsURL reports whether the tool is fetched rather than read from the
// distribution directory.
func (t Tool) IsURL() bool { return strings.HasPrefix(t.Source, "https://") }

// Release is the release block: how a release of the distribution is made.
type Release struct {
	Bundle bool
	Strip  bool
	// Targets are <platform>-<arch> in Node's naming.
	Targets []string
	// Sources are where locked packages may come from: SourceNPM or https://
	// URL prefixes.
	Sources []string
}

// Audit severities, lowest first: fail_on is one of them.
const (
	SeverityLow      = "low"
	SeverityModerate = "moderate"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// Severities lists the severities, lowest first.
var Severities = []string{SeverityLow, SeverityModerate, SeverityHigh, SeverityCritical}

// SeverityRank orders severities: 1 for low up to 4 for critical, 0 for
// anything else.
func SeverityRank(s string) int { return slices.Index(Severities, s) + 1 }

// SourceOSVPrefix starts an audit source that is an offline OSV database:
// "osv:<path>".
const SourceOSVPrefix = "osv:"

// DefaultSmokeTimeout is a smoke test's timeout when it sets none.
const DefaultSmokeTimeout = 300 * time.Second

// maxSmokeTimeout bounds smoke.timeout.
const maxSmokeTimeout = time.Hour

// Audit is the audit block: the vulnerability audit of a release.
type Audit struct {
	// Sources are SourceNPM (the registry's bulk advisory endpoint) and
	// "osv:<path>" (SourceOSVPrefix and a cleaned, slash-separated path
	// relative to the distribution directory: a .zip or a directory of OSV
	// JSON records), in the order written.
	Sources []string
	// FailOn is one of Severities: findings at or above it fail.
	FailOn string
	// Allow are the accepted advisories in the order written.
	Allow []Allow
	// AllowUnavailable lets a source that cannot be consulted leave the
	// verdict "unavailable" instead of failing the release.
	AllowUnavailable bool
}

// OSVPaths returns the paths of the osv: sources, relative to the
// distribution directory, in the order written.
func (a Audit) OSVPaths() []string {
	var out []string
	for _, s := range a.Sources {
		if p, ok := strings.CutPrefix(s, SourceOSVPrefix); ok {
			out = append(out, p)
		}
	}
	return out
}

// Allow is an accepted advisory: allow "<id>" { reason, expires }.
type Allow struct {
	// ID is the advisory's id as written (GHSA-..., CVE-..., an OSV id or
	// an npm advisory number); it matches an advisory's id or aliases,
	// ignoring case.
	ID     string
	Reason string
	// Expires is the last day the acceptance holds, at 00:00 UTC: it
	// holds until Expires plus one day.
	Expires time.Time
}

// Expired reports whether the acceptance no longer holds at now: the day
// after Expires has begun (UTC).
func (a Allow) Expired(now time.Time) bool { return !now.Before(a.Expires.AddDate(0, 0, 1)) }

// Signatures is the signatures block: the check of the npm registry's
// signatures.
type Signatures struct {
	// AllowUnavailable lets signatures that cannot be checked leave the
	// verdict "unavailable" instead of failing the release. An invalid
	// signature always fails.
	AllowUnavailable bool
}

// Smoke is a smoke "<name>" block: a test of the payload that every
// release runs.
type Smoke struct {
	// Name is the block label, [a-z0-9][a-z0-9._-]*.
	Name string
	// Args are the command's arguments.
	Args []string
	// Expect is an RE2 regular expression, checked when decoded, matched
	// against the run's trimmed combined stdout and stderr.
	Expect string
	// Timeout is how long the run may take (DefaultSmokeTimeout when not
	// set).
	Timeout time.Duration

	re *regexp.Regexp
}

// Regexp is Expect compiled.
func (s Smoke) Regexp() (*regexp.Regexp, error) {
	if s.re != nil {
		return s.re, nil
	}
	return regexp.Compile(s.Expect)
}

// Range returns where the value at key is written: "name", "runtime.entry",
// "resources[0]", "tools.rg", "tools.rg.sha256", "release.targets[1]",
// "audit.sources[0]", "audit.allow.<id>", "audit.allow.<id>.expires",
// "smoke.<name>", "smoke.<name>.expect", "updates.source",
// "updates.root_sha256"... A key that was not written (a default)
// falls back to its block, then to the distribution block.
func (d *Distribution) Range(key string) hcl.Range {
	for k := key; k != ""; {
		if r, ok := d.ranges[k]; ok {
			return r
		}
		if i := strings.LastIndexAny(k, ".["); i > 0 {
			k = k[:i]
		} else {
			break
		}
	}
	return d.DeclRange
}

// Declared reports whether distribution.hcl writes the block ("audit",
// "signatures", "updates", "release"...) rather than leaving it to its
// defaults.
func (d *Distribution) Declared(block string) bool {
	_, ok := d.ranges[block]
	return ok
}

// Pos is Range(key) as file:line:col.
func (d *Distribution) Pos(key string) string { return fmtPos(d.Range(key)) }

// LockPath is the path of the distribution's piship.lock.
func (d *Distribution) LockPath() string { return filepath.Join(d.Dir, LockFileName) }

// RuntimeDir is the runtime directory, absolute.
func (d *Distribution) RuntimeDir() string {
	return filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir))
}

// ShownDir is the distribution directory as the caller named it, for
// messages and hints ("run piship lock <dir>").
func (d *Distribution) ShownDir() string {
	if d.shownDir != "" {
		return d.shownDir
	}
	return d.Dir
}

var (
	// semver.org's regular expression.
	semverRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	})
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	hexRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
	// npm package names, leniently (old packages have capitals).
	shortVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+(\.\d+)?$`) })
	pkgNameRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9._~-]+$`) })
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
	topSchema         = bodySchema("", "runtime", "release", "audit", "signatures", "smoke:name", "updates", "package:name", "search_tools")
	searchToolsSchema = bodySchema("search_tools.")
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

	var runtimeBlk, releaseBlk, auditBlk, signaturesBlk, updatesBlk, searchBlk *hcl.Block
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

func checkSource(s string) string {
	if s == SourceNPM {
		return ""
	}
	if strings.EqualFold(s, SourceNPM) {
		return fmt.Sprintf("write %q in lowercase.", SourceNPM)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL (%v): write \"npm\" for the configured npm registry or an https:// URL prefix.", err)
	case u.Scheme == "http":
		return "packages are fetched over https only: write https://" + strings.TrimPrefix(s, "http://") + "."
	case u.Scheme != "https" || u.Host == "":
		return "write \"npm\" for the configured npm registry or an https:// URL prefix such as \"https://registry.example.com/npm/\"."
	case u.User != nil:
		return "a source prefix holds no credentials: keep them in .npmrc, which npm reads."
	case u.RawQuery != "" || u.Fragment != "":
		return "a source prefix has no query or fragment."
	}
	return ""
}

// checkToolSource validates a tool's source: an https:// URL, or a path
// relative to the distribution directory (returned cleaned).
func checkToolSource(v string) (string, string) {
	if !strings.Contains(v, "://") {
		return cleanRel(v)
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Sprintf("not a URL (%v).", err)
	case u.Scheme == "http":
		return "", "tools are fetched over https only: write https://" + strings.TrimPrefix(v, "http://") + "."
	case u.Scheme != "https" || u.Host == "":
		return "", "a tool comes from a path inside the distribution directory or an https:// URL."
	case u.User != nil:
		return "", "the URL holds credentials; a distribution file is shared, so it must not."
	}
	return v, ""
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
			if !hexRE().MatchString(v) {
				detail := fmt.Sprintf("tool %q sha256 %q is not a SHA-256 digest: write its 64 lowercase hex digits (sha256sum prints them).", name, v)
				if low := strings.ToLower(strings.TrimPrefix(v, "sha256:")); hexRE().MatchString(low) {
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

// str decodes a string attribute; key is its dotted path.
func (dc *decoder) str(attrs hcl.Attributes, key string) (string, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return "", hcl.Range{}, false
	}
	return dc.exprString(attr.Expr, key, key)
}

func (dc *decoder) exprString(expr hcl.Expression, key, what string) (string, hcl.Range, bool) {
	r := expr.Range()
	dc.d.ranges[key] = r
	v, ok := dc.value(expr)
	if !ok {
		return "", r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		dc.add(typeDiag(r, what, "a string"+exampleFor(key), v))
		return "", r, false
	}
	return v.AsString(), r, true
}

func (dc *decoder) boolean(attrs hcl.Attributes, key string) (bool, hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return false, hcl.Range{}, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	v, ok := dc.value(attr.Expr)
	if !ok {
		return false, r, false
	}
	if v.IsNull() || !v.IsKnown() || v.Type() != cty.Bool {
		dc.add(typeDiag(r, key, "true or false", v))
		return false, r, false
	}
	return v.True(), r, true
}

// strList decodes a list of strings written as a list literal, keeping
// each element's range.
// uniqueList checks each entry of a list attribute (rs are the entries'
// ranges) with check, which returns the value to keep (normalized) or
// false after adding its own diagnostic, and refuses an entry whose value
// was kept before with dupSummary, naming where the first stands. It
// returns the kept values, in order (never nil), and their ranges.
func (dc *decoder) uniqueList(list []string, rs []hcl.Range, dupSummary string, check func(v string, r hcl.Range) (string, bool)) ([]string, []hcl.Range) {
	kept, ranges := []string{}, []hcl.Range{}
	seen := map[string]int{}
	for i, v := range list {
		k, ok := check(v, rs[i])
		if !ok {
			continue
		}
		if j, dup := seen[k]; dup {
			dc.add(errDiag(dupSummary, fmt.Sprintf("%q is already listed at %s.", v, fmtPos(rs[j])), rs[i]))
			continue
		}
		seen[k] = i
		kept, ranges = append(kept, k), append(ranges, rs[i])
	}
	return kept, ranges
}

func (dc *decoder) strList(attrs hcl.Attributes, key string) ([]string, []hcl.Range, bool) {
	attr, ok := attrs[lastName(key)]
	if !ok {
		return nil, nil, false
	}
	r := attr.Expr.Range()
	dc.d.ranges[key] = r
	exprs, diags := hcl.ExprList(attr.Expr)
	if diags.HasErrors() {
		if v, ok := dc.value(attr.Expr); ok {
			dc.add(typeDiag(r, key, "a list of strings"+exampleFor(key), v))
		}
		return nil, nil, false
	}
	list := make([]string, 0, len(exprs))
	ranges := make([]hcl.Range, 0, len(exprs))
	ok = true
	for i, e := range exprs {
		v, vok := dc.value(e)
		if !vok {
			ok = false
			continue
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			dc.add(typeDiag(e.Range(), fmt.Sprintf("%s[%d]", key, i), "a string", v))
			ok = false
			continue
		}
		dc.d.ranges[fmt.Sprintf("%s[%d]", key, i)] = e.Range()
		list = append(list, v.AsString())
		ranges = append(ranges, e.Range())
	}
	return list, ranges, ok
}

// value evaluates an expression of the static distribution file: no
// variables, no functions.
func (dc *decoder) value(expr hcl.Expression) (cty.Value, bool) {
	v, diags := expr.Value(nil)
	for _, d := range diags {
		switch d.Summary {
		case "Variables not allowed", "Function calls not allowed":
			d.Detail = strings.TrimSuffix(d.Detail, ".") + ": " + FileName + " is static; write the value itself."
		}
	}
	dc.add(diags...)
	return v, !diags.HasErrors()
}

// sentence ends s with a full stop unless it already ends a sentence.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

func typeDiag(r hcl.Range, what, want string, got cty.Value) *hcl.Diagnostic {
	return errDiag("Incorrect attribute value type", fmt.Sprintf("%s must be %s; this is %s.", what, want, describe(got)), r)
}

func describe(v cty.Value) string {
	switch {
	case v.IsNull():
		return "null"
	case !v.IsKnown():
		return "unknown"
	}
	switch t := v.Type(); {
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "a list"
	case t.IsObjectType() || t.IsMapType():
		return "an object"
	}
	return v.Type().FriendlyName()
}

func exampleFor(key string) string {
	f, ok := fieldByName(key)
	if !ok {
		// In a labelled block: smoke.<name>.args is smoke.args.
		if i := strings.LastIndexByte(key, '.'); i > 0 {
			if j := strings.LastIndexByte(key[:i], '.'); j > 0 {
				f, ok = fieldByName(key[:j] + key[i:])
			}
		}
	}
	if ok && f.Example != "" {
		return ", e.g. " + f.Example
	}
	return ""
}

func lastName(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		return key[i+1:]
	}
	return key
}

// checkName validates an id, command or tool name, which all become file
// names on every platform. It returns "" or what is wrong, as a sentence.
func checkName(s string) string {
	switch {
	case s == "":
		return "it cannot be empty."
	case len(s) > 64:
		return "it is longer than 64 characters."
	case !nameRE().MatchString(s):
		return "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit."
	case strings.HasSuffix(s, "."):
		return "it cannot end with '.' (Windows drops it from file names)."
	}
	base, _, _ := strings.Cut(s, ".")
	if windowsReserved[base] {
		return fmt.Sprintf("%q is a reserved device name on Windows.", base)
	}
	return ""
}

var windowsReserved = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// fixVersion proposes a semantic version for a near miss: "v1.2.3",
// "1.2", "1".
func fixVersion(v string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "v"), "V")
	for i := 0; i < 2 && !semverRE().MatchString(s); i++ {
		if shortVersionRE().MatchString(s) {
			s += ".0"
		}
	}
	if semverRE().MatchString(s) && s != v {
		return s
	}
	return ""
}

// cleanRel validates a slash-separated path relative to the distribution
// directory and returns it cleaned, or what is wrong with it.
func cleanRel(p string) (string, string) {
	switch {
	case p == "":
		return "", "the path is empty."
	case strings.Contains(p, `\`):
		return "", "write paths with forward slashes (they work on every platform): " + strings.ReplaceAll(p, `\`, "/") + "."
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || (len(p) >= 2 && p[1] == ':'):
		return "", "the path must be relative to the distribution directory, so the distribution builds the same wherever it is checked out."
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", "the path holds control characters."
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "the path leaves the distribution directory; everything a distribution uses lives inside it."
	}
	return c, ""
}

// splitPackagePath splits "node_modules/<pkg>/<rest>" (a scoped <pkg> has
// two segments) into the package's lock key and the rest.
func splitPackagePath(p string) (key, rest string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[0] != "node_modules" {
		return "", "", false
	}
	n := 2
	if strings.HasPrefix(parts[1], "@") {
		n = 3
		if len(parts) < 3 {
			return "", "", false
		}
	}
	return strings.Join(parts[:n], "/"), strings.Join(parts[n:], "/"), true
}

// checkFiles reports, at the attribute that names them, files the
// distribution needs that are missing or are not regular files (or, for
// the osv: audit databases, a .zip or a directory).
func (d *Distribution) checkFiles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	rt := d.RuntimeDir()
	rtRange := d.Range("runtime.dir")
	if fi, err := os.Stat(rt); err != nil || !fi.IsDir() {
		diags = append(diags, errDiag("Missing runtime directory",
			fmt.Sprintf("The runtime directory %s does not exist: it holds the npm project (package.json and package-lock.json) whose locked dependencies are the program.", d.shown(d.Runtime.Dir)),
			rtRange))
		return diags
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		rel := path.Join(d.Runtime.Dir, f)
		fi, err := os.Lstat(filepath.Join(rt, f))
		switch {
		case err != nil && f == "package-lock.json":
			diags = append(diags, errDiag("Missing package-lock.json",
				fmt.Sprintf("%s does not exist: create it with `npm install --package-lock-only --ignore-scripts` in %s and commit it; every release installs exactly what it locks.", d.shown(rel), d.shown(d.Runtime.Dir)),
				rtRange))
		case err != nil:
			diags = append(diags, errDiag("Missing package.json",
				fmt.Sprintf("%s does not exist: the runtime directory is an npm project whose dependencies are the program.", d.shown(rel)), rtRange))
		case !fi.Mode().IsRegular():
			diags = append(diags, errDiag("Not a regular file", fmt.Sprintf("%s is not a regular file (%s).", d.shown(rel), atomicfs.KindOf(fi.Mode())), rtRange))
		}
	}
	for i, r := range d.Resources {
		fi, err := os.Lstat(filepath.Join(d.Dir, filepath.FromSlash(r)))
		rng := d.Range(fmt.Sprintf("resources[%d]", i))
		switch {
		case err != nil:
			detail := fmt.Sprintf("%s does not exist.", d.shown(r))
			if s := suggestSibling(d.Dir, r); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			}
			diags = append(diags, errDiag("Missing resource", detail, rng))
		case fi.Mode()&fs.ModeSymlink != 0:
			diags = append(diags, errDiag("Resource is a symlink",
				fmt.Sprintf("%s is a symbolic link; a payload holds only regular files and directories. Replace the link with what it points to.", d.shown(r)), rng))
		case !fi.Mode().IsRegular() && !fi.IsDir():
			diags = append(diags, errDiag("Resource is not a file", fmt.Sprintf("%s is %s; a resource is a regular file or a directory.", d.shown(r), atomicfs.KindOf(fi.Mode())), rng))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Tools)) {
		t := d.Tools[name]
		if t.IsURL() {
			continue
		}
		fi, err := os.Lstat(filepath.Join(d.Dir, filepath.FromSlash(t.Source)))
		rng := d.Range("tools." + name + ".source")
		switch {
		case err != nil:
			diags = append(diags, errDiag("Missing tool", fmt.Sprintf("tool %q: %s does not exist.", name, d.shown(t.Source)), rng))
		case !fi.Mode().IsRegular():
			diags = append(diags, errDiag("Tool is not a regular file", fmt.Sprintf("tool %q: %s is %s; a tool is an executable file.", name, d.shown(t.Source), atomicfs.KindOf(fi.Mode())), rng))
		}
	}
	return append(diags, d.checkDatabases()...)
}

// shown names a path of the distribution as the user would type it.
func (d *Distribution) shown(rel string) string {
	return filepath.Join(d.ShownDir(), filepath.FromSlash(rel))
}

// suggestSibling proposes an existing entry of the same directory whose
// name is close to rel's last segment.
func suggestSibling(dir, rel string) string {
	parent, base := path.Split(rel)
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(parent)))
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if s := suggest(base, names); s != "" {
		return parent + s
	}
	return ""
}
