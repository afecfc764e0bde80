package sbom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
)

// Input describes the runtime to document.
type Input struct {
	// Name and Version are the distribution's (the document's subject),
	// e.g. "hello", "1.0.0".
	Name, Version string
	// Tree is an installed npm tree: it holds node_modules/ with each
	// package's package.json and license files. It is only read (it may be
	// a shared runtime cache entry).
	Tree string
	// Lock is the package-lock.json the tree was installed from.
	Lock *distribution.PackageLock
	// LockSHA256 is the lowercase hex SHA-256 of package-lock.json.
	LockSHA256 string
	// Created is the document's creation time (from SOURCE_DATE_EPOCH);
	// the zero time means the Unix epoch. Never the clock.
	Created time.Time
	// ToolVersion is the version of the piship that writes the document
	// (the build's version string, as `piship version` prints it); the
	// creator is "Tool: piship-<ToolVersion>". Empty writes "Tool: piship".
	ToolVersion string
	// Tools are the tools the distribution pins (piship.lock's tools):
	// each is written as an APPLICATION package with its SHA-256.
	Tools []Tool
	// Vendored are the trees of the vendored Pi packages, each installed
	// from its own lock and placed at Prefix in the payload: their packages
	// are documented at Prefix/<lock key> (the paths they have in the
	// payload), and each project's dependencies are the distribution's.
	Vendored []Vendored
	// FileName says where the payload holds the package installed at a
	// lock key (prefixed for a vendored one): its directory, the bundle
	// file that carries it, or "" when the payload holds neither (the
	// document then names no file for it). Nil: the key itself.
	FileName func(key string) string
}

// Vendored is one vendored Pi package's installed project: its payload
// directory (pi-packages/<name>), tree and lock.
type Vendored struct {
	Prefix string
	Tree   string
	Lock   *distribution.PackageLock
}

// Tool is one pinned tool: its name, its source path in the distribution
// and the lowercase hex SHA-256 the lock pins.
type Tool struct {
	Name, Source, SHA256 string
}

// pkg is one installed package the documents describe.
type pkg struct {
	key     string // lock key: the install path relative to the tree ("node_modules/a")
	dir     string // the package directory
	name    string
	version string
	lock    distribution.LockPackage
	// license is the declared license as written ("" when none).
	license string
	id      string // SPDXID
}

// runtimeTree is the documented package set of a tree.
type runtimeTree struct {
	pkgs  []*pkg          // sorted by name, version, key
	byKey map[string]*pkg // install path -> package (links map to their target)
	root  distribution.LockPackage
	// roots are the vendored projects' root entries, by prefix.
	roots map[string]distribution.LockPackage
}

func (in Input) check() error {
	switch {
	case in.Name == "" || in.Version == "":
		return errors.New("sbom: the distribution's name and version are required")
	case in.Lock == nil:
		return errors.New("sbom: no package lock")
	case !canon.IsSHA256Hex(in.LockSHA256):
		return fmt.Errorf("sbom: LockSHA256 %q is not a lowercase hex SHA-256", in.LockSHA256)
	case in.Tree == "":
		return errors.New("sbom: no tree")
	}
	st, err := os.Stat(in.Tree)
	if err != nil {
		return fmt.Errorf("sbom: %v", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("sbom: %s is not a directory", in.Tree)
	}
	return nil
}

// inNodeModules says whether a lock key is an install path (not a
// workspace directory).
func inNodeModules(key string) bool {
	return strings.HasPrefix(key, "node_modules/") || strings.Contains(key, "/node_modules/")
}

// load reads the documented package set: every non-dev lock entry installed
// in the tree.
func load(in Input) (*runtimeTree, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	rt := &runtimeTree{byKey: map[string]*pkg{}, root: in.Lock.Packages[""], roots: map[string]distribution.LockPackage{}}
	if err := rt.add("", in.Tree, in.Lock); err != nil {
		return nil, err
	}
	for _, v := range in.Vendored {
		if v.Prefix == "" || v.Lock == nil || path.IsAbs(v.Prefix) || slices.Contains(strings.Split(v.Prefix, "/"), "..") {
			return nil, fmt.Errorf("sbom: vendored tree %q has no payload directory or lock", v.Prefix)
		}
		rt.roots[v.Prefix] = v.Lock.Packages[""]
		if err := rt.add(v.Prefix, v.Tree, v.Lock); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(rt.pkgs, func(a, b *pkg) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := strings.Compare(a.version, b.version); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	rt.assignIDs()
	return rt, nil
}

// add documents the packages of one installed tree, installed from lock,
// whose keys sit at prefix in the payload ("" for the runtime's tree).
func (rt *runtimeTree) add(prefix, tree string, lock *distribution.PackageLock) error {
	at := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "/" + k
	}
	keys := make([]string, 0, len(lock.Packages))
	for k := range lock.Packages {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	targets := map[string]*pkg{} // link target key -> package
	var links []string
	for _, key := range keys {
		p := lock.Packages[key]
		if key == "" || !inNodeModules(key) || p.Dev {
			continue
		}
		target := key
		if p.Link {
			target = p.Resolved
			links = append(links, key)
			if _, done := targets[target]; done {
				continue
			}
		}
		lp, ok := lock.Packages[target]
		if !ok {
			// A link whose target the lock does not describe: its
			// version and integrity are unknown, the manifest tells.
			lp = distribution.LockPackage{Name: p.Name}
		}
		if p.Link {
			lp.Optional, lp.DevOptional = p.Optional, p.DevOptional
		}
		if strings.HasPrefix(target, "/") || slices.Contains(strings.Split(target, "/"), "..") {
			return fmt.Errorf("sbom: lock entry %q points outside the tree (%s)", key, target)
		}
		dir := filepath.Join(tree, filepath.FromSlash(target))
		m, err := readManifest(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if lp.Optional || lp.DevOptional || p.Optional || p.DevOptional {
				continue // an optional package npm did not install here
			}
			return fmt.Errorf("sbom: the lock's %s (%s@%s) is not installed in %s: the tree was not installed from this lock (npm ci --omit=dev)",
				key, distribution.PackageName(key, p), lp.Version, tree)
		}
		if err != nil {
			return fmt.Errorf("sbom: %s: %v", key, err)
		}
		name := distribution.PackageName(key, p)
		if p.Link && m.Name != "" {
			name = m.Name
		}
		version := lp.Version
		if version == "" {
			version = m.Version
		}
		if m.Version != "" && m.Version != version {
			return fmt.Errorf("sbom: %s is %s@%s in %s but the lock has %s: the tree was not installed from this lock",
				key, name, m.Version, tree, version)
		}
		if m.Name != "" && m.Name != name {
			return fmt.Errorf("sbom: %s is package %s in %s but the lock has %s: the tree was not installed from this lock",
				key, m.Name, tree, name)
		}
		lic := m.license()
		if lic == "" {
			lic = lp.License
		}
		pk := &pkg{key: at(target), dir: dir, name: name, version: version, lock: lp, license: lic}
		rt.pkgs = append(rt.pkgs, pk)
		rt.byKey[at(target)] = pk
		if p.Link {
			targets[target] = pk
		}
	}
	for _, key := range links {
		if pk := targets[lock.Packages[key].Resolved]; pk != nil {
			rt.byKey[at(key)] = pk
		}
	}
	return nil
}

// assignIDs gives each package its SPDXID: the sanitized name and version,
// with -2, -3, ... for a later package whose ID is taken.
func (rt *runtimeTree) assignIDs() {
	base := make([]string, len(rt.pkgs))
	reserved := map[string]bool{}
	for i, p := range rt.pkgs {
		base[i] = "SPDXRef-Package-" + spdxIDPart(strings.TrimPrefix(p.name, "@"))
		if p.version != "" {
			base[i] += "-" + spdxIDPart(p.version)
		}
		reserved[base[i]] = true
	}
	used := map[string]bool{}
	for i, p := range rt.pkgs {
		if !used[base[i]] {
			p.id = base[i]
			used[base[i]] = true
			continue
		}
		for n := 2; ; n++ {
			id := fmt.Sprintf("%s-%d", base[i], n)
			if !used[id] && !reserved[id] {
				p.id = id
				used[id] = true
				break
			}
		}
	}
}

// spdxIDPart replaces every character an SPDX ID may not hold with "-".
func spdxIDPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// resolve finds the package node's module lookup reaches for a dependency
// name from the package installed at from ("" is the project root): from's
// own node_modules, then that of each enclosing directory that is not
// itself a node_modules directory.
func (rt *runtimeTree) resolve(from, name string) *pkg {
	dir := from
	for {
		if path.Base(dir) != "node_modules" {
			cand := "node_modules/" + name
			if dir != "" {
				cand = dir + "/" + cand
			}
			if p := rt.byKey[cand]; p != nil {
				return p
			}
		}
		if dir == "" {
			return nil
		}
		dir = path.Dir(dir)
		if dir == "." {
			dir = ""
		}
	}
}

// edge is a dependency of an installed package: what it resolves to, and
// "optional" or "peer" when only optionalDependencies or peerDependencies
// declare it.
type edge struct {
	to   *pkg
	kind string
}

// edges returns the packages a lock entry installed at key depends on,
// sorted by ID and without repeats. A required dependency that resolves to
// nothing is an error; a missing optional or peer dependency is not.
func (rt *runtimeTree) edges(key string, lp distribution.LockPackage) ([]edge, error) {
	seen := map[*pkg]bool{}
	var out []edge
	add := func(deps map[string]string, kind string) error {
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			p := rt.resolve(key, name)
			if p == nil {
				if kind == "" && !hasKey(lp.OptionalDeps, name) {
					where := key
					if where == "" {
						where = "the project root"
					}
					return fmt.Errorf("sbom: %s depends on %s, which is not installed where node looks for it (its own or an enclosing node_modules): the tree was not installed from this lock", where, name)
				}
				continue
			}
			if !seen[p] {
				seen[p] = true
				out = append(out, edge{p, kind})
			}
		}
		return nil
	}
	if err := add(lp.Dependencies, ""); err != nil {
		return nil, err
	}
	_ = add(lp.OptionalDeps, "optional")
	_ = add(lp.PeerDeps, "peer")
	slices.SortFunc(out, func(a, b edge) int { return strings.Compare(a.to.id, b.to.id) })
	return out, nil
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// manifest is the part of an installed package.json read here.
type manifest struct {
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	License  json.RawMessage `json:"license"`
	Licenses json.RawMessage `json:"licenses"`
}

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("package.json: %v", err)
	}
	return &m, nil
}

// license is the declared license as written: "license" as a string or an
// old {"type": ...} object, else the legacy "licenses" list (or object),
// several joined with OR. "" when the manifest declares none.
func (m *manifest) license() string {
	if s := licenseValue(m.License); s != "" {
		return s
	}
	raw := bytes.TrimSpace(m.Licenses)
	if len(raw) == 0 || raw[0] != '[' {
		return licenseValue(raw)
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	var types []string
	for _, e := range list {
		if s := licenseValue(e); s != "" && !slices.Contains(types, s) {
			types = append(types, s)
		}
	}
	if len(types) > 1 {
		for i, t := range types {
			if strings.ContainsAny(t, " ()") {
				types[i] = "(" + t + ")"
			}
		}
		return "(" + strings.Join(types, " OR ") + ")"
	}
	return strings.Join(types, "")
}

// licenseValue reads "MIT" or {"type": "MIT"}.
func licenseValue(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return strings.TrimSpace(o.Type)
	}
	return ""
}
