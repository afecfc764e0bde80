package distribution

import (
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/stage/errcode"
)

// Violation is one broken release rule.
type Violation struct {
	// Code is POLICY_DENIED or CONFIG_INVALID.
	Code string
	// Rule is "target", "lockfile", "entry", "integrity", "source",
	// "path" or "install-script".
	Rule string
	// Package is the package-lock.json key ("node_modules/koffi"), "" for
	// rules about the distribution as a whole.
	Package string
	Message string
}

// GateError lists every broken release rule, in a stable order.
type GateError struct {
	// Lock is the package-lock.json as shown in messages.
	Lock       string
	Violations []Violation
	// Hints say, once per rule, what to do about its violations.
	Hints map[string]string
}

// Code is CONFIG_INVALID when any violation is a configuration error,
// else POLICY_DENIED.
func (e *GateError) Code() string {
	for _, v := range e.Violations {
		if v.Code == errcode.ConfigInvalid {
			return v.Code
		}
	}
	return errcode.PolicyDenied
}

// ErrorCode is Code (errcode.Coder).
func (e *GateError) ErrorCode() string { return e.Code() }

var _ errcode.Coder = (*GateError)(nil)

func (e *GateError) Error() string {
	line := func(v Violation) string {
		if v.Package == "" {
			return v.Message
		}
		return v.Package + ": " + v.Message
	}
	if len(e.Violations) == 1 {
		v := e.Violations[0]
		msg := e.Code() + ": " + line(v)
		if h := e.Hints[v.Rule]; h != "" {
			msg += ". " + h
		}
		return msg
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s broken (%s):", e.Code(), canon.Count(len(e.Violations), "release rule"), canon.Verb(len(e.Violations), "is", "are"), e.Lock)
	const show = 50
	var rules []string
	for i, v := range e.Violations {
		if !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
		if i < show {
			b.WriteString("\n  " + line(v))
		} else if i == show {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Violations)-show)
		}
	}
	for _, r := range rules {
		if h := e.Hints[r]; h != "" {
			b.WriteString("\n" + h + ".")
		}
	}
	return b.String()
}

// Gates enforces the static release rules on the distribution's npm lock
// and names, for each broken rule, the package that broke it:
//
//   - the host target (platform-arch, Node naming; "" means platform.HostTarget())
//     is one of release.targets: npm installs the host's platform packages,
//     so a release is built on its target (POLICY_DENIED);
//   - the lock is lockfileVersion 3 and installs the package that holds
//     runtime.entry, outside the dev dependencies (CONFIG_INVALID);
//   - every locked package except the root, links, workspace directories
//     and bundled dependencies (inside their parent's verified tarball)
//     has a sha512 integrity (POLICY_DENIED);
//   - a resolved URL is under an allowed source: for "npm" the registry
//     (registry; "" means npm.DefaultRegistry), else the https:// prefixes in
//     release.sources; a package without resolved comes from the registry,
//     so it needs "npm" among the sources; a file: tarball or a link must
//     stay inside the distribution directory (POLICY_DENIED);
//   - a package with hasInstallScript is listed in
//     runtime.allow_install_scripts (its script still never runs);
//     dev-only packages are exempt, npm ci --omit=dev does not install
//     them (POLICY_DENIED).
//
// A release passes AnyHost: it builds every target on whatever host runs
// it (npm ci --os/--cpu/--libc); a build, for the host, passes "".
//
// It returns nil or a *GateError.
// AnyHost is the hostTarget of Gates that waives the host target rule.
const AnyHost = "*"

func Gates(d *Distribution, pl *PackageLock, registry, hostTarget string) error {
	if hostTarget == AnyHost {
		hostTarget = ""
	} else if hostTarget == "" {
		hostTarget = platform.HostTarget()
	}
	if registry == "" {
		registry = npm.DefaultRegistry
	}
	lockShown := d.shown(path.Join(d.Runtime.Dir, "package-lock.json"))
	var vs []Violation
	add := func(code, rule, pkg, format string, args ...any) {
		vs = append(vs, Violation{Code: code, Rule: rule, Package: pkg, Message: fmt.Sprintf(format, args...)})
	}
	hints := map[string]string{}

	if hostTarget != "" && !slices.Contains(d.Release.Targets, hostTarget) {
		add(errcode.PolicyDenied, "target", "",
			"this host is %s but release.targets (%s) is %s: a release is built on the target it is for, since npm installs the host's platform-specific packages; build on %s, or add %q to release.targets if this host is a target",
			hostTarget, d.Pos("release.targets"), quoteList(d.Release.Targets), orList(d.Release.Targets), hostTarget)
	}
	if pl.LockfileVersion != 3 {
		add(errcode.ConfigInvalid, "lockfile", "",
			"%s has lockfileVersion %d; piship reads version 3: regenerate it with `npm install --package-lock-only --ignore-scripts --lockfile-version 3`", lockShown, pl.LockfileVersion)
	}
	if key, _, ok := splitPackagePath(d.Runtime.Entry); ok {
		p, found := pl.Packages[key]
		switch {
		case !found:
			add(errcode.ConfigInvalid, "entry", "",
				"runtime.entry %q (%s) is in package %s, which %s does not install: add the package to %s's dependencies and update the lock, or fix the entry",
				d.Runtime.Entry, d.Pos("runtime.entry"), key, lockShown, d.shown(path.Join(d.Runtime.Dir, "package.json")))
		case p.Dev:
			add(errcode.ConfigInvalid, "entry", "",
				"runtime.entry %q (%s) is in %s, a dev dependency, which npm ci --omit=dev does not install: move it to dependencies",
				d.Runtime.Entry, d.Pos("runtime.entry"), describePkg(key, p))
		}
	}

	allowed := map[string]bool{}
	for _, n := range d.Runtime.AllowInstallScripts {
		allowed[n] = true
	}
	prefixes, npmAllowed := sourcePrefixes(d.Release.Sources, registry)
	rtDir := d.RuntimeDir()
	for _, key := range slices.Sorted(maps.Keys(pl.Packages)) {
		if key == "" {
			continue
		}
		p := pl.Packages[key]
		who := describePkg(key, p)
		inNodeModules := strings.HasPrefix(key, "node_modules/") || strings.Contains(key, "/node_modules/")
		if p.Link || !inNodeModules {
			// A link points at a directory of the project; a key outside
			// node_modules is such a directory (a workspace).
			target := key
			if p.Link {
				target = p.Resolved
			}
			if target != "" && !insideDir(d.Dir, filepath.Join(rtDir, filepath.FromSlash(target))) {
				add(errcode.PolicyDenied, "path", key, "%s points at %s, outside the distribution directory %s: everything a release installs is locked inside it",
					who, target, d.ShownDir())
			}
		} else if !p.InBundle {
			checkIntegrity(p, who, key, add)
			switch r := p.Resolved; {
			case r == "":
				if !npmAllowed {
					add(errcode.PolicyDenied, "source", key,
						"%s has no resolved URL, so npm fetches it from its configured registry, and release.sources (%s) does not allow \"npm\"", who, d.Pos("release.sources"))
				}
			case strings.HasPrefix(r, "file:"):
				rel := strings.TrimPrefix(r, "file:")
				// npm writes file:<path relative to the project>; an
				// absolute or URL-style path is also refused when it
				// leaves the distribution directory.
				target := filepath.FromSlash(rel)
				if !filepath.IsAbs(target) {
					target = filepath.Join(rtDir, target)
				}
				if !insideDir(d.Dir, target) {
					add(errcode.PolicyDenied, "path", key, "%s is resolved from %s, outside the distribution directory %s: vendor the tarball inside it (e.g. %s/vendor/) and update the lock",
						who, r, d.ShownDir(), d.Runtime.Dir)
				}
			default:
				if !underAny(r, prefixes) {
					add(errcode.PolicyDenied, "source", key, "%s is resolved from %s, not from an allowed source", who, r)
					h := fmt.Sprintf("Allowed sources (release.sources, %s): %s", d.Pos("release.sources"), describeSources(d.Release.Sources, registry))
					if npmAllowed && strings.HasPrefix(r, npm.DefaultRegistry) && withSlash(registry) != npm.DefaultRegistry {
						h += fmt.Sprintf("; the lock was written against %s: regenerate it with npm configured for %s, or add %q to release.sources", npm.DefaultRegistry, registry, npm.DefaultRegistry)
					}
					hints["source"] = h
				}
			}
		}
		if p.HasInstallScript && !p.Dev && !p.Link {
			name := PackageName(key, p)
			if !allowed[name] {
				add(errcode.PolicyDenied, "install-script", key, "%s declares an install script and is not in runtime.allow_install_scripts", who)
				hints["install-script"] = fmt.Sprintf("piship never runs install scripts (npm ci --ignore-scripts): check that each such package works without its script, then list it in runtime.allow_install_scripts (%s)",
					d.Pos("runtime.allow_install_scripts"))
			}
		}
	}
	if len(vs) == 0 {
		return nil
	}
	// Whole-distribution rules first, then packages by key, then rule.
	slices.SortStableFunc(vs, func(a, b Violation) int {
		if c := strings.Compare(a.Package, b.Package); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	return &GateError{Lock: lockShown, Violations: vs, Hints: hints}
}

func checkIntegrity(p LockPackage, who, key string, add func(code, rule, pkg, format string, args ...any)) {
	if p.Integrity == "" {
		add(errcode.PolicyDenied, "integrity", key,
			"%s has no integrity in the lock, so npm cannot verify what it installs: regenerate the lock (npm install --package-lock-only --ignore-scripts) so it records a sha512 integrity", who)
		return
	}
	var algos []string
	for _, h := range strings.Fields(p.Integrity) {
		algo, digest, _ := strings.Cut(h, "-")
		if algo == "sha512" {
			if b, err := base64.StdEncoding.DecodeString(strings.SplitN(digest, "?", 2)[0]); err == nil && len(b) == 64 {
				return
			}
			add(errcode.PolicyDenied, "integrity", key, "%s has a malformed sha512 integrity %q", who, h)
			return
		}
		algos = append(algos, algo)
	}
	add(errcode.PolicyDenied, "integrity", key,
		"%s has only a %s integrity; a release needs sha512 (sha1 is broken): use a version of the package published with a sha512 digest, or replace it",
		who, strings.Join(algos, "+"))
}

// sourcePrefixes turns release.sources into URL prefixes ending in "/",
// so https://a.example/npm does not admit https://a.example/npm-evil/.
func sourcePrefixes(sources []string, registry string) (prefixes []string, npm bool) {
	for _, s := range sources {
		if s == SourceNPM {
			npm = true
			s = registry
		}
		prefixes = append(prefixes, withSlash(s))
	}
	return prefixes, npm
}

func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}

func underAny(u string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return false
}

func describeSources(sources []string, registry string) string {
	if len(sources) == 0 {
		return "none: only file: packages inside the distribution directory"
	}
	var parts []string
	for _, s := range sources {
		if s == SourceNPM {
			s = "npm = " + registry
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func describePkg(key string, p LockPackage) string {
	name := PackageName(key, p)
	if p.Version != "" {
		name += "@" + p.Version
	}
	return name
}

// insideDir reports whether p is dir or below it, lexically and, where the
// path exists, after resolving symbolic links.
func insideDir(dir, p string) bool {
	in := func(dir, p string) bool {
		rel, err := filepath.Rel(dir, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
	}
	if !in(filepath.Clean(dir), filepath.Clean(p)) {
		return false
	}
	if _, err := os.Lstat(p); err != nil {
		return true
	}
	rd, err1 := filepath.EvalSymlinks(dir)
	rp, err2 := filepath.EvalSymlinks(p)
	if err1 != nil || err2 != nil {
		return false
	}
	return in(rd, rp)
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return "a target"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
