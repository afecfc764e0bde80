package bundle

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"piship.dev/piship/cache/atomicfs"
)

// plan is the tree after bundling: what is written and what stays.
type plan struct {
	writes map[string]newFile // path -> content
	chunks []Chunk
	shims  map[string]string // path -> reason
	kept   map[string]string // path -> reason
}

type newFile struct {
	data []byte
	mode os.FileMode
}

func (b *bundler) plan(res *passResult) (*plan, error) {
	t := b.t
	pl := &plan{writes: map[string]newFile{}, shims: map[string]string{}, kept: map[string]string{}}

	// Outputs, each with the banner after any hashbang.
	rootRel := relPath(b.outdir, "")
	rootRel = strings.TrimSuffix(strings.TrimPrefix(rootRel, "./"), "/")
	if rootRel == "" {
		rootRel = "."
	}
	bn := banner(rootRel)
	outputOf := map[string]string{} // entry module -> output path
	for _, of := range res.outputs {
		rel, ok := t.rel(of.Path)
		if !ok || path.Dir(rel) != b.outdir && !(b.outdir == "" && !strings.Contains(rel, "/")) {
			return nil, fmt.Errorf("bundle: esbuild wrote %s outside the output folder", of.Path)
		}
		if path.Ext(rel) != ".mjs" {
			return nil, fmt.Errorf("bundle: esbuild wrote an unexpected file %s", rel)
		}
		if t.isSet[rel] {
			return nil, fmt.Errorf("bundle: output %s would replace a file of the tree", rel)
		}
		data := string(of.Contents)
		if strings.HasPrefix(data, "#!") {
			nl := strings.IndexByte(data, '\n') + 1
			data = data[:nl] + bn + data[nl:]
		} else {
			data = bn + data
		}
		pl.writes[rel] = newFile{data: []byte(data), mode: 0o644}
		c := Chunk{Path: rel, Bytes: int64(len(data))}
		if mo, ok := res.meta.Outputs[rel]; ok {
			if mo.EntryPoint != "" {
				outputOf[mo.EntryPoint] = rel
			}
			pkgs := map[string]bool{}
			for in := range mo.Inputs {
				if p := t.ownerOf(in); p != nil && p.dir != "" {
					pkgs[p.dir] = true
				}
			}
			c.Packages = slices.Sorted(maps.Keys(pkgs))
		}
		pl.chunks = append(pl.chunks, c)
	}
	sort.Slice(pl.chunks, func(i, j int) bool { return pl.chunks[i].Path < pl.chunks[j].Path })

	// Shims at every entry's own path.
	needPkgJSON := map[string]bool{}
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		e := b.entries[f]
		key := f
		if e.facade {
			key = facadeNamespace + ":public"
		}
		out, ok := outputOf[key]
		if !ok {
			return nil, fmt.Errorf("bundle: esbuild wrote no output for entry %s", f)
		}
		shim, mode := b.shimFor(e, out)
		pl.writes[f] = newFile{data: shim, mode: mode}
		pl.shims[f] = "shim: " + strings.Join(e.reasons, "; ")
		// The package.json files that make the shim resolve and load as
		// before: the package's own, and the one that sets its module type.
		if p := t.ownerOf(f); p != nil {
			needPkgJSON[path.Join(p.dir, "package.json")] = true
		}
		if pj := t.nearestPkgJSON(path.Dir(f)); pj != "" {
			needPkgJSON[pj] = true
		}
	}

	// Files that stay.
	usedExt := b.usedExternals(res)
	for _, dir := range slices.Sorted(maps.Keys(t.pkgs)) {
		if p := t.pkgs[dir]; p.external != "" && !usedExt[dir] {
			b.logf("bundle: dropping %s: nothing loads it", dir)
		}
	}
	keepReq := b.requestedKeeps()
	codeRoots := b.codeRoots()
	for _, f := range t.files {
		if _, ok := pl.writes[f]; ok || t.links[f] {
			continue
		}
		if keepReq(f) {
			pl.kept[f] = "requested"
			continue
		}
		p := t.ownerOf(f)
		if !inNodeModules(f) {
			// Outside node_modules only the entry package's bundled
			// modules go.
			switch {
			case p == b.entryPkg && b.graphFiles[f]:
			case path.Base(f) == "package.json":
				pl.kept[f] = "package-json"
			default:
				pl.kept[f] = "outside-node_modules"
			}
			continue
		}
		if p == nil {
			continue
		}
		if p.external != "" {
			inPkg := strings.TrimPrefix(f, p.dir+"/")
			switch {
			case !usedExt[p.dir]:
				continue
			case path.Base(f) == "package.json" && path.Dir(f) == p.dir:
			case prunable(inPkg):
				continue
			case isNativeBinary(f) && foreignBinary(inPkg, b.o.Platform, b.o.Arch):
				continue
			}
			pl.kept[f] = "external-package: " + p.external
			continue
		}
		if needPkgJSON[f] {
			pl.kept[f] = "package-json"
			continue
		}
		if why, ok := b.nativeRefs[f]; ok {
			pl.kept[f] = why
			continue
		}
		if why, ok := b.runtimeFiles[f]; ok {
			pl.kept[f] = why
			continue
		}
		if cr, ok := codeRoots[p.dir]; ok && b.selfLocating[p.dir] {
			if why := b.assetReason(f, p, cr); why != "" {
				pl.kept[f] = why
			}
		}
	}
	// Symlinks stay when what they point at does (outside node_modules,
	// always).
	for _, f := range t.files {
		if !t.links[f] {
			continue
		}
		switch {
		case keepReq(f):
			pl.kept[f] = "requested"
			continue
		case !inNodeModules(f):
			pl.kept[f] = "outside-node_modules"
			continue
		}
		target, err := os.Readlink(t.abs(f))
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		tr := path.Join(path.Dir(f), filepath.ToSlash(target))
		if filepath.IsAbs(target) {
			r, ok := t.rel(target)
			if !ok {
				continue // points out of the tree: goes with node_modules
			}
			tr = r
		}
		if pl.survives(tr, t) {
			if path.Base(path.Dir(f)) == ".bin" {
				pl.kept[f] = "bin-link"
			} else {
				pl.kept[f] = "symlink"
			}
		}
	}
	return pl, nil
}

// survives reports whether path p (a file or directory) exists after the plan.
func (pl *plan) survives(p string, t *tree) bool {
	if _, ok := pl.writes[p]; ok {
		return true
	}
	if _, ok := pl.kept[p]; ok {
		return true
	}
	if t.dirs[p] {
		for f := range pl.kept {
			if under(f, p) {
				return true
			}
		}
		for f := range pl.writes {
			if under(f, p) {
				return true
			}
		}
	}
	return false
}

// shimFor writes the module left at an entry's path: it re-exports (or for
// a command, runs) the entry's output. Its module type follows what Node
// makes of the path.
func (b *bundler) shimFor(e *entrySpec, out string) ([]byte, os.FileMode) {
	t := b.t
	f := e.input
	spec := relPath(path.Dir(f), out)
	q := jsString(spec)
	var sb strings.Builder
	mode := os.FileMode(0o644)
	if info, err := os.Lstat(t.abs(f)); err == nil && info.Mode().Perm()&0o111 != 0 {
		mode = 0o755
	}
	if data, err := os.ReadFile(t.abs(f)); err == nil && strings.HasPrefix(string(data), "#!") {
		line := string(data)
		if nl := strings.IndexByte(line, '\n'); nl >= 0 {
			line = line[:nl]
		}
		sb.WriteString(strings.TrimRight(line, "\r") + "\n")
	}
	sb.WriteString("// piship bundle shim: the code of this module is in " + spec + "\n")
	if t.isESM(f) {
		switch {
		case e.facade:
			member := 0
			for _, g := range slices.Sorted(maps.Keys(b.entries)) {
				if g == f {
					break
				}
				if b.entries[g].facade {
					member++
				}
			}
			var parts []string
			for j, x := range e.exports {
				parts = append(parts, facadeAlias(member, j)+" as "+exportName(x))
			}
			if len(parts) == 0 {
				sb.WriteString("import " + q + ";\n")
			} else {
				sb.WriteString("export { " + strings.Join(parts, ", ") + " } from " + q + ";\n")
			}
		case len(e.exports) == 0 && e.command:
			sb.WriteString("import " + q + ";\n")
		default:
			sb.WriteString("export * from " + q + ";\n")
			for _, x := range e.exports {
				if x == "default" {
					sb.WriteString("export { default } from " + q + ";\n")
				}
			}
		}
		return []byte(sb.String()), mode
	}
	if e.command {
		sb.WriteString("import(" + q + ");\n")
	} else {
		// Needs require(esm) (Node 20.19 and later) when a CommonJS caller
		// requires the package.
		sb.WriteString("module.exports = require(" + q + ").default;\n")
	}
	return []byte(sb.String()), mode
}

func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// requestedKeeps matches Options.Keep.
func (b *bundler) requestedKeeps() func(string) bool {
	pats := make([]string, 0, len(b.o.Keep))
	for _, k := range b.o.Keep {
		k = strings.Trim(path.Clean(strings.TrimPrefix(filepath.ToSlash(k), "./")), "/")
		if k != "" && k != "." {
			pats = append(pats, k)
		}
	}
	return func(f string) bool {
		for _, p := range pats {
			if under(f, p) && p != "" {
				return true
			}
			if ok, _ := path.Match(p, f); ok {
				return true
			}
		}
		return false
	}
}

// codeRoots returns, for each bundled package in the graph, the deepest
// folder holding all of its bundled modules.
func (b *bundler) codeRoots() map[string]string {
	roots := map[string]string{}
	seen := map[string]bool{}
	for _, f := range slices.Sorted(maps.Keys(b.graphFiles)) {
		p := b.t.ownerOf(f)
		if p == nil {
			continue
		}
		d := path.Dir(f)
		if d == "." {
			d = ""
		}
		if !seen[p.dir] {
			seen[p.dir] = true
			roots[p.dir] = d
			continue
		}
		r := roots[p.dir]
		for !under(d, r) {
			r = path.Dir(r)
			if r == "." {
				r = ""
			}
		}
		roots[p.dir] = r
	}
	for dir, r := range roots {
		if !under(r, dir) {
			roots[dir] = dir
		}
	}
	return roots
}

// assetReason decides whether file f of a bundled package whose code finds
// files next to itself stays, and why ("" when it goes).
func (b *bundler) assetReason(f string, p *pkg, codeRoot string) string {
	if !under(f, codeRoot) || f == codeRoot {
		if path.Base(f) == "package.json" && path.Dir(f) == p.dir {
			return "package-json"
		}
		return ""
	}
	inPkg := strings.TrimPrefix(f, p.dir+"/")
	if p.dir == "" {
		inPkg = f
	}
	if prunable(inPkg) {
		return ""
	}
	switch {
	case path.Base(f) == "package.json":
		return "package-json"
	case path.Ext(f) == ".node":
		return "native-addon"
	case path.Ext(f) == ".wasm":
		return "wasm"
	case isModuleSource(f):
		if b.graphFiles[f] {
			return ""
		}
		// A script that is not a module of the bundle stays when it sits in
		// an asset folder (read as text, like an HTML template's script).
		for d := path.Dir(f); d != codeRoot && under(d, codeRoot); d = path.Dir(d) {
			if b.isAssetDir(d, p) {
				return "asset"
			}
		}
		return ""
	}
	return "asset"
}

// isAssetDir reports whether folder d directly holds a file that stays as
// an asset (not code, not documentation).
func (b *bundler) isAssetDir(d string, p *pkg) bool {
	for _, f := range p.files {
		if path.Dir(f) != d || b.t.links[f] {
			continue
		}
		inPkg := strings.TrimPrefix(f, p.dir+"/")
		if !isModuleSource(f) && !prunable(inPkg) && path.Base(f) != "package.json" {
			return true
		}
	}
	return false
}

func isModuleSource(f string) bool {
	switch path.Ext(f) {
	case ".js", ".mjs", ".cjs", ".jsx":
		return true
	}
	return false
}

// prunable reports whether a package file (path inside the package) is
// never needed at run time: documentation, licences, sources of native and
// TypeScript code, declarations and maps, dotfiles, and the test, example
// and documentation folders.
func prunable(inPkg string) bool {
	parts := strings.Split(inPkg, "/")
	for _, d := range parts[:len(parts)-1] {
		if strings.HasPrefix(d, ".") {
			return true
		}
		switch strings.ToLower(d) {
		case "test", "tests", "__tests__", "spec", "doc", "docs", "example", "examples", "benchmark", "benchmarks", "coverage":
			return true
		}
	}
	base := parts[len(parts)-1]
	lb := strings.ToLower(base)
	if strings.HasPrefix(base, ".") {
		return true
	}
	stem := lb
	if i := strings.IndexByte(stem, '.'); i > 0 {
		stem = stem[:i]
	}
	switch stem {
	case "readme", "license", "licence", "changelog", "changes", "history", "notice", "authors",
		"contributors", "contributing", "security", "code_of_conduct", "funding", "copying", "tsconfig":
		return true
	}
	switch lb {
	case "binding.gyp", "cmakelists.txt", "makefile", "cargo.toml", "cargo.lock", "build.rs":
		return true
	}
	for _, suf := range []string{".d.ts", ".d.mts", ".d.cts", ".map", ".tsbuildinfo"} {
		if strings.HasSuffix(lb, suf) {
			return true
		}
	}
	switch path.Ext(lb) {
	case ".md", ".markdown", ".mdx", ".rst",
		".ts", ".tsx", ".mts", ".cts",
		".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".s", ".asm", ".inc", ".def",
		".rs", ".go", ".py", ".gyp", ".gypi", ".cmake",
		".o", ".obj", ".a", ".lib", ".exp", ".pdb", ".ilk":
		return true
	}
	return false
}

func inNodeModules(f string) bool {
	return strings.HasPrefix(f, "node_modules/") || strings.Contains(f, "/node_modules/")
}

// apply writes the new files and removes what the plan does not keep.
// Existing files are never opened for writing: a new file is written under
// a temporary name and renamed over the path.
func (b *bundler) apply(pl *plan) error {
	t := b.t
	for _, f := range slices.Sorted(maps.Keys(pl.writes)) {
		nf := pl.writes[f]
		abs := t.abs(f)
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
		if err := atomicfs.WriteFile(abs, nf.data, nf.mode, atomicfs.Options{Pattern: filepath.Base(abs) + ".piship-bundle-*"}); err != nil {
			return fmt.Errorf("bundle: %w", err)
		}
	}
	// Remove what is not kept, then the folders that leaves empty (only
	// folders that held a removed file, deepest first).
	emptied := map[string]bool{}
	for _, f := range t.files {
		if _, ok := pl.writes[f]; ok {
			continue
		}
		if _, ok := pl.kept[f]; ok {
			continue
		}
		if err := os.Remove(t.abs(f)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("bundle: %w", err)
		}
		for d := path.Dir(f); d != "." && !emptied[d]; d = path.Dir(d) {
			emptied[d] = true
		}
	}
	dirs := slices.Sorted(maps.Keys(emptied))
	sort.SliceStable(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		os.Remove(t.abs(d)) // fails, as it should, when not empty
	}
	return nil
}

func (pl *plan) manifest(b *bundler) *Manifest {
	m := &Manifest{Schema: Schema, Esbuild: EsbuildVersion(), Entry: b.entry, Chunks: pl.chunks, Kept: []Kept{}, Shims: []Kept{}}
	if m.Chunks == nil {
		m.Chunks = []Chunk{}
	}
	for _, f := range slices.Sorted(maps.Keys(pl.kept)) {
		m.Kept = append(m.Kept, Kept{Path: f, Reason: pl.kept[f]})
	}
	for _, f := range slices.Sorted(maps.Keys(pl.shims)) {
		m.Shims = append(m.Shims, Kept{Path: f, Reason: pl.shims[f]})
	}
	return m
}

func absClean(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.Clean(a), nil
}
