package bundle

import (
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Upstream says why the entry was kept as the bundle its package ships
// instead of being bundled again (Manifest.Upstream).
type Upstream struct {
	// Reason is what gave the upstream bundle away: a module loaded at
	// run time through a require esbuild cannot see, or bundler output.
	Reason string `json:"reason"`
	// Modules are the upstream bundle's modules kept (the entry's
	// folder and what they load), Packages the installed packages they
	// load by name, kept whole.
	Modules  int      `json:"modules"`
	Packages []string `json:"packages"`
	// Located are modules the bundle only locates by name (a resolve
	// call: require.resolve("pkg"), import.meta.resolve("pkg")), by
	// specifier, with the module that does: not kept, since nothing of the
	// bundle loads them (Pi hands such paths to the extensions it loads).
	Located []Kept `json:"located"`
}

// bundlerMarkers are helpers only a bundler writes: esbuild's and
// webpack's module wrappers.
var bundlerMarkers = []string{"__toESM(", "__commonJS(", "__webpack_require__"}

// upstreamWalk is the closure of the entry's folder: every module reached
// by static imports and by string literals passed to loaders.
type upstreamWalk struct {
	modules  map[string]string // module -> why it is reached
	assets   map[string]string // non-module files located by name -> why
	packages map[string]string // package directory -> why (loaded by name)
	located  map[string]string // module specifiers only located by name (a resolve call) -> where
	reason   string            // why this is an upstream bundle; "" when it is not
}

// walkUpstream follows the modules of the entry's own folder (all of its
// JavaScript files, recursively, in the entry package) and everything they
// import or hand to a loader by a string literal. It reports an upstream
// bundle when a module of the entry package is loaded through a require
// esbuild cannot follow (createRequire(import.meta.url)("./x.js")), which
// cutting the modules apart would break, or when it is bundler output.
func (b *bundler) walkUpstream() (*upstreamWalk, error) {
	t := b.t
	w := &upstreamWalk{modules: map[string]string{}, assets: map[string]string{}, packages: map[string]string{}, located: map[string]string{}}
	var queue []string
	add := func(f, why string) {
		if _, ok := w.modules[f]; !ok {
			w.modules[f] = why
			queue = append(queue, f)
		}
	}
	add(b.entry, "entry")
	for _, f := range t.files {
		if under(f, b.outdir) && f != b.entry && isJSFile(f) && !t.links[f] && t.ownerOf(f) == b.entryPkg {
			add(f, "in the entry's folder "+b.outdir)
		}
	}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		data, err := os.ReadFile(t.abs(f))
		if err != nil {
			return nil, fmt.Errorf("bundle: %w", err)
		}
		src := string(data)
		sc := scanJS(src)
		if w.reason == "" && t.ownerOf(f) == b.entryPkg {
			for _, m := range bundlerMarkers {
				if strings.Contains(src, m) {
					w.reason = fmt.Sprintf("%s is bundler output (it holds %s)", f, strings.TrimSuffix(m, "("))
					break
				}
			}
		}
		type ref struct {
			spec, callee string
		}
		var refs []ref
		for _, s := range sc.staticImports {
			refs = append(refs, ref{s, ""})
		}
		for _, c := range sc.calls {
			for _, a := range c.Args {
				refs = append(refs, ref{a, c.Callee})
			}
		}
		dir := path.Dir(f)
		for _, r := range refs {
			why := "imported by " + f
			if r.callee != "" {
				why = "loaded by " + f + " (" + r.callee + ")"
			}
			switch {
			case isRelative(r.spec):
				p := path.Join(dir, r.spec)
				if p == ".." || strings.HasPrefix(p, "../") || t.dirs[p] || pathResolve.MatchString(r.callee) {
					// Outside the root; a folder (path.resolve(__dirname,
					// "..")); a path computed, not a module loaded.
					continue
				}
				target, ok := t.fileLike(p)
				if !ok {
					for _, ext := range []string{".mjs", ".cjs"} {
						if t.isSet[p+ext] {
							target, ok = p+ext, true
						}
					}
				}
				if !ok {
					continue
				}
				if !isJSFile(target) {
					w.assets[target] = "asset: located by " + f
					continue
				}
				if w.reason == "" && invisibleLoader(r.callee) && t.ownerOf(target) == b.entryPkg {
					w.reason = fmt.Sprintf("%s loads %s through %s, a require esbuild cannot follow", f, target, r.callee)
				}
				if q := t.ownerOf(target); q != nil && q != b.entryPkg && q.dir != "" {
					w.packages[q.dir] = why
					continue
				}
				add(target, why)
			case isBare(r.spec) && !isBuiltin(r.spec):
				pdir, ok := t.lookupPackage(dir, packageName(r.spec))
				if !ok {
					continue // an optional package npm did not install
				}
				if strings.Contains(strings.ToLower(r.callee), "resolve") && t.pkgs[pdir] != b.entryPkg {
					// Located, not loaded (require.resolve("pkg/file.wasm"),
					// import.meta.resolve("pkg") for extensions to import):
					// a file that is not a module stays with its
					// package.json; a module is only recorded.
					conds := importConds
					if strings.Contains(strings.ToLower(r.callee), "require") {
						conds = requireConds
					}
					if target, ok := t.resolveSpecifier(dir, r.spec, conds); ok && !isJSFile(target) {
						w.assets[target] = "asset: located by " + f
						w.assets[path.Join(pdir, "package.json")] = "package-json"
					} else if _, seen := w.packages[pdir]; !seen {
						w.located[r.spec] = f + " (" + r.callee + ")"
					}
					continue
				}
				if t.pkgs[pdir] == b.entryPkg {
					if target, ok := t.resolveSpecifier(dir, r.spec, importConds); ok && isJSFile(target) {
						add(target, why)
					}
					continue
				}
				if _, seen := w.packages[pdir]; !seen {
					w.packages[pdir] = why
				}
			}
		}
	}
	return w, nil
}

// pathResolve matches path.resolve and resolve imported from node:path
// (as esbuild renames it: resolve14): they compute a path, they load
// nothing.
var pathResolve = regexp.MustCompile(`^((node_)?path\d*\.|posix\.|win32\.)?resolve\d*$`)

// invisibleLoader reports whether a call with this callee loads a module
// where esbuild does not look: anything but a plain require() or import()
// that requires (require2, createRequire(...)), not a resolve.
func invisibleLoader(callee string) bool {
	lc := strings.ToLower(callee)
	if callee == "" || callee == "require" || callee == "import" || strings.HasSuffix(lc, "resolve") {
		return false
	}
	return strings.Contains(lc, "require")
}

// planUpstream keeps an upstream bundle as its package ships it: its
// modules, the entry package's package.json and assets (the files its code
// finds next to itself: themes, images, templates), the packages the
// modules load by name with their dependencies, whole, and everything
// outside node_modules. The rest goes: the package's unbundled modules and
// every package nothing loads.
func (b *bundler) planUpstream(w *upstreamWalk) (*plan, *Upstream) {
	t := b.t
	pl := &plan{writes: map[string]newFile{}, shims: map[string]string{}, kept: map[string]string{}}
	// The packages loaded by name, and their installed dependencies.
	keepPkg := map[string]string{}
	queue := slices.Sorted(maps.Keys(w.packages))
	for _, d := range queue {
		keepPkg[d] = "loaded by name by the upstream bundle (" + w.packages[d] + ")"
	}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		p := t.pkgs[d]
		if p == nil || p.json == nil {
			continue
		}
		for _, m := range []map[string]string{p.json.Dependencies, p.json.OptionalDependencies, p.json.PeerDependencies} {
			for _, dep := range slices.Sorted(maps.Keys(m)) {
				if dd, ok := t.lookupPackage(p.dir, dep); ok && t.pkgs[dd] != b.entryPkg {
					if _, seen := keepPkg[dd]; !seen {
						keepPkg[dd] = "dependency of " + p.name
						queue = append(queue, dd)
					}
				}
			}
		}
	}
	keepReq := b.requestedKeeps()
	ep := b.entryPkg
	for _, f := range t.files {
		if t.links[f] {
			continue
		}
		p := t.ownerOf(f)
		inPkg := f
		if p != nil && p.dir != "" {
			inPkg = strings.TrimPrefix(f, p.dir+"/")
		}
		switch {
		case keepReq(f):
			pl.kept[f] = "requested"
		case w.modules[f] != "":
			pl.kept[f] = "upstream-bundle: " + w.modules[f]
		case w.assets[f] != "":
			pl.kept[f] = w.assets[f]
		case !inNodeModules(f):
			if path.Base(f) == "package.json" {
				pl.kept[f] = "package-json"
			} else if p != ep || !isModuleSource(f) {
				pl.kept[f] = "outside-node_modules"
			}
		case p == nil:
		case p == ep:
			switch {
			case path.Base(f) == "package.json" && (path.Dir(f) == p.dir || t.nearestPkgJSON(path.Dir(b.entry)) == f):
				pl.kept[f] = "package-json"
			case prunable(inPkg):
			case path.Ext(f) == ".node":
				pl.kept[f] = "native-addon"
			case path.Ext(f) == ".wasm":
				pl.kept[f] = "wasm"
			case !isModuleSource(f) && path.Base(f) != "package.json":
				pl.kept[f] = "asset"
			case isModuleSource(f) && b.inAssetDir(f, p):
				pl.kept[f] = "asset"
			}
		case keepPkg[p.dir] != "":
			switch {
			case path.Base(f) == "package.json" && path.Dir(f) == p.dir:
			case prunable(inPkg):
				continue
			case isNativeBinary(f) && foreignBinary(inPkg, b.o.Platform, b.o.Arch):
				continue
			}
			pl.kept[f] = "external-package: " + keepPkg[p.dir]
		}
	}
	for _, f := range t.files {
		if !t.links[f] {
			continue
		}
		if keepReq(f) || !inNodeModules(f) {
			pl.kept[f] = "outside-node_modules"
			continue
		}
		if target, err := os.Readlink(t.abs(f)); err == nil && !strings.HasPrefix(target, "/") {
			if pl.survives(path.Join(path.Dir(f), target), t) {
				if path.Base(path.Dir(f)) == ".bin" {
					pl.kept[f] = "bin-link"
				} else {
					pl.kept[f] = "symlink"
				}
			}
		}
	}
	up := &Upstream{Reason: w.reason, Modules: len(w.modules), Packages: []string{}, Located: []Kept{}}
	for _, spec := range slices.Sorted(maps.Keys(w.located)) {
		up.Located = append(up.Located, Kept{Path: spec, Reason: "located by " + w.located[spec]})
	}
	for _, d := range slices.Sorted(maps.Keys(keepPkg)) {
		if p := t.pkgs[d]; p != nil {
			up.Packages = append(up.Packages, p.dir)
		}
	}
	return pl, up
}

// inAssetDir reports whether module f of package p sits in a folder that
// directly holds an asset (an HTML template's script, a vendored browser
// library read as text), below the package's dist or root.
func (b *bundler) inAssetDir(f string, p *pkg) bool {
	for d := path.Dir(f); d != p.dir && under(d, p.dir) && d != "." && d != ""; d = path.Dir(d) {
		if b.isAssetDir(d, p) {
			return true
		}
	}
	return false
}
