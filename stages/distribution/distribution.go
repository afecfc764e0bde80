package distribution

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/stages/home/receipt"
)

// FileName is the distribution file in a distribution directory.
const FileName = "distribution.hcl"

// SourceNPM in release.sources stands for the registry npm is configured
// for.
const SourceNPM = "npm"

// Distribution is a decoded, validated distribution.hcl.
type Distribution struct {
	// ID is the block label: distribution "<id>". It names apps/<id>/ and
	// receipts/<id>.json.
	ID   string
	Name string
	// Version is distribution.hcl's version, "" when not written: the
	// release version is ResolveVersion's.
	Version string
	// Command is the shim's file name: <bin-home>/<command>.
	Command string
	// Dir is the distribution directory, absolute. Every relative path of
	// the distribution resolves against it.
	Dir string
	// File is distribution.hcl's path as diagnostics name it.
	File    string
	Runtime Runtime
	// Resources are slash-separated, cleaned paths relative to Dir, in the
	// order written.
	Resources []string
	Tools     map[string]Tool
	// SearchTools are the bundled search tools (fd, rg) by name; nil
	// without a search_tools block.
	SearchTools map[string]SearchTool
	// Node is the node block: the Node.js the payload ships and launches
	// run; nil without one (the node on PATH runs the release).
	Node *Node
	// Installers is the installers block, nil when it is not written.
	Installers     *Installers
	Release        Release
	VerifyAtLaunch bool
	// Audit is the audit block, defaults filled in when there is none.
	Audit Audit
	// Signatures is the signatures block (its defaults when there is none).
	Signatures Signatures
	// Smoke are the smoke tests in the order written.
	Smoke []Smoke
	// Updates is the updates block, nil when it is not written.
	Updates *Updates
	// Packages are the vendored Pi packages (package blocks), in the
	// order written.
	Packages []PiPackage
	// SHA256 is the lowercase hex SHA-256 of the distribution.hcl bytes
	// this was decoded from.
	SHA256 string

	// DeclRange is the distribution block's header.
	DeclRange hcl.Range
	// ranges maps "name", "runtime.entry", "resources[0]", "tools.rg",
	// "tools.rg.sha256", "release.targets[0]"... to where they are written.
	ranges map[string]hcl.Range
	// shownDir is the directory as the caller named it, for messages.
	shownDir string
}

// Runtime is the runtime block: an npm project whose locked dependency tree
// is the program.
type Runtime struct {
	// Dir holds package.json and package-lock.json; slash-separated,
	// relative to the distribution directory.
	Dir string
	// Entry is the program's main module, relative to Dir, inside an
	// installed package: node_modules/<package>/<file>.
	Entry string
	// AllowInstallScripts names the packages that may declare install
	// scripts. The scripts are never run (npm ci --ignore-scripts).
	AllowInstallScripts []string
}

// Tool is a pinned extra executable copied into the payload's tools/.
type Tool struct {
	Name string
	// Source is a path relative to the distribution directory
	// (slash-separated, cleaned) or an https:// URL.
	Source string
	// SHA256 is the pinned lowercase hex digest of the executable.
	SHA256 string
}

// IsURL reports whether the tool is fetched rather than read from the
// distribution directory.
func (t Tool) IsURL() bool { return strings.HasPrefix(t.Source, "https://") }

// Release is the release block: how a release of the distribution is made.
type Release struct {
	Bundle bool
	Strip  bool
	// Targets are <platform>-<arch> in Node's naming.
	Targets []string
	// Sources are where locked packages may come from: SourceNPM or https://
	// URL prefixes.
	Sources []string
}

// Audit severities, lowest first: fail_on is one of them.
const (
	SeverityLow      = "low"
	SeverityModerate = "moderate"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// Severities lists the severities, lowest first.
var Severities = []string{SeverityLow, SeverityModerate, SeverityHigh, SeverityCritical}

// SeverityRank orders severities: 1 for low up to 4 for critical, 0 for
// anything else.
func SeverityRank(s string) int { return slices.Index(Severities, s) + 1 }

// SourceOSVPrefix starts an audit source that is an offline OSV database:
// "osv:<path>".
const SourceOSVPrefix = "osv:"

// DefaultSmokeTimeout is a smoke test's timeout when it sets none.
const DefaultSmokeTimeout = 300 * time.Second

// maxSmokeTimeout bounds smoke.timeout.
const maxSmokeTimeout = time.Hour

// Audit is the audit block: the vulnerability audit of a release.
type Audit struct {
	// Sources are SourceNPM (the registry's bulk advisory endpoint) and
	// "osv:<path>" (SourceOSVPrefix and a cleaned, slash-separated path
	// relative to the distribution directory: a .zip or a directory of OSV
	// JSON records), in the order written.
	Sources []string
	// FailOn is one of Severities: findings at or above it fail.
	FailOn string
	// Allow are the accepted advisories in the order written.
	Allow []Allow
	// AllowUnavailable lets a source that cannot be consulted leave the
	// verdict "unavailable" instead of failing the release.
	AllowUnavailable bool
}

// OSVPaths returns the paths of the osv: sources, relative to the
// distribution directory, in the order written.
func (a Audit) OSVPaths() []string {
	var out []string
	for _, s := range a.Sources {
		if p, ok := strings.CutPrefix(s, SourceOSVPrefix); ok {
			out = append(out, p)
		}
	}
	return out
}

// Allow is an accepted advisory: allow "<id>" { reason, expires }.
type Allow struct {
	// ID is the advisory's id as written (GHSA-..., CVE-..., an OSV id or
	// an npm advisory number); it matches an advisory's id or aliases,
	// ignoring case.
	ID     string
	Reason string
	// Expires is the last day the acceptance holds, at 00:00 UTC: it
	// holds until Expires plus one day.
	Expires time.Time
}

// Expired reports whether the acceptance no longer holds at now: the day
// after Expires has begun (UTC).
func (a Allow) Expired(now time.Time) bool { return !now.Before(a.Expires.AddDate(0, 0, 1)) }

// Signatures is the signatures block: the check of the npm registry's
// signatures.
type Signatures struct {
	// AllowUnavailable lets signatures that cannot be checked leave the
	// verdict "unavailable" instead of failing the release. An invalid
	// signature always fails.
	AllowUnavailable bool
}

// Smoke is a smoke "<name>" block: a test of the payload that every
// release runs.
type Smoke struct {
	// Name is the block label, [a-z0-9][a-z0-9._-]*.
	Name string
	// Args are the command's arguments.
	Args []string
	// Expect is an RE2 regular expression, checked when decoded, matched
	// against the run's trimmed combined stdout and stderr. It may hold
	// ${version} (receipt.VersionRef), which stands for the release
	// version, matched literally: Regexp fills it in.
	Expect string
	// Timeout is how long the run may take (DefaultSmokeTimeout when not
	// set).
	Timeout time.Duration

	re *regexp.Regexp
}

// Regexp is Expect compiled for a release of version: ${version}
// replaced by the version, quoted (receipt.ExpandExpect).
func (s Smoke) Regexp(version string) (*regexp.Regexp, error) {
	if s.re != nil {
		return s.re, nil
	}
	return regexp.Compile(receipt.ExpandExpect(s.Expect, version))
}

// Range returns where the value at key is written: "name", "runtime.entry",
// "resources[0]", "tools.rg", "tools.rg.sha256", "release.targets[1]",
// "audit.sources[0]", "audit.allow.<id>", "audit.allow.<id>.expires",
// "smoke.<name>", "smoke.<name>.expect", "updates.source",
// "updates.root_sha256"... A key that was not written (a default)
// falls back to its block, then to the distribution block.
func (d *Distribution) Range(key string) hcl.Range {
	for k := key; k != ""; {
		if r, ok := d.ranges[k]; ok {
			return r
		}
		if i := strings.LastIndexAny(k, ".["); i > 0 {
			k = k[:i]
		} else {
			break
		}
	}
	return d.DeclRange
}

// Declared reports whether distribution.hcl writes the block ("audit",
// "signatures", "updates", "release"...) rather than leaving it to its
// defaults.
func (d *Distribution) Declared(block string) bool {
	_, ok := d.ranges[block]
	return ok
}

// Pos is Range(key) as file:line:col.
func (d *Distribution) Pos(key string) string { return fmtPos(d.Range(key)) }

// LockPath is the path of the distribution's piship.lock.
func (d *Distribution) LockPath() string { return filepath.Join(d.Dir, LockFileName) }

// RuntimeDir is the runtime directory, absolute.
func (d *Distribution) RuntimeDir() string {
	return filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir))
}

// ShownDir is the distribution directory as the caller named it, for
// messages and hints ("run piship lock <dir>").
func (d *Distribution) ShownDir() string {
	if d.shownDir != "" {
		return d.shownDir
	}
	return d.Dir
}

// shown names a path of the distribution as the user would type it.
func (d *Distribution) shown(rel string) string {
	return filepath.Join(d.ShownDir(), filepath.FromSlash(rel))
}
