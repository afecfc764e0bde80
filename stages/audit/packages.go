package audit

import (
	"slices"
	"strings"

	"piship.dev/piship/stages/distribution"
)

// Package is one installed package of a distribution's npm lock.
type Package struct {
	// Name is the name the package is published under (an alias's real
	// name).
	Name    string
	Version string
	// Path is the package-lock.json key: "node_modules/a",
	// "node_modules/a/node_modules/@s/b".
	Path      string
	Integrity string
	// Resolved is where npm fetches it from; "" means the configured
	// registry.
	Resolved string
	// Local marks a package that never comes from a registry: a file:
	// tarball or a link into the project.
	Local bool
	// Bundled marks a bundled dependency: it ships inside its parent's
	// tarball, which its parent's integrity and signature cover.
	Bundled bool
}

// ID is name@version.
func (p Package) ID() string { return p.Name + "@" + p.Version }

// PackagesFromLock lists the packages npm ci --omit=dev installs from the
// lock: every entry but the root, dev dependencies and the project
// directories that links point at (the link itself is listed, Local, with
// its target's version). Sorted by name, version, then path.
func PackagesFromLock(pl *distribution.PackageLock) []Package {
	var out []Package
	for key, p := range pl.Packages {
		if key == "" || p.Dev {
			continue
		}
		inNodeModules := strings.HasPrefix(key, "node_modules/") || strings.Contains(key, "/node_modules/")
		if !inNodeModules {
			continue // a workspace or link target: listed through its link
		}
		pkg := Package{
			Name: distribution.PackageName(key, p), Version: p.Version, Path: key,
			Integrity: p.Integrity, Resolved: p.Resolved, Bundled: p.InBundle,
		}
		switch {
		case p.Link:
			pkg.Local = true
			if t, ok := pl.Packages[p.Resolved]; ok {
				pkg.Version = t.Version
				if t.Name != "" {
					pkg.Name = t.Name
				}
			}
		case strings.HasPrefix(p.Resolved, "file:"):
			pkg.Local = true
		}
		out = append(out, pkg)
	}
	slices.SortFunc(out, func(a, b Package) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := strings.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}
