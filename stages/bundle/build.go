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
	"sync"

	"github.com/evanw/esbuild/pkg/api"
)

// Per-module stand-ins. A module's own location is what import.meta.url,
// import.meta.dirname/filename, __dirname and __filename say; in a chunk
// they would name the chunk. esbuild replaces each (a define) with a
// variable that the module declares on its first line, computed from the
// module's original path relative to the root, so code that finds files
// next to itself still finds them where they were.
const (
	varMetaURL      = "__piship_meta_url"
	varMetaDirname  = "__piship_meta_dirname"
	varMetaFilename = "__piship_meta_filename"
	varMetaResolve  = "__piship_meta_resolve"
	varDirname      = "__piship_cjs_dirname"
	varFilename     = "__piship_cjs_filename"
	varImport       = "__piship_import"
)

var defines = map[string]string{
	"import.meta.url":      varMetaURL,
	"import.meta.dirname":  varMetaDirname,
	"import.meta.filename": varMetaFilename,
	"import.meta.resolve":  varMetaResolve,
	"__dirname":            varDirname,
	"__filename":           varFilename,
}

// passResult is one esbuild run.
type passResult struct {
	outputs    []api.OutputFile
	meta       *metafile
	scans      map[string]*jsScan  // by module path
	nativeRefs map[string]string   // .node/.wasm files imported by path -> reason
	unresolved map[string][]string // bare specifier -> importers
}

// resolveMarker tags esbuild resolutions the plugin asked for itself.
type resolveMarker struct{}

func (b *bundler) build() (*passResult, error) {
	t := b.t
	res := &passResult{
		scans:      map[string]*jsScan{},
		nativeRefs: map[string]string{},
		unresolved: map[string][]string{},
	}
	var mu sync.Mutex
	var pluginErr error
	fail := func(err error) {
		mu.Lock()
		if pluginErr == nil {
			pluginErr = err
		}
		mu.Unlock()
	}

	// Entry points, in path order, each with a readable unique output name.
	var eps []api.EntryPoint
	used := map[string]bool{}
	facade := b.facadeSource()
	if facade != "" {
		name := entryOutputName(t, path.Join(b.entryPkg.dir, "public"))
		used[name] = true
		eps = append(eps, api.EntryPoint{InputPath: facadeNamespace, OutputPath: name})
	}
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		if b.entries[f].facade {
			continue
		}
		name := entryOutputName(t, f)
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", entryOutputName(t, f), i)
		}
		used[name] = true
		eps = append(eps, api.EntryPoint{InputPath: t.abs(f), OutputPath: name})
	}

	outdirAbs := t.abs(b.outdir)
	plugin := api.Plugin{Name: "piship-bundle", Setup: func(pb api.PluginBuild) {
		pb.OnResolve(api.OnResolveOptions{Filter: "^" + facadeNamespace + "$"}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if a.Kind != api.ResolveEntryPoint {
				return api.OnResolveResult{}, nil
			}
			return api.OnResolveResult{Path: "public", Namespace: facadeNamespace}, nil
		})
		pb.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: facadeNamespace}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
			return api.OnLoadResult{Contents: &facade, Loader: api.LoaderJS, ResolveDir: t.root}, nil
		})
		pb.OnResolve(api.OnResolveOptions{Filter: `.*`}, func(a api.OnResolveArgs) (api.OnResolveResult, error) {
			if _, ok := a.PluginData.(resolveMarker); ok || a.Kind == api.ResolveEntryPoint || a.Namespace != "file" {
				return api.OnResolveResult{}, nil
			}
			fromDir, ok := t.rel(a.ResolveDir)
			if !ok {
				return api.OnResolveResult{}, nil
			}
			spec := a.Path
			switch {
			case isRelative(spec) || strings.HasPrefix(spec, "/"):
				// .node and .wasm files of bundled code stay files where
				// they are; the import is re-pointed from the chunks' folder.
				ext := path.Ext(strings.SplitN(spec, "?", 2)[0])
				if ext != ".node" && ext != ".wasm" {
					return api.OnResolveResult{}, nil
				}
				target := path.Join(fromDir, spec)
				if strings.HasPrefix(spec, "/") {
					r, ok := t.rel(filepath.FromSlash(spec))
					if !ok {
						return api.OnResolveResult{Path: spec, External: true}, nil
					}
					target = r
				}
				if t.isSet[target] {
					why := "native-addon"
					if ext == ".wasm" {
						why = "wasm"
					}
					mu.Lock()
					res.nativeRefs[target] = why
					mu.Unlock()
				}
				return api.OnResolveResult{Path: relPath(b.outdir, target), External: true}, nil
			case isBare(spec):
				name := packageName(spec)
				pdir, found := t.lookupPackage(fromDir, name)
				if !found {
					if owner := t.ownerOf(path.Join(fromDir, "x")); owner != nil && owner.name == name {
						return api.OnResolveResult{}, nil // self-reference
					}
					if imp, ok := t.rel(a.Importer); ok && !isBuiltin(spec) {
						mu.Lock()
						res.unresolved[spec] = appendUnique(res.unresolved[spec], imp)
						mu.Unlock()
					}
					// Builtins, and optional packages npm did not install:
					// Node decides at run time, as it did before.
					return api.OnResolveResult{Path: spec, External: true}, nil
				}
				p := t.pkgs[pdir]
				if p == nil || p.external == "" {
					return api.OnResolveResult{}, nil
				}
				if odir, ok := t.lookupPackage(b.outdir, name); ok && odir == pdir {
					return api.OnResolveResult{Path: spec, External: true}, nil
				}
				// The chunks would find another copy by name: point at
				// the file this importer gets.
				r := pb.Resolve(spec, api.ResolveOptions{Kind: a.Kind, ResolveDir: a.ResolveDir, Importer: a.Importer, Namespace: a.Namespace, PluginData: resolveMarker{}})
				if len(r.Errors) > 0 {
					return api.OnResolveResult{Path: spec, External: true}, nil
				}
				rel, ok := t.rel(r.Path)
				if !ok {
					return api.OnResolveResult{Path: spec, External: true}, nil
				}
				return api.OnResolveResult{Path: relPath(b.outdir, rel), External: true}, nil
			}
			return api.OnResolveResult{}, nil
		})
		pb.OnLoad(api.OnLoadOptions{Filter: `\.(js|mjs|cjs)$`, Namespace: "file"}, func(a api.OnLoadArgs) (api.OnLoadResult, error) {
			rel, ok := t.rel(a.Path)
			if !ok {
				return api.OnLoadResult{}, nil
			}
			lm, err := b.loadModule(rel)
			if err != nil {
				fail(err)
				return api.OnLoadResult{}, err
			}
			mu.Lock()
			res.scans[rel] = lm.scan
			mu.Unlock()
			out := lm.contents
			return api.OnLoadResult{Contents: &out, Loader: api.LoaderJS, ResolveDir: filepath.Dir(a.Path)}, nil
		})
	}}

	r := api.Build(api.BuildOptions{
		AbsWorkingDir:       t.root,
		EntryPointsAdvanced: eps,
		Outdir:              outdirAbs,
		EntryNames:          "[name]-[hash]",
		ChunkNames:          "chunk-[hash]",
		OutExtension:        map[string]string{".js": ".mjs"},
		Bundle:              true,
		Splitting:           true,
		Format:              api.FormatESModule,
		Platform:            api.PlatformNode,
		Engines:             []api.Engine{{Name: api.EngineNode, Version: "20"}},
		Conditions:          []string{}, // Node's own: no "module" condition
		MainFields:          []string{"main"},
		ResolveExtensions:   []string{".js", ".json", ".node"},
		Define:              defines,
		MinifyWhitespace:    true,
		MinifySyntax:        true,
		KeepNames:           true,
		Charset:             api.CharsetUTF8,
		LegalComments:       api.LegalCommentsEndOfFile,
		Sourcemap:           api.SourceMapNone,
		Metafile:            true,
		Write:               false,
		LogLevel:            api.LogLevelSilent,
		Plugins:             []api.Plugin{plugin},
	})
	if pluginErr != nil {
		return nil, fmt.Errorf("bundle: %w", pluginErr)
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("bundle: esbuild: %s", formatMessages(r.Errors))
	}
	meta, err := parseMetafile(r.Metafile)
	if err != nil {
		return nil, err
	}
	// Metafile paths are relative to the root already; normalise slashes.
	res.meta = meta
	res.outputs = r.OutputFiles
	sort.Slice(res.outputs, func(i, j int) bool { return res.outputs[i].Path < res.outputs[j].Path })
	return res, nil
}

// facadeNamespace names the facade entry (and its esbuild namespace).
const facadeNamespace = "piship-facade"

// facadeSource is the facade module: it re-exports every member's exports
// under aliases ("__pf<member>_<export>"), in path order.
func (b *bundler) facadeSource() string {
	var sb strings.Builder
	i := 0
	for _, f := range slices.Sorted(maps.Keys(b.entries)) {
		e := b.entries[f]
		if !e.facade {
			continue
		}
		var parts []string
		for j, x := range e.exports {
			parts = append(parts, exportName(x)+" as "+facadeAlias(i, j))
		}
		if len(parts) == 0 {
			sb.WriteString("import " + jsString(b.t.abs(f)) + ";\n")
		} else {
			sb.WriteString("export { " + strings.Join(parts, ", ") + " } from " + jsString(b.t.abs(f)) + ";\n")
		}
		i++
	}
	return sb.String()
}

func facadeAlias(member, export int) string {
	return fmt.Sprintf("__pf%d_%d", member, export)
}

// exportName writes an export name as an identifier or, when it is not
// one, as a string (ES2022 arbitrary module namespace names).
func exportName(x string) string {
	ok := x != ""
	for i, r := range x {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			ok = false
		}
	}
	if ok {
		return x
	}
	return jsString(x)
}

// loadedModule is a module as handed to esbuild, kept across runs: the
// source does not change between them.
type loadedModule struct {
	scan     *jsScan
	contents string
}

// loadModule reads, scans and rewrites module rel (once per Bundle).
func (b *bundler) loadModule(rel string) (*loadedModule, error) {
	b.loadMu.Lock()
	lm, ok := b.loaded[rel]
	b.loadMu.Unlock()
	if ok {
		return lm, nil
	}
	data, err := os.ReadFile(b.t.abs(rel))
	if err != nil {
		return nil, err
	}
	src := strings.TrimPrefix(string(data), "\uFEFF")
	sc := scanJS(src)
	lm = &loadedModule{scan: sc, contents: rewriteModule(src, rel, sc, b.t.isESM(rel))}
	b.loadMu.Lock()
	b.loaded[rel] = lm
	b.loadMu.Unlock()
	return lm, nil
}

// entryOutputName is the readable part of an entry's output file name: the
// module's base name, prefixed by its package's when it is not the entry
// package's ("pi-tui.index").
func entryOutputName(t *tree, f string) string {
	base := strings.TrimSuffix(path.Base(f), path.Ext(f))
	if p := t.ownerOf(f); p != nil && p.name != "" {
		rel := strings.TrimSuffix(strings.TrimPrefix(f, p.dir+"/"), path.Ext(f))
		pn := p.name
		if i := strings.LastIndex(pn, "/"); i >= 0 {
			pn = pn[i+1:]
		}
		parts := strings.Split(rel, "/")
		// drop a leading dist/lib/build/src folder and a trailing "index"
		if len(parts) > 1 {
			switch parts[0] {
			case "dist", "lib", "build", "src", "esm", "cjs":
				parts = parts[1:]
			}
		}
		base = pn + "." + strings.Join(parts, ".")
	}
	var sb strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			sb.WriteRune(r)
		} else {
			sb.WriteByte('_')
		}
	}
	return sb.String()
}

// rewriteModule prepares one module for the bundle: it declares the
// per-module stand-ins its code uses and routes computed import() calls
// through a loader that resolves relative names from the module's original
// place. esm says whether Node loads the module as an ES module (by its
// extension and package type): only a CommonJS module gets __dirname and
// __filename. The first line is extended, not added, so line numbers stay.
func rewriteModule(src, rel string, sc *jsScan, esm bool) string {
	// Computed import(): "import" -> "__piship_import", from the end.
	if len(sc.dynImports) > 0 {
		pos := append([]int(nil), sc.dynImports...)
		sort.Sort(sort.Reverse(sort.IntSlice(pos)))
		for _, p := range pos {
			if strings.HasPrefix(src[p:], "import") {
				src = src[:p] + varImport + src[p+len("import"):]
			}
		}
	}
	lit := jsString(rel)
	var decls []string
	add := func(name, helper string) {
		decls = append(decls, name+"=/* @__PURE__ */"+helper+"("+lit+")")
	}
	if strings.Contains(src, "import.meta") || sc.metaURL || sc.metaDirname || sc.metaFilename || sc.metaResolve {
		add(varMetaURL, "__pishipURL")
		add(varMetaDirname, "__pishipMetaDirname")
		add(varMetaFilename, "__pishipMetaFilename")
		add(varMetaResolve, "__pishipResolver")
	}
	if !esm && (sc.dirname || sc.filename || strings.Contains(src, "__dirname") || strings.Contains(src, "__filename")) {
		add(varDirname, "__pishipDirname")
		add(varFilename, "__pishipFilename")
	}
	if len(sc.dynImports) > 0 {
		add(varImport, "__pishipImporter")
	}
	if len(decls) == 0 {
		return src
	}
	decl := "var " + strings.Join(decls, ",") + ";"
	if strings.HasPrefix(src, "#!") {
		nl := strings.IndexByte(src, '\n')
		if nl < 0 {
			return src + "\n" + decl
		}
		return src[:nl+1] + decl + src[nl+1:]
	}
	return decl + src
}

// banner is what every output file starts with (after a hashbang): the
// require that CommonJS code inside the ESM chunks needs, and the helpers
// the per-module stand-ins call. rootRel is the root relative to the
// output's folder.
func banner(rootRel string) string {
	q, _ := json.Marshal(rootRel)
	return `import{createRequire as __pishipCreateRequire}from"node:module";` +
		`import{fileURLToPath as __pishipFileURLToPath,pathToFileURL as __pishipPathToFileURL}from"node:url";` +
		`import{dirname as __pishipPathDirname,join as __pishipPathJoin}from"node:path";` +
		`const require=__pishipCreateRequire(import.meta.url);` +
		`const __pishipRoot=__pishipPathJoin(__pishipPathDirname(__pishipFileURLToPath(import.meta.url)),` + string(q) + `);` +
		`function __pishipFilename(p){return __pishipPathJoin(__pishipRoot,p)}` +
		`function __pishipDirname(p){return __pishipPathDirname(__pishipFilename(p))}` +
		`function __pishipURL(p){return __pishipPathToFileURL(__pishipFilename(p)).href}` +
		`function __pishipMetaFilename(p){return import.meta.filename===void 0?void 0:__pishipFilename(p)}` +
		`function __pishipMetaDirname(p){return import.meta.dirname===void 0?void 0:__pishipDirname(p)}` +
		`function __pishipRel(s,u){return typeof s==="string"&&(s.startsWith("./")||s.startsWith("../"))?new URL(s,u).href:s}` +
		`function __pishipResolver(p){const u=__pishipURL(p);return(s,...r)=>import.meta.resolve(__pishipRel(s,u),...r)}` +
		`function __pishipImporter(p){const u=__pishipURL(p);return(s,o)=>o===void 0?import(__pishipRel(s,u)):import(__pishipRel(s,u),o)}` +
		"\n"
}

func formatMessages(msgs []api.Message) string {
	var parts []string
	for i, m := range msgs {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("... and %d more", len(msgs)-10))
			break
		}
		s := m.Text
		if m.Location != nil {
			s = fmt.Sprintf("%s:%d:%d: %s", m.Location.File, m.Location.Line, m.Location.Column, s)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	list = append(list, s)
	sort.Strings(list)
	return list
}
