package footprint

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"
)

// The closure findings, by test. The import graph answers the first group;
// a closure it refuses is not scanned further (as the seed cut it).
const (
	findTypeScript   = "typescript-closure"    // a .ts/.mts/.cts/.tsx module
	findJSON         = "json-module"           // a JSON module
	findEntryImports = "entry-imports-entry"   // an extension imports another
	findUnresolved   = "unresolved-import"     // an import the vendored tree does not resolve
	findUnparsable   = "unparsable"            // a module esbuild cannot read
	findDynamic      = "dynamic-import"        // import() of anything
	findRequire      = "require-call"          // require() of anything
	findDiscovery    = "runtime-discovery"     // require.resolve, createRequire, import.meta.resolve
	findOwnFiles     = "locates-own-files"     // __dirname, __filename, import.meta.url
	findCommonJS     = "commonjs-entry-import" // a CommonJS module an extension imports directly
	findLeftImport   = "bundled-import-left"   // a file outside the closure imports one of its modules
	findNative       = "native-addon"
	findWasm         = "wasm-asset"
	findScript       = "install-script"
)

// metafile is the part of esbuild's metafile the closure reads.
type metafile struct {
	Inputs map[string]struct {
		Format  string `json:"format"`
		Imports []struct {
			Path     string `json:"path"`
			Kind     string `json:"kind"`
			External bool   `json:"external"`
		} `json:"imports"`
	} `json:"inputs"`
	Outputs map[string]struct {
		EntryPoint string   `json:"entryPoint"`
		Exports    []string `json:"exports"`
	} `json:"outputs"`
}

// graph is a closure's import graph: its modules (slash, relative to the
// payload root) and the modules the entries import directly.
type graph struct {
	modules []string
	direct  []string
}

// HostModules are the modules Pi supplies to the extensions it loads
// (its virtual modules, Pi 1.6; docs/packages.md of Pi: "declare the
// host-provided packages in peerDependencies"), under both scopes.
var HostModules = []string{
	"@earendil-works/pi-coding-agent", "@earendil-works/pi-agent-core", "@earendil-works/pi-tui", "@earendil-works/pi-ai",
	"@mariozechner/pi-coding-agent", "@mariozechner/pi-agent-core", "@mariozechner/pi-tui", "@mariozechner/pi-ai",
	"typebox", "@sinclair/typebox",
}

// hostExternals are the imports a closure never holds: the host modules
// and the package's peers (what its author says the host supplies), with
// their subpaths.
func hostExternals(p Package) []string {
	lp := p.Lock.Packages["node_modules/"+p.Name]
	names := slices.Concat(HostModules, slices.Collect(maps.Keys(lp.PeerDeps)))
	slices.Sort(names)
	var out []string
	for _, n := range slices.Compact(names) {
		out = append(out, n, n+"/*")
	}
	return out
}

// graphBuild is one esbuild bundle pass over entries (payload-relative)
// with a metafile and nothing written: the import graph the closure tests
// read, the host modules external.
func graphBuild(root string, p Package, entries []string) api.BuildResult {
	return api.Build(api.BuildOptions{
		EntryPoints: entries, Bundle: true, Write: false, Metafile: true,
		Platform: api.PlatformNode, Format: api.FormatESModule, Outdir: "out",
		AbsWorkingDir: root, External: hostExternals(p), LogLevel: api.LogLevelSilent,
	})
}

// importGraph runs the closure's import graph: one esbuild bundle pass
// over the entries with a metafile, nothing written.
func importGraph(root string, p Package) (graph, []string, string) {
	res := graphBuild(root, p, p.Entries)
	if len(res.Errors) > 0 {
		why := findUnparsable
		for _, e := range res.Errors {
			if strings.HasPrefix(e.Text, "Could not resolve") {
				why = findUnresolved
			}
		}
		// The module kinds still tell (a TypeScript closure whose import
		// does not resolve is both).
		// esbuild writes no metafile for a failed build: the entries'
		// own kinds still tell (a TypeScript closure whose import does not
		// resolve is both).
		found := []string{why}
		for _, e := range p.Entries {
			if isTypeScript(e) {
				found = append(found, findTypeScript)
				break
			}
		}
		return graph{}, found, res.Errors[0].Text
	}
	g, found := readGraph(res.Metafile, p)
	return g, found, ""
}

func readGraph(meta string, p Package) (graph, []string) {
	var m metafile
	if err := json.Unmarshal([]byte(meta), &m); err != nil {
		return graph{}, []string{findUnparsable}
	}
	entries := map[string]bool{}
	for _, e := range p.Entries {
		entries[e] = true
	}
	var g graph
	found := map[string]bool{}
	direct := map[string]bool{}
	for _, in := range slices.Sorted(maps.Keys(m.Inputs)) {
		mod := m.Inputs[in]
		g.modules = append(g.modules, in)
		switch ext := path.Ext(in); {
		case isTypeScript(in):
			found[findTypeScript] = true
		case ext == ".json":
			found[findJSON] = true
		case isCode(in):
		default:
			found[findUnparsable] = true
		}
		for _, imp := range mod.Imports {
			switch imp.Kind {
			case "dynamic-import":
				found[findDynamic] = true
			case "require-call":
				found[findRequire] = true
			case "require-resolve":
				found[findDiscovery] = true
			}
			if imp.External {
				continue
			}
			if entries[imp.Path] {
				found[findEntryImports] = true
			}
			if entries[in] {
				direct[imp.Path] = true
			}
		}
	}
	for d := range direct {
		if m.Inputs[d].Format == "cjs" {
			found[findCommonJS] = true
		}
	}
	g.direct = slices.Sorted(maps.Keys(direct))
	return g, slices.Sorted(maps.Keys(found))
}

var (
	ownFilesRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`__dirname|__filename|import\.meta\.url`) })
	discoveryJS = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`require\.resolve\b|createRequire\b|import\.meta\.resolve\b`)
	})
	dynamicJS = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bimport\s*\(`) })
)

// scanSource reads one module's code without its comments (an esbuild
// transform) for what an import graph cannot see: code that locates its
// own files, finds modules at run time or imports dynamically; a module
// esbuild cannot parse is unparsable. The closure tests and the sharing
// conditions both ask it.
func scanSource(src []byte) []string {
	res := api.Transform(string(src), api.TransformOptions{Loader: api.LoaderJS, MinifyWhitespace: true, LegalComments: api.LegalCommentsNone, LogLevel: api.LogLevelSilent})
	if len(res.Errors) > 0 {
		return []string{findUnparsable}
	}
	var found []string
	if ownFilesRE().Match(res.Code) {
		found = append(found, findOwnFiles)
	}
	if discoveryJS().Match(res.Code) {
		found = append(found, findDiscovery)
	}
	if dynamicJS().Match(res.Code) {
		found = append(found, findDynamic)
	}
	return found
}

// scanCode scans every module of the closure (scanSource).
func scanCode(root string, g graph) []string {
	found := map[string]bool{}
	for _, mod := range g.modules {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(mod)))
		if err != nil {
			found[findUnparsable] = true
			continue
		}
		for _, f := range scanSource(src) {
			found[f] = true
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// removedBy are the modules bundling would remove: the closure's modules
// but the entries (the locked bytes) and the modules they import directly
// (which become forwarding modules).
func removedBy(p Package, g graph) map[string]bool {
	keep := map[string]bool{}
	for _, e := range p.Entries {
		keep[e] = true
	}
	for _, d := range g.direct {
		keep[d] = true
	}
	out := map[string]bool{}
	for _, m := range g.modules {
		if !keep[m] {
			out[m] = true
		}
	}
	return out
}

// leftImports says whether a code file of the package's tree outside the
// closure imports a module bundling would remove (then it would import a
// file that is gone). One esbuild pass over those files; one that cannot
// be read cannot be cleared.
func leftImports(root string, p Package, g graph, removed map[string]bool) bool {
	in := map[string]bool{}
	for _, m := range g.modules {
		in[m] = true
	}
	var others []string
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(p.Dir)), func(full string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isCode(d.Name()) {
			return nil
		}
		rel, _ := filepath.Rel(root, full)
		if rel = filepath.ToSlash(rel); !in[rel] {
			others = append(others, rel)
		}
		return nil
	})
	if len(others) == 0 || len(removed) == 0 {
		return false
	}
	res := graphBuild(root, p, others)
	var m metafile
	if len(res.Errors) > 0 || json.Unmarshal([]byte(res.Metafile), &m) != nil {
		return true
	}
	for _, mod := range m.Inputs {
		for _, imp := range mod.Imports {
			if removed[imp.Path] {
				return true
			}
		}
	}
	return false
}

// BundleDir is where a bundled closure's chunks live in its package.
const BundleDir = ".bundle"

// bundleClosure bundles a bundle-safe closure: the modules its entries
// import directly become entry points of one esbuild build with code
// splitting into <package>/.bundle; each of those files is replaced by a
// module of the same name and exports forwarding to its output, and the
// other modules of the closure are removed. The entries stay the locked
// bytes. It returns the files written and removed.
func bundleClosure(root string, p Package, g graph, removed map[string]bool) (written, gone int, err error) {
	abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	out := p.Dir + "/" + BundleDir
	res := api.Build(api.BuildOptions{
		EntryPoints: g.direct, Bundle: true, Splitting: true, Write: true, Metafile: true,
		Platform: api.PlatformNode, Format: api.FormatESModule, Outdir: abs(out),
		OutExtension: map[string]string{".js": ".mjs"}, EntryNames: "[name]-[hash]", ChunkNames: "chunk-[hash]",
		AbsWorkingDir: root, External: hostExternals(p), LogLevel: api.LogLevelSilent, Charset: api.CharsetUTF8,
	})
	if len(res.Errors) > 0 {
		return 0, 0, fmt.Errorf("footprint: bundling the closure of %s: %s", p.Name, res.Errors[0].Text)
	}
	var m metafile
	if err := json.Unmarshal([]byte(res.Metafile), &m); err != nil {
		return 0, 0, err
	}
	written = len(res.OutputFiles)
	for o, info := range m.Outputs {
		if info.EntryPoint == "" {
			continue
		}
		to, err := filepath.Rel(filepath.Dir(abs(info.EntryPoint)), abs(o))
		if err != nil {
			return 0, 0, err
		}
		to = filepath.ToSlash(to)
		if !strings.HasPrefix(to, ".") {
			to = "./" + to
		}
		body := fmt.Sprintf("export * from %q;\n", to)
		if slices.Contains(info.Exports, "default") {
			body += fmt.Sprintf("export { default } from %q;\n", to)
		}
		if err := os.WriteFile(abs(info.EntryPoint), []byte(body), 0o644); err != nil {
			return 0, 0, err
		}
	}
	for _, r := range slices.Sorted(maps.Keys(removed)) {
		if err := os.Remove(abs(r)); err != nil {
			return 0, 0, err
		}
		gone++
	}
	return written, gone, nil
}

func isTypeScript(p string) bool {
	switch path.Ext(p) {
	case ".ts", ".mts", ".cts", ".tsx":
		return true
	}
	return false
}
