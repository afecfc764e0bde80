package bundle

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// tree is the payload root as found before bundling.
type tree struct {
	root  string          // absolute, cleaned
	files []string        // every file and symlink, slash-separated relative paths, sorted
	isSet map[string]bool // files as a set
	links map[string]bool // symlinks among files
	dirs  map[string]bool // every directory ("" is the root)
	pkgs  map[string]*pkg // packages by directory ("" is the root package, if any)

	mu       sync.Mutex
	pjCache  map[string]*pkgJSON // parsed package.json by file path (nil: unreadable)
	typCache map[string]string   // directory -> "module" / "commonjs"
}

// pkg is one installed package: a directory under node_modules holding a
// package.json (or the payload root itself).
type pkg struct {
	dir   string // slash-separated, relative to the root; "" for the root package
	name  string // the name Node resolves it by (from its directory)
	json  *pkgJSON
	files []string // every file below dir that no nested package owns

	native []string // .node files
	wasm   []string // .wasm files

	external string // why it stays unbundled; "" when it is bundled (or unused)
}

// pkgJSON is what bundling reads from a package.json.
type pkgJSON struct {
	Name                 string            `json:"name"`
	Type                 string            `json:"type"`
	Main                 string            `json:"main"`
	Bin                  json.RawMessage   `json:"bin"`
	Exports              json.RawMessage   `json:"exports"`
	Dependencies         map[string]string `json:"dependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
}

func scanTree(root string) (*tree, error) {
	t := &tree{
		root:     root,
		isSet:    map[string]bool{},
		links:    map[string]bool{},
		dirs:     map[string]bool{"": true},
		pkgs:     map[string]*pkg{},
		pjCache:  map[string]*pkgJSON{},
		typCache: map[string]string{},
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		switch {
		case d.IsDir():
			t.dirs[rel] = true
		case d.Type()&fs.ModeSymlink != 0:
			t.files = append(t.files, rel)
			t.isSet[rel] = true
			t.links[rel] = true
		case d.Type().IsRegular():
			t.files = append(t.files, rel)
			t.isSet[rel] = true
		default:
			return fmt.Errorf("bundle: %s: unsupported file type %v", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(t.files)

	// Packages: node_modules/<name> or node_modules/@scope/<name> holding a
	// package.json, and the root itself.
	for _, f := range t.files {
		if path.Base(f) != "package.json" || t.links[f] {
			continue
		}
		dir := path.Dir(f)
		if dir == "." {
			dir = ""
		}
		name, ok := packageNameOfDir(dir)
		if !ok && dir != "" {
			continue
		}
		t.pkgs[dir] = &pkg{dir: dir, name: name, json: t.readPkgJSON(f)}
	}
	for _, f := range t.files {
		p := t.ownerOf(f)
		if p == nil {
			continue
		}
		p.files = append(p.files, f)
		if !t.links[f] {
			switch path.Ext(f) {
			case ".node":
				p.native = append(p.native, f)
			case ".wasm":
				p.wasm = append(p.wasm, f)
			}
		}
	}
	return t, nil
}

// packageNameOfDir returns the module name of a package directory
// ("node_modules/@s/n" -> "@s/n"), ok false when dir is not one.
func packageNameOfDir(dir string) (string, bool) {
	parent, base := path.Split(dir)
	parent = strings.TrimSuffix(parent, "/")
	if base == "" || base == "node_modules" || strings.HasPrefix(base, ".") {
		return "", false
	}
	if path.Base(parent) == "node_modules" && !strings.HasPrefix(base, "@") {
		return base, true
	}
	gp, scope := path.Split(parent)
	if strings.HasPrefix(scope, "@") && path.Base(strings.TrimSuffix(gp, "/")) == "node_modules" {
		return scope + "/" + base, true
	}
	return "", false
}

// ownerOf returns the innermost package holding file f.
func (t *tree) ownerOf(f string) *pkg {
	d := path.Dir(f)
	for {
		if d == "." {
			d = ""
		}
		if p, ok := t.pkgs[d]; ok {
			return p
		}
		if d == "" {
			return nil
		}
		d = path.Dir(d)
	}
}

func (t *tree) abs(rel string) string {
	return filepath.Join(t.root, filepath.FromSlash(rel))
}

// rel converts an absolute path into a slash-separated path relative to the
// root; ok is false when it lies outside.
func (t *tree) rel(abs string) (string, bool) {
	r, err := filepath.Rel(t.root, abs)
	if err != nil {
		return "", false
	}
	r = filepath.ToSlash(r)
	if r == ".." || strings.HasPrefix(r, "../") {
		return "", false
	}
	if r == "." {
		r = ""
	}
	return r, true
}

func (t *tree) readPkgJSON(f string) *pkgJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	if pj, ok := t.pjCache[f]; ok {
		return pj
	}
	var pj *pkgJSON
	if data, err := os.ReadFile(t.abs(f)); err == nil {
		var v pkgJSON
		if json.Unmarshal(data, &v) == nil {
			pj = &v
		}
	}
	t.pjCache[f] = pj
	return pj
}

// nearestPkgJSON returns the package.json Node consults for a file in dir:
// the first one found walking up, within the root.
func (t *tree) nearestPkgJSON(dir string) string {
	for {
		if dir == "." {
			dir = ""
		}
		f := path.Join(dir, "package.json")
		if t.isSet[f] {
			return f
		}
		if dir == "" {
			return ""
		}
		dir = path.Dir(dir)
	}
}

// isESM reports whether Node loads file f as an ES module: .mjs, or .js
// under a package.json with "type": "module".
func (t *tree) isESM(f string) bool {
	switch path.Ext(f) {
	case ".mjs":
		return true
	case ".cjs":
		return false
	}
	dir := path.Dir(f)
	t.mu.Lock()
	typ, ok := t.typCache[dir]
	t.mu.Unlock()
	if !ok {
		typ = "commonjs"
		if pjf := t.nearestPkgJSON(dir); pjf != "" {
			if pj := t.readPkgJSON(pjf); pj != nil && pj.Type == "module" {
				typ = "module"
			}
		}
		t.mu.Lock()
		t.typCache[dir] = typ
		t.mu.Unlock()
	}
	return typ == "module"
}

// lookupPackage finds the package directory Node would use for a bare
// specifier's package name from a module in dir: dir/node_modules/name,
// then each parent's. ok is false when none exists within the root.
func (t *tree) lookupPackage(dir, name string) (string, bool) {
	for {
		if dir == "." {
			dir = ""
		}
		if path.Base(dir) != "node_modules" {
			cand := path.Join(dir, "node_modules", name)
			if t.dirs[cand] {
				return cand, true
			}
		}
		if dir == "" {
			return "", false
		}
		dir = path.Dir(dir)
	}
}

// packageName returns the package part of a bare specifier
// ("@s/n/sub" -> "@s/n", "n/sub" -> "n").
func packageName(spec string) string {
	parts := strings.SplitN(spec, "/", 3)
	if strings.HasPrefix(spec, "@") && len(parts) >= 2 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
}

// isBare reports whether spec is a bare module specifier (a package name,
// possibly with a subpath), not a relative or absolute path, URL, builtin
// scheme or package import.
func isBare(spec string) bool {
	if spec == "" || strings.HasPrefix(spec, ".") || strings.HasPrefix(spec, "/") || strings.HasPrefix(spec, "#") {
		return false
	}
	if strings.Contains(spec, ":") || strings.Contains(spec, "\\") || strings.ContainsAny(spec, " \t\n") {
		return false
	}
	name := packageName(spec)
	if strings.HasPrefix(name, "@") {
		return len(name) > 3 && strings.Count(name, "/") == 1 && !strings.HasSuffix(name, "/")
	}
	return name != ""
}

func isRelative(spec string) bool {
	return strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") || spec == "." || spec == ".."
}

// relPath returns a slash-separated relative module path from directory
// from to file to, always starting with "./" or "../".
func relPath(from, to string) string {
	fp := splitPath(from)
	tp := splitPath(to)
	i := 0
	for i < len(fp) && i < len(tp) && fp[i] == tp[i] {
		i++
	}
	var parts []string
	for range fp[i:] {
		parts = append(parts, "..")
	}
	parts = append(parts, tp[i:]...)
	r := strings.Join(parts, "/")
	if !strings.HasPrefix(r, "../") {
		r = "./" + r
	}
	return r
}

func splitPath(p string) []string {
	if p == "" || p == "." {
		return nil
	}
	return strings.Split(p, "/")
}

// under reports whether f is dir or lies below it.
func under(f, dir string) bool {
	return dir == "" || f == dir || strings.HasPrefix(f, dir+"/")
}
