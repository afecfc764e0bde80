package distribution

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

// LockPiPackage pins a vendored Pi package: its project's inputs, the
// version and registry integrity its lock gives the package, and its
// extension entry files (relative to the package root, pi-packages/<name>/
// node_modules/<name> in the payload) by sha256, with its package.json,
// which decides what Pi loads. Extensions is filled by PinExtensions from
// the installed package (piship lock installs it); the launcher checks
// every file of it at every start.
type LockPiPackage struct {
	Name                string     `json:"name"`
	Dir                 string     `json:"dir"`
	PackageJSONSHA256   string     `json:"packageJsonSha256"`
	PackageLockSHA256   string     `json:"packageLockSha256"`
	Version             string     `json:"version"`
	Integrity           string     `json:"integrity"`
	AllowInstallScripts []string   `json:"allowInstallScripts"`
	Pretranspile        bool       `json:"pretranspile,omitempty"`
	Manifest            LockFile   `json:"manifest"`
	Extensions          []LockFile `json:"extensions"`
	// Root is the package's directory in the payload.
	Root string `json:"root"`
}

// LockFile is a file of a package by its path (slash-separated, relative
// to the package root) and sha256.
type LockFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// lockPackages records each package block's inputs (not yet its
// extensions, which need the installed package).
func lockPackages(d *Distribution, l *Lock) error {
	for _, p := range d.Packages {
		dir := d.PackageDir(p)
		key := "package." + p.Name
		pj, err := atomicfs.ReadRegular(filepath.Join(dir, "package.json"), 0)
		if err != nil {
			return errcode.Newf(errcode.ConfigInvalid, "package %q (%s): %v: the package's npm project needs a package.json depending on %s", p.Name, d.Pos(key), err, p.Name)
		}
		pl, raw, err := ReadPackageLock(filepath.Join(dir, "package-lock.json"))
		if err != nil {
			return errcode.Newf(errcode.ConfigInvalid, "package %q (%s): %v", p.Name, d.Pos(key), err)
		}
		e, ok := pl.Packages["node_modules/"+p.Name]
		if !ok || e.Version == "" {
			return errcode.Newf(errcode.ConfigInvalid, "package %q (%s): %s does not install node_modules/%s: make %s depend on it (npm install --package-lock-only %s@<version> in %s)",
				p.Name, d.Pos(key), d.shown(path.Join(p.Dir, "package-lock.json")), p.Name, d.shown(path.Join(p.Dir, "package.json")), p.Name, d.shown(p.Dir))
		}
		// piship never runs install scripts: a package of this tree that
		// declares one must be acknowledged, as for the runtime.
		for _, k := range slices.Sorted(maps.Keys(pl.Packages)) {
			e := pl.Packages[k]
			if name := PackageName(k, e); e.HasInstallScript && !e.Dev && !e.Link && !slices.Contains(p.AllowInstallScripts, name) {
				return errcode.Newf(errcode.PolicyDenied, "package %q (%s): %s in its lock declares an install script, which piship never runs (npm ci --ignore-scripts): check that it works without it, then list %q in the package block's allow_install_scripts",
					p.Name, d.Pos(key), k, name)
			}
		}
		l.Packages = append(l.Packages, LockPiPackage{
			Name: p.Name, Dir: p.Dir, PackageJSONSHA256: canon.SHA256Hex(pj), PackageLockSHA256: canon.SHA256Hex(raw),
			Version: e.Version, Integrity: e.Integrity, AllowInstallScripts: sortedCopy(p.AllowInstallScripts), Pretranspile: p.Pretranspile,
			Root: p.PackageRoot(), Extensions: []LockFile{},
		})
	}
	return nil
}

// samePackageInputs reports whether two locks of a package pin the same
// project: then the installed package is the same bytes (npm ci checks
// every tarball's integrity), and so are its extensions.
func samePackageInputs(a, b LockPiPackage) bool {
	a.Extensions, b.Extensions, a.Manifest, b.Manifest = nil, nil, LockFile{}, LockFile{}
	return jsonEqual(a, b)
}

// carryExtensions copies the pinned extensions of old into cur for every
// package whose inputs did not change (CheckLock: recomputing them would
// need an install).
func carryExtensions(old, cur *Lock) {
	for i, p := range cur.Packages {
		for _, o := range old.Packages {
			if o.Name == p.Name && samePackageInputs(o, p) {
				cur.Packages[i].Extensions, cur.Packages[i].Manifest = o.Extensions, o.Manifest
			}
		}
	}
}

// maxManifest bounds a package.json read for its pi field.
const maxManifest = 4 << 20

// PiManifest is the part of a package's package.json piship reads.
type PiManifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Pi      *struct {
		Extensions []string `json:"extensions"`
	} `json:"pi"`
}

// ExtensionEntries reads the package.json of an installed package and
// returns its extension entry files: the "pi.extensions" list, each a
// plain relative path to a .ts, .js, .mjs or .cjs file inside the package.
// piship pins the files Pi will load, so directories and globs (which Pi
// expands at run time) are refused, naming the package.
func ExtensionEntries(name, root string) (PiManifest, []string, error) {
	var m PiManifest
	raw, err := atomicfs.ReadRegular(filepath.Join(root, "package.json"), 0)
	if err == nil && len(raw) > maxManifest {
		err = fmt.Errorf("larger than %d bytes", maxManifest)
	}
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		return m, nil, errcode.Newf(errcode.ConfigInvalid, "Pi package %s: cannot read its package.json: %v", name, err)
	}
	if m.Pi == nil || len(m.Pi.Extensions) == 0 {
		return m, nil, errcode.Newf(errcode.ConfigInvalid, "Pi package %s %s lists no extensions in its package.json (\"pi\": {\"extensions\": [\"./index.ts\"]}): piship vendors packages whose extension entry files it can pin", name, m.Version)
	}
	var out []string
	for _, e := range m.Pi.Extensions {
		p := path.Clean(strings.TrimPrefix(e, "./"))
		ext := path.Ext(p)
		if strings.ContainsAny(e, "*?[{!\\") || !filepath.IsLocal(filepath.FromSlash(p)) || !slices.Contains([]string{".ts", ".js", ".mjs", ".cjs", ".mts", ".cts"}, ext) {
			return m, nil, errcode.Newf(errcode.ConfigInvalid, "Pi package %s %s: extension %q is not a plain path to a .ts or .js file in the package: piship pins each extension entry file, so directories and globs are not vendored", name, m.Version, e)
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || !fi.Mode().IsRegular() {
			return m, nil, errcode.Newf(errcode.ConfigInvalid, "Pi package %s %s: extension %q is not a regular file of the installed package (%v)", name, m.Version, e, err)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return m, out, nil
}

// PinExtensions fills each package's Manifest and Extensions from its
// installed package root (roots maps the package name to it): what
// piship lock records after installing the packages.
func PinExtensions(l *Lock, roots map[string]string) error {
	for i, p := range l.Packages {
		root, ok := roots[p.Name]
		if !ok {
			return errcode.Newf(errcode.ConfigInvalid, "Pi package %s was not installed", p.Name)
		}
		files, err := PackageFiles(p.Name, root)
		if err != nil {
			return err
		}
		l.Packages[i].Manifest, l.Packages[i].Extensions = files[0], files[1:]
	}
	return nil
}

// PackageFiles hashes an installed package's package.json and extension
// entry files: the manifest first, then the entries sorted.
func PackageFiles(name, root string) ([]LockFile, error) {
	m, entries, err := ExtensionEntries(name, root)
	if err != nil {
		return nil, err
	}
	if m.Name != name {
		return nil, errcode.Newf(errcode.ConfigInvalid, "the package installed as %s names itself %q in its package.json", name, m.Name)
	}
	var out []LockFile
	for _, rel := range append([]string{"package.json"}, entries...) {
		sum, err := hashFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigInvalid, "Pi package %s: %v", name, err)
		}
		out = append(out, LockFile{Path: rel, SHA256: sum})
	}
	return out, nil
}

// CheckPackageFiles compares an installed package with its lock entry: a
// difference is LOCK_INVALID naming the file and what to do.
func CheckPackageFiles(p LockPiPackage, root, shownDir string) error {
	got, err := PackageFiles(p.Name, root)
	if err != nil {
		return err
	}
	want := append([]LockFile{p.Manifest}, p.Extensions...)
	if jsonEqual(got, want) {
		return nil
	}
	return errcode.Newf(errcode.LockInvalid, "Pi package %s %s installs package.json and extension files %s, and piship.lock pins %s: run piship lock %s", p.Name, p.Version, fileList(got), fileList(want), shownDir)
}

func fileList(fs []LockFile) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Path+"="+f.SHA256[:min(12, len(f.SHA256))])
	}
	return strings.Join(s, ", ")
}

// packageChanges names the packages added, removed or changed between two
// locks; a package whose extensions were never pinned says so.
func packageChanges(old, cur *Lock) []string {
	var out []string
	find := func(l *Lock, name string) (LockPiPackage, bool) {
		for _, p := range l.Packages {
			if p.Name == name {
				return p, true
			}
		}
		return LockPiPackage{}, false
	}
	for _, p := range cur.Packages {
		o, ok := find(old, p.Name)
		switch {
		case !ok:
			out = append(out, "package "+p.Name+" (added)")
		case !samePackageInputs(o, p):
			out = append(out, "package "+p.Name+" (changed: "+path.Join(p.Dir, "package.json")+" or package-lock.json)")
		case p.Manifest.SHA256 == "":
			out = append(out, "package "+p.Name+" (its extension files are not pinned yet)")
		}
	}
	for _, o := range old.Packages {
		if _, ok := find(cur, o.Name); !ok {
			out = append(out, "package "+o.Name+" (removed)")
		}
	}
	return out
}
