package distribution

import (
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache/atomicfs"
)

var (
	// semver.org's regular expression.
	semverRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
	})
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	// npm package names, leniently (old packages have capitals).
	shortVersionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d+(\.\d+)?$`) })
	pkgNameRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(@[A-Za-z0-9][A-Za-z0-9._~-]*/)?[A-Za-z0-9._~-]+$`) })
)

func checkSource(s string) string {
	if s == SourceNPM {
		return ""
	}
	if strings.EqualFold(s, SourceNPM) {
		return fmt.Sprintf("write %q in lowercase.", SourceNPM)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL (%v): write \"npm\" for the configured npm registry or an https:// URL prefix.", err)
	case u.Scheme == "http":
		return "packages are fetched over https only: write https://" + strings.TrimPrefix(s, "http://") + "."
	case u.Scheme != "https" || u.Host == "":
		return "write \"npm\" for the configured npm registry or an https:// URL prefix such as \"https://registry.example.com/npm/\"."
	case u.User != nil:
		return "a source prefix holds no credentials: keep them in .npmrc, which npm reads."
	case u.RawQuery != "" || u.Fragment != "":
		return "a source prefix has no query or fragment."
	}
	return ""
}

// checkToolSource validates a tool's source: an https:// URL, or a path
// relative to the distribution directory (returned cleaned).
func checkToolSource(v string) (string, string) {
	if !strings.Contains(v, "://") {
		return cleanRel(v)
	}
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return "", fmt.Sprintf("not a URL (%v).", err)
	case u.Scheme == "http":
		return "", "tools are fetched over https only: write https://" + strings.TrimPrefix(v, "http://") + "."
	case u.Scheme != "https" || u.Host == "":
		return "", "a tool comes from a path inside the distribution directory or an https:// URL."
	case u.User != nil:
		return "", "the URL holds credentials; a distribution file is shared, so it must not."
	}
	return v, ""
}

// checkName validates an id, command or tool name, which all become file
// names on every platform. It returns "" or what is wrong, as a sentence.
func checkName(s string) string {
	switch {
	case s == "":
		return "it cannot be empty."
	case len(s) > 64:
		return "it is longer than 64 characters."
	case !nameRE().MatchString(s):
		return "use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit."
	case strings.HasSuffix(s, "."):
		return "it cannot end with '.' (Windows drops it from file names)."
	}
	base, _, _ := strings.Cut(s, ".")
	if windowsReserved[base] {
		return fmt.Sprintf("%q is a reserved device name on Windows.", base)
	}
	return ""
}

var windowsReserved = map[string]bool{
	"con": true, "prn": true, "aux": true, "nul": true,
	"com1": true, "com2": true, "com3": true, "com4": true, "com5": true, "com6": true, "com7": true, "com8": true, "com9": true,
	"lpt1": true, "lpt2": true, "lpt3": true, "lpt4": true, "lpt5": true, "lpt6": true, "lpt7": true, "lpt8": true, "lpt9": true,
}

// fixVersion proposes a semantic version for a near miss: "v1.2.3",
// "1.2", "1".
func fixVersion(v string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "v"), "V")
	for i := 0; i < 2 && !semverRE().MatchString(s); i++ {
		if shortVersionRE().MatchString(s) {
			s += ".0"
		}
	}
	if semverRE().MatchString(s) && s != v {
		return s
	}
	return ""
}

// cleanRel validates a slash-separated path relative to the distribution
// directory and returns it cleaned, or what is wrong with it.
func cleanRel(p string) (string, string) {
	switch {
	case p == "":
		return "", "the path is empty."
	case strings.Contains(p, `\`):
		return "", "write paths with forward slashes (they work on every platform): " + strings.ReplaceAll(p, `\`, "/") + "."
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || (len(p) >= 2 && p[1] == ':'):
		return "", "the path must be relative to the distribution directory, so the distribution builds the same wherever it is checked out."
	case strings.IndexFunc(p, unicode.IsControl) >= 0:
		return "", "the path holds control characters."
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "the path leaves the distribution directory; everything a distribution uses lives inside it."
	}
	return c, ""
}

// splitPackagePath splits "node_modules/<pkg>/<rest>" (a scoped <pkg> has
// two segments) into the package's lock key and the rest.
func splitPackagePath(p string) (key, rest string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 2 || parts[0] != "node_modules" {
		return "", "", false
	}
	n := 2
	if strings.HasPrefix(parts[1], "@") {
		n = 3
		if len(parts) < 3 {
			return "", "", false
		}
	}
	return strings.Join(parts[:n], "/"), strings.Join(parts[n:], "/"), true
}

// checkFiles reports, at the attribute that names them, files the
// distribution needs that are missing or are not regular files (or, for
// the osv: audit databases, a .zip or a directory).
func (d *Distribution) checkFiles() hcl.Diagnostics {
	var diags hcl.Diagnostics
	rt := d.RuntimeDir()
	rtRange := d.Range("runtime.dir")
	if fi, err := os.Stat(rt); err != nil || !fi.IsDir() {
		diags = append(diags, errDiag("Missing runtime directory",
			fmt.Sprintf("The runtime directory %s does not exist: it holds the npm project (package.json and package-lock.json) whose locked dependencies are the program.", d.shown(d.Runtime.Dir)),
			rtRange))
		return diags
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		rel := path.Join(d.Runtime.Dir, f)
		fi, err := os.Lstat(filepath.Join(rt, f))
		switch {
		case err != nil && f == "package-lock.json":
			diags = append(diags, errDiag("Missing package-lock.json",
				fmt.Sprintf("%s does not exist: create it with `npm install --package-lock-only --ignore-scripts` in %s and commit it; every release installs exactly what it locks.", d.shown(rel), d.shown(d.Runtime.Dir)),
				rtRange))
		case err != nil:
			diags = append(diags, errDiag("Missing package.json",
				fmt.Sprintf("%s does not exist: the runtime directory is an npm project whose dependencies are the program.", d.shown(rel)), rtRange))
		case !fi.Mode().IsRegular():
			diags = append(diags, errDiag("Not a regular file", fmt.Sprintf("%s is not a regular file (%s).", d.shown(rel), atomicfs.KindOf(fi.Mode())), rtRange))
		}
	}
	for i, r := range d.Resources {
		fi, err := os.Lstat(filepath.Join(d.Dir, filepath.FromSlash(r)))
		rng := d.Range(fmt.Sprintf("resources[%d]", i))
		switch {
		case err != nil:
			detail := fmt.Sprintf("%s does not exist.", d.shown(r))
			if s := suggestSibling(d.Dir, r); s != "" {
				detail += fmt.Sprintf(" Did you mean %q?", s)
			}
			diags = append(diags, errDiag("Missing resource", detail, rng))
		case fi.Mode()&fs.ModeSymlink != 0:
			diags = append(diags, errDiag("Resource is a symlink",
				fmt.Sprintf("%s is a symbolic link; a payload holds only regular files and directories. Replace the link with what it points to.", d.shown(r)), rng))
		case !fi.Mode().IsRegular() && !fi.IsDir():
			diags = append(diags, errDiag("Resource is not a file", fmt.Sprintf("%s is %s; a resource is a regular file or a directory.", d.shown(r), atomicfs.KindOf(fi.Mode())), rng))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(d.Tools)) {
		t := d.Tools[name]
		if t.IsURL() {
			continue
		}
		fi, err := os.Lstat(filepath.Join(d.Dir, filepath.FromSlash(t.Source)))
		rng := d.Range("tools." + name + ".source")
		switch {
		case err != nil:
			diags = append(diags, errDiag("Missing tool", fmt.Sprintf("tool %q: %s does not exist.", name, d.shown(t.Source)), rng))
		case !fi.Mode().IsRegular():
			diags = append(diags, errDiag("Tool is not a regular file", fmt.Sprintf("tool %q: %s is %s; a tool is an executable file.", name, d.shown(t.Source), atomicfs.KindOf(fi.Mode())), rng))
		}
	}
	return append(diags, d.checkDatabases()...)
}

// suggestSibling proposes an existing entry of the same directory whose
// name is close to rel's last segment.
func suggestSibling(dir, rel string) string {
	parent, base := path.Split(rel)
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(parent)))
	if err != nil {
		return ""
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if s := suggest(base, names); s != "" {
		return parent + s
	}
	return ""
}
