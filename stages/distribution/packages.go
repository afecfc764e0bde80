package distribution

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// PiPackage is a package "<name>" block: a Pi package vendored into the
// payload. Name is its npm name; Dir is an npm project in the distribution
// (package.json and package-lock.json, lockfileVersion 3) whose locked
// tree holds node_modules/<name>: the package is installed from its own
// lock, like the runtime, and placed under pi-packages/<name>/ of the
// payload. Its extension entry files (package.json "pi.extensions") are
// pinned in the lock by sha256 and checked at every launch.
type PiPackage struct {
	Name string
	// Dir is slash-separated, relative to the distribution directory.
	Dir string
	// AllowInstallScripts as runtime.allow_install_scripts, for this
	// package's tree.
	AllowInstallScripts []string
	// Pretranspile writes the TypeScript modules its extensions import
	// as JavaScript beside them (stages/footprint).
	Pretranspile bool
}

// PiPackagesDir is where vendored Pi packages live in a payload.
const PiPackagesDir = "pi-packages"

// PayloadDir is the package's project directory in the payload:
// pi-packages/<name> (slash-separated).
func (p PiPackage) PayloadDir() string { return PiPackagesDir + "/" + p.Name }

// PackageRoot is where the package itself sits in the payload, the
// directory Pi is given: pi-packages/<name>/node_modules/<name>.
func (p PiPackage) PackageRoot() string { return p.PayloadDir() + "/node_modules/" + p.Name }

// PackageDir is the absolute directory of a package's npm project.
func (d *Distribution) PackageDir(p PiPackage) string {
	return filepath.Join(d.Dir, filepath.FromSlash(p.Dir))
}

func (dc *decoder) piPackages(blks []*hcl.Block) {
	d := dc.d
	seen := map[string]hcl.Range{}
	for _, b := range blks {
		name, lr := b.Labels[0], b.LabelRanges[0]
		if !pkgNameRE().MatchString(name) || strings.HasPrefix(name, ".") {
			dc.add(errDiag("Invalid package name", fmt.Sprintf("package %q: the label is the npm name of the Pi package, as its package.json names it, e.g. \"pi-web-access\" or \"@scope/pi-tool\" (no version).", name), lr))
			continue
		}
		if first, dup := seen[name]; dup {
			dc.add(errDiag("Duplicate package", fmt.Sprintf("package %q is already declared at %s.", name, fmtPos(first)), lr))
			continue
		}
		seen[name] = lr
		key := "package." + name
		d.ranges[key] = lr
		content := dc.content(b.Body, packageSchema, fmt.Sprintf("package %q", name), "package.")
		attrs := content.Attributes
		p := PiPackage{Name: name, Dir: path.Join("packages", name), AllowInstallScripts: []string{}}
		if v, r, ok := dc.str(attrs, key+".dir"); ok {
			cp, msg := cleanRel(v)
			if msg != "" {
				dc.add(errDiag("Invalid package directory", fmt.Sprintf("package %q: dir %q: %s", name, v, msg), r))
				continue
			}
			p.Dir = cp
		}
		if cp := p.Dir; cp == d.Runtime.Dir || cp == "." {
			dc.add(errDiag("Invalid package directory", fmt.Sprintf("package %q: dir %q is the runtime's project: give the package an npm project of its own (package.json and package-lock.json depending on %s), e.g. \"packages/%s\".", name, cp, name, name), d.Range(key)))
			continue
		}
		if list, rs, ok := dc.strList(attrs, key+".allow_install_scripts"); ok {
			names, _ := dc.uniqueList(list, rs, "Duplicate package", func(n string, r hcl.Range) (string, bool) {
				if !pkgNameRE().MatchString(n) {
					dc.add(errDiag("Invalid package name", fmt.Sprintf("%q is not an npm package name: write it as package-lock.json does (no version).", n), r))
					return "", false
				}
				return n, true
			})
			p.AllowInstallScripts = append(p.AllowInstallScripts, names...)
		}
		if v, _, ok := dc.boolean(attrs, key+".pretranspile"); ok {
			p.Pretranspile = v
		}
		d.Packages = append(d.Packages, p)
	}
}
