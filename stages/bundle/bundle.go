package bundle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/tracing/phase"
)

// Options for Bundle.
type Options struct {
	Root  string    // payload root: holds package.json, node_modules/ (an npm-installed, possibly already stripped tree)
	Entry string    // entry file relative to Root, slash-separated, e.g. "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"
	Log   io.Writer // progress notes; may be nil

	// Platform and Arch, when set, are the platform and architecture the
	// payload is for, in Node's terms (process.platform, process.arch: e.g.
	// "linux", "x64"; see platform.Host). An unbundled package that ships
	// prebuilt native binaries for many platforms then keeps only those
	// whose path does not name another platform or architecture. Empty
	// keeps every binary.
	Platform string
	Arch     string

	// Keep lists extra files to leave in place whatever the heuristics say,
	// as slash-separated paths relative to Root: a file, a directory (all
	// of it) or a path.Match pattern. Kept with reason "requested".
	Keep []string
}

// Manifest is written by the caller as metadata/bundle.json.
type Manifest struct {
	Schema  string  `json:"schema"`  // "piship-bundle/v1"
	Esbuild string  `json:"esbuild"` // esbuild version (EsbuildVersion())
	Entry   string  `json:"entry"`
	Chunks  []Chunk `json:"chunks"` // every JS file esbuild wrote, sorted by path
	Kept    []Kept  `json:"kept"`   // every other file left in the tree, sorted by path, with why
	Shims   []Kept  `json:"shims"`  // module shims written so a path still resolves
	// Upstream is set when the entry is a bundle its package ships, kept
	// as built upstream (no chunks, no shims): why, and what it loads.
	Upstream *Upstream `json:"upstream,omitempty"`
}

// Chunk is one JavaScript file written by esbuild (an entry or a shared chunk).
type Chunk struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	// Packages are the installed packages (their directories, lock keys)
	// whose modules esbuild put into this file: the SBOM names the file
	// as theirs when the payload no longer holds their directory.
	Packages []string `json:"packages,omitempty"`
}

// ManifestName is the manifest's path in the payload.
const ManifestName = "metadata/bundle.json"

// Carrier is the payload file that carries the installed package at
// pkgDir (its directory, the lock key) once bundling removed the
// directory: the chunk esbuild put its modules into, or, for an entry
// kept as the bundle its package ships (Upstream), that entry. "" when
// no bundle file carries it.
func (m *Manifest) Carrier(pkgDir string) string {
	for _, c := range m.Chunks {
		if slices.Contains(c.Packages, pkgDir) {
			return c.Path
		}
	}
	if m.Upstream != nil {
		return m.Entry
	}
	return ""
}

// Kept is a file left in (or written to) the tree, with the reason.
type Kept struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Schema is the manifest schema written in Manifest.Schema.
const Schema = "piship-bundle/v1"

const fallbackEsbuildVersion = "0.28.2"

// EsbuildVersion returns the version of the esbuild module linked into this
// binary (from its build information), or the version go.mod pins when the
// build information does not say.
func EsbuildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/evanw/esbuild" {
				if d.Replace != nil && d.Replace.Version != "" {
					d = d.Replace
				}
				if v := strings.TrimPrefix(d.Version, "v"); v != "" && v != "(devel)" {
					return v
				}
			}
		}
	}
	return fallbackEsbuildVersion
}

// maxPasses bounds the esbuild runs: each run can reveal packages to keep
// external or modules that need a shim, which changes the next run.
const maxPasses = 6

// Bundle rewrites the tree at o.Root in place: the entry's module graph
// becomes ESM chunks written beside the entry, and node_modules keeps only
// what must stay a file (see the package documentation). It never writes
// to, truncates or chmods an existing file: it creates new files (through a
// temporary name and a rename) and deletes old ones, so files hardlinked
// into a shared cache are safe.
func Bundle(ctx context.Context, o Options) (*Manifest, error) {
	start := time.Now()
	b, err := newBundler(o)
	if err != nil {
		return nil, err
	}
	// An entry that upstream bundled already is kept as it is.
	w, err := b.walkUpstream()
	if err != nil {
		return nil, err
	}
	if w.reason != "" {
		b.logf("bundle: keeping the upstream bundle: %s", w.reason)
		plan, up := b.planUpstream(w)
		if err := b.apply(plan); err != nil {
			return nil, err
		}
		m := plan.manifest(b)
		m.Upstream = up
		b.logf("bundle: %s before, %d after (upstream bundle: %s, %s kept) in %s",
			canon.Count(len(b.t.files), "file"), len(m.Kept), canon.Count(up.Modules, "module"), canon.Count(len(up.Packages), "package"), time.Since(start).Round(time.Millisecond))
		return m, nil
	}
	var res *passResult
	for pass := 1; ; pass++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		// Each esbuild run is a visible cost (one to three per bundle).
		_, ph := phase.Start(ctx, "esbuild")
		res, err = b.build()
		if res != nil {
			ph.SetInt("piship.bundle.modules", int64(len(res.meta.Inputs)))
			ph.SetInt("piship.bundle.outputs", int64(len(res.outputs)))
		}
		ph.End(err)
		if err != nil {
			return nil, err
		}
		changed := b.analyze(res)
		b.logf("bundle: pass %d: %s, %s in %s", pass, canon.Count(len(res.meta.Inputs), "module"), canon.Count(len(res.outputs), "output"), time.Since(t0).Round(time.Millisecond))
		if !changed {
			// Settled: one more run when grouping the public modules
			// behind a facade changes the layout.
			changed = b.planFacade(res)
		}
		if !changed {
			break
		}
		if pass == maxPasses {
			return nil, fmt.Errorf("bundle: the externals and shims did not settle after %d esbuild runs", maxPasses)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	plan, err := b.plan(res)
	if err != nil {
		return nil, err
	}
	if err := b.apply(plan); err != nil {
		return nil, err
	}
	m := plan.manifest(b)
	var outBytes int64
	for _, c := range m.Chunks {
		outBytes += c.Bytes
	}
	b.logf("bundle: %s before, %d after (%s, %s; %s; %d kept) in %s",
		canon.Count(len(b.t.files), "file"), len(m.Chunks)+len(m.Shims)+len(m.Kept), canon.Count(len(m.Chunks), "chunk"), canon.Count(outBytes, "byte"), canon.Count(len(m.Shims), "shim"), len(m.Kept),
		time.Since(start).Round(time.Millisecond))
	return m, nil
}

type bundler struct {
	o        Options
	t        *tree
	entry    string // slash-separated, relative to the root
	entryPkg *pkg
	outdir   string // where the chunks go: the entry's directory

	// entries are the modules esbuild builds as entry points, by path; each
	// gets a shim at its own path.
	entries map[string]*entrySpec
	// nativeRefs are .node/.wasm files of bundled packages that bundled
	// code imports by path.
	nativeRefs map[string]string
	// unresolved are bare imports nothing provides, left external.
	unresolved map[string][]string
	// selfLocating are bundled packages whose code finds files relative to
	// its own module; their assets stay (by package directory).
	selfLocating map[string]bool
	// graphFiles are the modules of the last esbuild run.
	graphFiles map[string]bool
	// runtimeNamed are external packages loaded by name at run time (by
	// package directory).
	runtimeNamed map[string]bool
	// runtimeFiles are files of bundled packages that code locates by
	// name at run time (require.resolve("./data.json")), with the reason.
	runtimeFiles map[string]string

	loadMu sync.Mutex
	loaded map[string]*loadedModule // modules read for esbuild, by path
}

// entrySpec is one esbuild entry point and the shim written at its path.
type entrySpec struct {
	input   string   // module path, relative to the root
	reasons []string // why its path must still resolve
	command bool     // the entry or a "bin" target: run, not imported
	exports []string // export names, from the last esbuild run
	facade  bool     // re-exported through the facade in the final run
}

func (b *bundler) logf(format string, args ...any) {
	if b.o.Log != nil {
		fmt.Fprintf(b.o.Log, format+"\n", args...)
	}
}

func newBundler(o Options) (*bundler, error) {
	if o.Root == "" || o.Entry == "" {
		return nil, errors.New("bundle: Root and Entry are required")
	}
	root, err := absClean(o.Root)
	if err != nil {
		return nil, err
	}
	entry := path.Clean(strings.TrimPrefix(o.Entry, "./"))
	if strings.HasPrefix(entry, "../") || path.IsAbs(entry) || entry == "." {
		return nil, fmt.Errorf("bundle: entry %q must be a path inside the root", o.Entry)
	}
	if !isJSFile(entry) {
		return nil, fmt.Errorf("bundle: entry %q is not a JavaScript file", o.Entry)
	}
	t, err := scanTree(root)
	if err != nil {
		return nil, fmt.Errorf("bundle: reading %s: %w", root, err)
	}
	if !t.isSet[entry] || t.links[entry] {
		return nil, fmt.Errorf("bundle: entry %s: no such file in %s", entry, root)
	}
	b := &bundler{
		o: o, t: t, entry: entry,
		entryPkg:     t.ownerOf(entry),
		outdir:       path.Dir(entry),
		entries:      map[string]*entrySpec{},
		nativeRefs:   map[string]string{},
		unresolved:   map[string][]string{},
		selfLocating: map[string]bool{},
		runtimeNamed: map[string]bool{},
		runtimeFiles: map[string]string{},
		loaded:       map[string]*loadedModule{},
	}
	if b.outdir == "." {
		b.outdir = ""
	}
	if b.entryPkg == nil {
		return nil, fmt.Errorf("bundle: entry %s belongs to no package (no package.json above it)", entry)
	}
	b.addEntry(entry, "entry", true)
	b.addPackageEntries()

	// Packages with native addons or WebAssembly stay files.
	for _, dir := range slices.Sorted(maps.Keys(t.pkgs)) {
		p := t.pkgs[dir]
		if p == b.entryPkg || dir == "" {
			continue
		}
		switch {
		case len(p.native) > 0:
			b.markExternal(p, fmt.Sprintf("native addon (%d .node files)", len(p.native)))
		case len(p.wasm) > 0:
			b.markExternal(p, fmt.Sprintf("WebAssembly (%d .wasm files)", len(p.wasm)))
		}
	}
	b.closeExternals()
	return b, nil
}

// addPackageEntries adds the entry package's public modules: its "bin",
// "main" and "exports" targets, so that running or importing the package
// still works.
func (b *bundler) addPackageEntries() {
	p := b.entryPkg
	if p.json == nil {
		return
	}
	t := b.t
	for _, target := range slices.Sorted(maps.Keys(binTargets(p.json))) {
		f := path.Join(p.dir, target)
		if t.isSet[f] && isJSFile(f) {
			for _, name := range binTargets(p.json)[target] {
				b.addEntry(f, "bin "+name, true)
			}
		}
	}
	if p.json.Main != "" {
		if f, ok := t.fileLike(path.Join(p.dir, p.json.Main)); ok && isJSFile(f) {
			b.addEntry(f, "main", false)
		}
	}
	if ex, ok := parseOrdered(p.json.Exports); ok && !ex.null {
		for _, sub := range exportsSubpaths(ex) {
			if strings.Contains(sub, "*") {
				continue
			}
			for _, conds := range [][]string{importConds, requireConds} {
				if target, ok := resolveExports(ex, sub, conds); ok {
					f := path.Join(p.dir, target)
					if t.isSet[f] && isJSFile(f) {
						b.addEntry(f, "exports "+sub, false)
					}
				}
			}
		}
	}
}

// addEntry makes module f an entry point with a shim at its path; it
// reports whether that is new.
func (b *bundler) addEntry(f, reason string, command bool) bool {
	e, ok := b.entries[f]
	if !ok {
		e = &entrySpec{input: f}
		b.entries[f] = e
	}
	if command {
		e.command = true
	}
	for _, r := range e.reasons {
		if r == reason {
			return !ok
		}
	}
	e.reasons = append(e.reasons, reason)
	return !ok
}

// markExternal keeps package p as ordinary files; it reports whether that
// is new. The entry package and the root package are never external.
func (b *bundler) markExternal(p *pkg, why string) bool {
	if p == nil || p.external != "" || p == b.entryPkg || p.dir == "" {
		return false
	}
	p.external = why
	b.logf("bundle: keeping %s unbundled: %s", p.dir, why)
	return true
}

// closeExternals makes every installed dependency of an external package
// external too: its code loads them by name from node_modules. It reports
// whether a package in the last module graph changed.
func (b *bundler) closeExternals() bool {
	changed := false
	for {
		more := false
		for _, dir := range slices.Sorted(maps.Keys(b.t.pkgs)) {
			p := b.t.pkgs[dir]
			if p.external == "" || p.json == nil {
				continue
			}
			var deps []string
			for _, m := range []map[string]string{p.json.Dependencies, p.json.OptionalDependencies, p.json.PeerDependencies} {
				for d := range m {
					deps = append(deps, d)
				}
			}
			sort.Strings(deps)
			for _, d := range deps {
				ddir, ok := b.t.lookupPackage(p.dir, d)
				if !ok {
					continue
				}
				q := b.t.pkgs[ddir]
				if q == b.entryPkg && q != nil && q.external == "" {
					b.logf("bundle: note: external package %s depends on the entry package %s, which is bundled", p.dir, q.dir)
				}
				if b.markExternal(q, "dependency of external package "+p.name) {
					more = true
					if b.inGraph(q) {
						changed = true
					}
				}
			}
		}
		if !more {
			return changed
		}
	}
}

func (b *bundler) inGraph(p *pkg) bool {
	for f := range b.graphFiles {
		if under(f, p.dir) && b.t.ownerOf(f) == p {
			return true
		}
	}
	return false
}

// planFacade decides which public modules are re-exported through one
// facade entry instead of being entries of their own. Every entry point
// splits the chunks further, so modules that the commands load eagerly
// anyway (reached through static imports) share one entry; a module only
// loaded on demand keeps its own, so that loading it stays lazy. A shim at
// a CommonJS path keeps its own entry too. It reports whether the layout
// changed.
func (b *bundler) planFacade(res *passResult) bool {
	// Record the export names of entries built on their own.
	for _, out := range slices.Sorted(maps.Keys(res.meta.Outputs)) {
		mo := res.meta.Outputs[out]
		if e, ok := b.entries[mo.EntryPoint]; ok {
			e.exports = append([]string{}, mo.Exports...)
			sort.Strings(e.exports)
		}
	}
	eager := map[string]bool{}
	var queue []string
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		if b.entries[f].command {
			queue = append(queue, f)
			eager[f] = true
		}
	}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, imp := range res.meta.Inputs[f].Imports {
			if imp.Kind == "import-statement" && !imp.External && !eager[imp.Path] {
				eager[imp.Path] = true
				queue = append(queue, imp.Path)
			}
		}
	}
	var members []string
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		e := b.entries[f]
		if !e.command && e.exports != nil && eager[f] && b.t.isESM(f) {
			members = append(members, f)
		}
	}
	if len(members) < 2 {
		members = nil
	}
	in := map[string]bool{}
	for _, f := range members {
		in[f] = true
	}
	changed := false
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		e := b.entries[f]
		if e.facade != in[f] {
			e.facade = in[f]
			changed = true
		}
	}
	return changed
}

// analyze applies what an esbuild run revealed; it reports whether the
// next run would differ.
func (b *bundler) analyze(res *passResult) bool {
	t := b.t
	changed := false
	b.graphFiles = map[string]bool{}
	for f := range res.meta.Inputs {
		if !strings.HasPrefix(f, facadeNamespace+":") {
			b.graphFiles[f] = true
		}
	}
	b.selfLocating = map[string]bool{}
	for _, f := range slices.Sorted(maps.Keys(res.meta.Inputs)) {
		if strings.HasPrefix(f, facadeNamespace+":") {
			continue
		}
		sc := res.scans[f]
		p := t.ownerOf(f)
		if sc == nil || p == nil {
			continue
		}
		esm := t.isESM(f)
		if sc.metaURL || sc.metaDirname || sc.metaFilename || sc.metaResolve || ((sc.dirname || sc.filename) && !esm) {
			b.selfLocating[p.dir] = true
		}
		// A CommonJS require() of a computed name may load any file of the
		// package relative to itself: keep the package as files.
		if sc.computedRequire && !esm {
			if p == b.entryPkg || p.dir == "" {
				b.logf("bundle: warning: %s calls require() with a computed name; relative names will resolve from the bundle", f)
			} else if b.markExternal(p, "loads modules by computed name (require in "+strings.TrimPrefix(f, p.dir+"/")+")") {
				changed = true
			}
		}
		// Names passed to run-time loaders must still resolve from files.
		handled := map[string]bool{}
		for _, imp := range res.meta.Inputs[f].Imports {
			handled[imp.Original] = true
		}
		for _, c := range sc.calls {
			if strings.HasSuffix(c.Callee, "()") {
				// A loader's result called (createRequire(u)("./x")): what
				// tells an upstream bundle (walkUpstream); here such names
				// are found as before.
				continue
			}
			plain := c.Callee == "require" || c.Callee == "import"
			for _, a := range c.Args {
				if plain && handled[a] {
					continue // esbuild bundled (or externalized) this import
				}
				if b.runtimeReference(f, c.Callee, a, true) {
					changed = true
				}
			}
		}
		// A computed import() may be given any relative module path the
		// module spells out (through a wrapper, a table, a variable).
		if len(sc.dynImports) > 0 {
			for _, a := range sc.relLiterals {
				if !handled[a] && b.runtimeReference(f, "import", a, false) {
					changed = true
				}
			}
		}
	}
	for _, spec := range slices.Sorted(maps.Keys(res.unresolved)) {
		if _, seen := b.unresolved[spec]; !seen {
			b.logf("bundle: %s is not installed; left external (imported by %s)", spec, strings.Join(res.unresolved[spec], ", "))
		}
		b.unresolved[spec] = res.unresolved[spec]
	}
	for f, why := range res.nativeRefs {
		b.nativeRefs[f] = why
	}
	if b.closeExternals() {
		changed = true
	}
	return changed
}

// runtimeReference handles string literal spec passed to a loader-like call
// (callee) in module f; with anyPath false only a JavaScript module it
// names counts. It reports whether the next esbuild run changes.
func (b *bundler) runtimeReference(f, callee, spec string, anyPath bool) bool {
	t := b.t
	lc := strings.ToLower(callee)
	requireLike := strings.Contains(lc, "require") && !strings.HasSuffix(lc, ".resolve")
	dir := path.Dir(f)
	reason := "loaded at run time from " + f
	var target string
	switch {
	case isRelative(spec):
		p := path.Join(dir, spec)
		if p == ".." || strings.HasPrefix(p, "../") {
			return false
		}
		var ok bool
		if target, ok = t.fileLike(p); !ok {
			for _, ext := range []string{".mjs", ".cjs"} {
				if t.isSet[p+ext] {
					target, ok = p+ext, true
				}
			}
		}
		if !ok {
			return false
		}
	case isBare(spec):
		name := packageName(spec)
		pdir, ok := t.lookupPackage(dir, name)
		if !ok {
			return false
		}
		q := t.pkgs[pdir]
		if q == nil {
			return false
		}
		if q.external != "" {
			b.runtimeNamed[q.dir] = true
			return false
		}
		if requireLike && q != b.entryPkg {
			b.runtimeNamed[q.dir] = true
			return b.markExternal(q, "required by name at run time from "+f) && b.inGraph(q)
		}
		conds := importConds
		if strings.Contains(lc, "require") {
			conds = requireConds
		}
		if target, ok = t.resolveSpecifier(dir, spec, conds); !ok {
			return false
		}
	default:
		return false
	}
	q := t.ownerOf(target)
	if q == nil {
		return false
	}
	if q.external != "" {
		b.runtimeNamed[q.dir] = true
		return false
	}
	if !isJSFile(target) {
		if !anyPath {
			return false
		}
		// A file located by name (require.resolve("pkg/package.json"),
		// import.meta.resolve("./data.json")): within the referring
		// package it stays as an asset; another package is located to
		// read its files, so it stays whole.
		if q == t.ownerOf(f) || q == b.entryPkg || q.dir == "" {
			b.runtimeFiles[target] = "asset"
			return false
		}
		b.runtimeNamed[q.dir] = true
		return b.markExternal(q, "files located at run time from "+f) && b.inGraph(q)
	}
	if _, ok := b.entries[target]; ok {
		b.addEntry(target, reason, false)
		return false
	}
	if !t.isESM(target) && q != b.entryPkg && q.dir != "" {
		// A CommonJS module loaded by path needs CommonJS files around it.
		b.runtimeNamed[q.dir] = true
		return b.markExternal(q, "CommonJS module "+strings.TrimPrefix(target, q.dir+"/")+" is "+reason) && b.inGraph(q)
	}
	return b.addEntry(target, reason, false)
}

// usedExternals returns the external packages something still loads:
// those bundled code imports, those loaded by name at run time, and the
// dependencies of these. An external package nothing loads goes.
func (b *bundler) usedExternals(res *passResult) map[string]bool {
	t := b.t
	used := map[string]bool{}
	var queue []*pkg
	add := func(p *pkg) {
		if p != nil && p.external != "" && !used[p.dir] {
			used[p.dir] = true
			queue = append(queue, p)
		}
	}
	for _, dir := range slices.Sorted(maps.Keys(b.runtimeNamed)) {
		add(t.pkgs[dir])
	}
	for _, f := range slices.Sorted(maps.Keys(res.meta.Inputs)) {
		for _, imp := range res.meta.Inputs[f].Imports {
			switch {
			case !imp.External:
			case isBare(imp.Path):
				if d, ok := t.lookupPackage(path.Dir(f), packageName(imp.Path)); ok {
					add(t.pkgs[d])
				}
			case isRelative(imp.Path):
				add(t.ownerOf(path.Join(b.outdir, imp.Path)))
			}
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p.json == nil {
			continue
		}
		for _, m := range []map[string]string{p.json.Dependencies, p.json.OptionalDependencies, p.json.PeerDependencies} {
			for _, d := range slices.Sorted(maps.Keys(m)) {
				if ddir, ok := t.lookupPackage(p.dir, d); ok {
					add(t.pkgs[ddir])
				}
			}
		}
	}
	return used
}

func isJSFile(f string) bool {
	switch path.Ext(f) {
	case ".js", ".mjs", ".cjs":
		return true
	}
	return false
}

// metafile is the part of esbuild's metafile bundling reads.
type metafile struct {
	Inputs map[string]struct {
		Imports []struct {
			Path     string `json:"path"`
			Kind     string `json:"kind"`
			External bool   `json:"external"`
			Original string `json:"original"`
		} `json:"imports"`
	} `json:"inputs"`
	Outputs map[string]struct {
		EntryPoint string              `json:"entryPoint"`
		Exports    []string            `json:"exports"`
		Inputs     map[string]struct{} `json:"inputs"`
	} `json:"outputs"`
}

func parseMetafile(s string) (*metafile, error) {
	var m metafile
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("bundle: reading esbuild metafile: %w", err)
	}
	return &m, nil
}
