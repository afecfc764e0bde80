// Package footprint is what a build does to the vendored Pi packages of a
// payload beyond placing them (the seed's "Pi package dependencies and
// closures"): it decides, per package, whether its extensions' closure
// could be bundled, and shares identical dependencies between the places
// that hold a copy, recording every decision in
// metadata/pi-package-footprint.json.
//
// Closures. A closure is bundle-safe only when nothing in it needs its
// files to exist (closure.go). Its import graph (one esbuild pass over the
// extension entries, the package's peers external: Pi supplies them)
// refuses a TypeScript or JSON module (typescript-closure, json-module:
// every extension Pi packages ship today is TypeScript, which Pi compiles
// with jiti), an extension importing another (entry-imports-entry), an
// import the vendored tree does not resolve (unresolved-import), import()
// or require() (dynamic-import, require-call), and a CommonJS module an
// extension imports directly (commonjs-entry-import); a closure it
// refuses is not scanned further. The code scans (comments removed)
// refuse code that locates its own files (locates-own-files) or finds
// modules at run time (runtime-discovery), and a file outside the closure
// that imports one of its modules (bundled-import-left); the tree refuses
// a native addon, a WebAssembly file or an install script. A closure that
// passes every test is bundled: the modules the entries import directly
// become esbuild entry points (code splitting, ESM) written to
// <package>/.bundle, each replaced by a module of the same name and
// exports forwarding there, and the other modules of the closure are
// removed; the entries keep their locked bytes. Any other closure keeps
// its files, and the report says which tests failed.
//
// Sharing. Copies of one dependency (the same name, version and registry
// integrity in the packages' own locks) are shared only when every copy is
// the same package: no dependencies of its own (they would resolve from
// where the copy sits), an exports map (so the reachable files are
// known), no native code or WebAssembly, no install script, os/cpu field
// or bin, byte-identical files and execute bits, every code file parses
// (esbuild) and none finds modules or files at run time (require.resolve,
// createRequire, __dirname, __filename, import.meta.url, import()). The
// real files then live once in pi-packages/.shared/<name>@<version>-<digest>;
// each place keeps its package.json, its licence files, the data files
// its exports name, and a one-line module for every code file its exports
// reach, forwarding to the shared file (export * and export { default }
// for ESM, module.exports = require(...) for CommonJS). Node resolves the
// dependency where it did, through the same exports map, and lands in the
// shared file. The SBOM and the notices are made from the installed trees,
// not the payload, so they list the same packages at the same paths with
// sharing on or off; so does the lock, which sharing never reads.
package footprint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/footprint/report"
)

// ReportName is the report's path in the payload (report.Name); SharedDir
// holds the shared dependencies' real files.
const (
	ReportName = report.Name
	SharedDir  = distribution.PiPackagesDir + "/.shared"
)

// Package is one vendored Pi package as placed in the payload.
type Package struct {
	Name string
	// Dir is its project in the payload (pi-packages/<name>), slash.
	Dir  string
	Lock *distribution.PackageLock
	// Entries are its extension entry files, slash, relative to the
	// payload root.
	Entries []string
	// Pretranspile writes the TypeScript modules its extensions import
	// as JavaScript beside them (pretranspile.go).
	Pretranspile bool
}

// The report's types live in package report, which the doctor reads
// without the esbuild this package links.
type (
	Closure = report.Closure
	Shared  = report.Shared
	Report  = report.Report
)

// Apply decides the closures of pkgs under root (the payload) and, with
// change, bundles the bundle-safe ones and shares the identical
// dependencies of the others' trees, then writes the report there.
// Without change it writes only the report: every vendored file stays as
// installed.
func Apply(root string, pkgs []Package, change bool) (*Report, error) {
	r := &Report{Schema: report.Schema, Sharing: change, Closures: make([]Closure, len(pkgs)), Shared: []Shared{}, Kept: map[string]int{}}
	// The import graphs and scans of the packages run side by side (each
	// is esbuild over its own tree); a bundled closure writes only below
	// its own package.
	errs := make([]error, len(pkgs))
	var wg sync.WaitGroup
	for i, p := range pkgs {
		wg.Go(func() { r.Closures[i], errs[i] = closureOf(root, p, change) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if change {
		var unbundled []Package
		for i, p := range pkgs {
			if r.Closures[i].Decision != "bundled" {
				unbundled = append(unbundled, p)
			}
		}
		if err := share(r, root, unbundled); err != nil {
			return nil, err
		}
	}
	data, err := canon.JSON(r)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "metadata"), 0o755); err != nil {
		return nil, err
	}
	return r, os.WriteFile(filepath.Join(root, filepath.FromSlash(ReportName)), data, 0o644)
}

// closureOf runs a package's closure tests: the import graph, and when
// it passes, the code scans and the files left outside the closure, then
// the tests the installed tree answers. A closure that passes every test
// is bundled when bundle is set (else kept with footprint-off).
func closureOf(root string, p Package, bundle bool) (Closure, error) {
	c := Closure{Package: p.Name, Decision: "vendored"}
	var g graph
	var found []string
	if ts := slices.ContainsFunc(p.Entries, isTypeScript); ts && !p.Pretranspile {
		// A TypeScript entry refuses the closure already; the graph
		// (esbuild over every module it reaches: most of the footprint's
		// time on the developer example) would only add findings.
		found = []string{findTypeScript}
	} else {
		var detail string
		g, found, detail = importGraph(root, p)
		c.Detail = detail
	}
	if len(found) == 0 {
		found = scanCode(root, g)
	}
	removed := removedBy(p, g)
	if len(found) == 0 && leftImports(root, p, g, removed) {
		found = append(found, findLeftImport)
	}
	native, wasm := false, false
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(p.Dir)), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			native = native || strings.HasSuffix(d.Name(), ".node")
			wasm = wasm || strings.HasSuffix(d.Name(), ".wasm")
		}
		return nil
	})
	if native {
		found = append(found, findNative)
	}
	if wasm {
		found = append(found, findWasm)
	}
	for _, lp := range p.Lock.Packages {
		if lp.HasInstallScript && !lp.Dev {
			found = append(found, findScript)
			break
		}
	}
	slices.Sort(found)
	c.Findings = slices.Compact(found)
	c.Modules = len(g.modules)
	if len(c.Findings) > 0 {
		// After the decision, so a TypeScript closure is still reported
		// typescript-closure and kept.
		if p.Pretranspile && bundle {
			n, err := pretranspile(root, p, g)
			c.Pretranspiled = n
			return c, err
		}
		return c, nil
	}
	if !bundle {
		c.Findings = []string{"footprint-off"}
		return c, nil
	}
	var err error
	c.Decision = "bundled"
	c.Findings = []string{}
	c.Written, c.Removed, err = bundleClosure(root, p, g, removed)
	return c, err
}

// copyOf is one installed copy of a dependency.
type copyOf struct {
	place string // slash, relative to the payload root
	lp    distribution.LockPackage
}

func share(r *Report, root string, pkgs []Package) error {
	groups := map[string][]copyOf{}
	for _, p := range pkgs {
		for k, lp := range p.Lock.Packages {
			if k == "" || lp.Dev || lp.Link || !strings.Contains("/"+k, "/node_modules/") {
				continue
			}
			place := p.Dir + "/" + k
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(place))); err != nil {
				continue // pruned (another platform) or not installed
			}
			g := distribution.PackageName(k, lp) + "@" + lp.Version + "#" + lp.Integrity
			groups[g] = append(groups[g], copyOf{place, lp})
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		copies := groups[g]
		slices.SortFunc(copies, func(a, b copyOf) int { return strings.Compare(a.place, b.place) })
		if len(copies) < 2 {
			r.Kept["single-copy"]++
			continue
		}
		name := g[:strings.LastIndex(g[:strings.Index(g, "#")], "@")]
		why, files, digest := eligible(root, copies)
		if why != "" {
			r.Kept[why] += len(copies)
			continue
		}
		s, err := shareGroup(root, name, copies[0].lp.Version, copies, files, digest)
		if errors.Is(err, errNoSaving) {
			r.Kept["no-saving"] += len(copies)
			continue
		}
		if err != nil {
			return err
		}
		r.Shared = append(r.Shared, s)
		r.FilesSaved += s.Saved
	}
	return nil
}

// file is one file of a copy: its path in the copy, execute bits and
// sha256.
type file struct {
	rel  string
	exec bool
	sum  string
}

var (
	licenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice)([.-].*)?$`) })
	defaultRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bexport\s+default\b|\bas\s+default\b`) })
)

func isCode(rel string) bool {
	switch path.Ext(rel) {
	case ".js", ".mjs", ".cjs":
		return true
	}
	return false
}

// eligible says why copies cannot be shared ("" when they can), with the
// files of the first copy and their digest.
func eligible(root string, copies []copyOf) (string, []file, string) {
	lp := copies[0].lp
	switch {
	case len(lp.Dependencies)+len(lp.OptionalDeps)+len(lp.PeerDeps) > 0:
		return "has-dependencies", nil, ""
	case lp.HasInstallScript:
		return "install-script", nil, ""
	case len(lp.OS)+len(lp.CPU) > 0:
		return "os-cpu", nil, ""
	case lp.Bin != nil:
		return "bin", nil, ""
	}
	var m struct {
		Exports json.RawMessage `json:"exports"`
	}
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(copies[0].place), "package.json"))
	if err != nil || json.Unmarshal(raw, &m) != nil {
		return "unparsable", nil, ""
	}
	if len(m.Exports) == 0 || string(m.Exports) == "null" {
		return "no-exports", nil, ""
	}
	var first []file
	var digest string
	for i, c := range copies {
		files, why := filesOf(filepath.Join(root, filepath.FromSlash(c.place)))
		if why != "" {
			return why, nil, ""
		}
		d := digestOf(files)
		if i == 0 {
			first, digest = files, d
		} else if d != digest {
			return "different-bytes", nil, ""
		}
	}
	for _, f := range first {
		if !isCode(f.rel) {
			continue
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(copies[0].place), filepath.FromSlash(f.rel)))
		if err != nil {
			return "unparsable", nil, ""
		}
		// The closure's code scan: a copy that locates its files or
		// modules at run time is not shared (it would find the shared
		// directory, not its place).
		found := scanSource(src)
		if slices.Contains(found, findUnparsable) {
			return findUnparsable, nil, ""
		}
		if len(found) > 0 {
			return findDiscovery, nil, ""
		}
	}
	return "", first, digest
}

// filesOf lists a copy's regular files (a link or special file: "unparsable").
func filesOf(dir string) ([]file, string) {
	var out []file
	why := ""
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "node_modules" && p != dir {
				why = "has-dependencies"
				return filepath.SkipAll
			}
			return nil
		}
		if !d.Type().IsRegular() {
			why = "unparsable"
			return filepath.SkipAll
		}
		if strings.HasSuffix(d.Name(), ".node") || strings.HasSuffix(d.Name(), ".wasm") {
			why = "native-code"
			return filepath.SkipAll
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum, err := cache.HashFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, file{filepath.ToSlash(rel), info.Mode()&0o111 != 0, sum})
		return nil
	})
	if err != nil && why == "" {
		why = "unparsable"
	}
	slices.SortFunc(out, func(a, b file) int { return strings.Compare(a.rel, b.rel) })
	return out, why
}

func digestOf(files []file) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%v\x00%s\n", f.rel, f.exec, f.sum)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// exportTargets collects every path an exports map names ("./x" -> "x").
func exportTargets(raw json.RawMessage, out *[]string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		*out = append(*out, strings.TrimPrefix(path.Clean(s), "./"))
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		for _, v := range list {
			exportTargets(v, out)
		}
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			exportTargets(obj[k], out)
		}
	}
}

// reachable are the files of a copy its exports map names (subpath
// patterns expanded against the files).
func reachable(files []file, targets []string) map[string]bool {
	out := map[string]bool{}
	for _, t := range targets {
		pre, suf, pattern := strings.Cut(t, "*")
		for _, f := range files {
			if f.rel == t || (pattern && len(f.rel) >= len(pre)+len(suf) && strings.HasPrefix(f.rel, pre) && strings.HasSuffix(f.rel, suf)) {
				out[f.rel] = true
			}
		}
	}
	return out
}

// shareGroup moves the first copy's files to the shared directory and
// makes every place hold only what it keeps.
func shareGroup(root, name, version string, copies []copyOf, files []file, digest string) (Shared, error) {
	s := Shared{Name: name, Version: version, Dir: SharedDir + "/" + strings.ReplaceAll(name, "/", "+") + "@" + version + "-" + digest[:12], Files: len(files)}
	abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	var m struct {
		Type    string          `json:"type"`
		Exports json.RawMessage `json:"exports"`
	}
	raw, err := os.ReadFile(filepath.Join(abs(copies[0].place), "package.json"))
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	var targets []string
	exportTargets(m.Exports, &targets)
	reach := reachable(files, targets)
	keep := func(f file) bool {
		return f.rel == "package.json" || (!strings.Contains(f.rel, "/") && licenceRE().MatchString(f.rel)) || reach[f.rel]
	}
	perPlace := 0
	for _, f := range files {
		if keep(f) {
			perPlace++
		}
	}
	// A package whose places would keep about as many files as they hold
	// is not worth a shared directory.
	if s.Saved = len(files)*len(copies) - len(files) - perPlace*len(copies); s.Saved <= 0 {
		return s, errNoSaving
	}
	if err := os.MkdirAll(filepath.Dir(abs(s.Dir)), 0o755); err != nil {
		return s, err
	}
	if err := os.Rename(abs(copies[0].place), abs(s.Dir)); err != nil {
		return s, fmt.Errorf("footprint: sharing %s@%s: %v", name, version, err)
	}
	for _, c := range copies {
		s.Places = append(s.Places, c.place)
		if err := os.RemoveAll(abs(c.place)); err != nil {
			return s, err
		}
		for _, f := range files {
			dst := filepath.Join(abs(c.place), filepath.FromSlash(f.rel))
			src := filepath.Join(abs(s.Dir), filepath.FromSlash(f.rel))
			switch {
			case !keep(f):
			case reach[f.rel] && isCode(f.rel):
				if err := writeForwarder(dst, src, f.rel, m.Type); err != nil {
					return s, err
				}
			default: // package.json, licence files, data files exports names
				if err := linkOrCopy(src, dst); err != nil {
					return s, err
				}
			}
		}
	}
	return s, nil
}

// errNoSaving: the copies would keep about as many files as they hold.
var errNoSaving = errors.New("no-saving")

func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if os.Link(src, dst) == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	info, err := os.Stat(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}

// writeForwarder writes the one-line module at dst that forwards to the
// shared file src: ESM or CommonJS as Node would load the file.
func writeForwarder(dst, src, rel, pkgType string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	to, err := filepath.Rel(filepath.Dir(dst), src)
	if err != nil {
		return err
	}
	to = filepath.ToSlash(to)
	if !strings.HasPrefix(to, ".") {
		to = "./" + to
	}
	esm := path.Ext(rel) == ".mjs" || (path.Ext(rel) == ".js" && pkgType == "module")
	var body string
	if esm {
		body = fmt.Sprintf("export * from %q;\n", to)
		if code, err := os.ReadFile(src); err == nil && defaultRE().Match(code) {
			body += fmt.Sprintf("export { default } from %q;\n", to)
		}
	} else {
		body = fmt.Sprintf("module.exports = require(%q);\n", to)
	}
	return os.WriteFile(dst, []byte(body), 0o644)
}
