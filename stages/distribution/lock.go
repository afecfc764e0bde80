package distribution

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage/errcode"
)

// LockFileName is the lock beside distribution.hcl.
const LockFileName = "piship.lock"

// LockSchema identifies the lock format.
const LockSchema = "piship-lock/v1"

// Lock is DIST/piship.lock: what a distribution is made of, by digest. It
// is canonical JSON (keys sorted, two-space indent, trailing newline), so
// the same inputs always give the same bytes: an installed release's
// receipt records the lock's digest and every launch compares it.
type Lock struct {
	Schema       string           `json:"schema"`
	Distribution LockDistribution `json:"distribution"`
	// DistributionSHA256 is the digest of the distribution.hcl bytes.
	DistributionSHA256 string      `json:"distributionSha256"`
	Runtime            LockRuntime `json:"runtime"`
	// Resources maps each file under the resource paths (slash-separated,
	// relative to the distribution directory) to its sha256.
	Resources map[string]string   `json:"resources"`
	Tools     map[string]LockTool `json:"tools"`
	// SearchTools pins the search_tools block: tool -> target -> archive
	// URL and sha256. Absent without the block.
	SearchTools map[string]map[string]SearchArchive `json:"searchTools,omitempty"`
	// Node pins the node block: per target its archive and the sha256 of
	// the node executable in it. Absent without the block.
	Node *LockNode `json:"node,omitempty"`
	// Installers pins the installers block: source and, per target, the
	// sha256 of the installer and the launcher. Absent without the block.
	Installers     *Installers `json:"installers,omitempty"`
	Release        LockRelease `json:"release"`
	VerifyAtLaunch bool        `json:"verifyAtLaunch"`
	// Audit, Signatures, Smoke and Updates record the blocks of the same
	// names. Each is absent when distribution.hcl has no such block (then
	// the defaults apply), so a distribution without them locks to the
	// same bytes as before they existed.
	Audit      *LockAudit      `json:"audit,omitempty"`
	Signatures *LockSignatures `json:"signatures,omitempty"`
	Smoke      []LockSmoke     `json:"smoke,omitempty"`
	// Updates records the updates block: what installed copies trust to
	// sign channels. Absent when the block is not written.
	Updates *LockUpdates `json:"updates,omitempty"`
	// Packages are the vendored Pi packages, in the order written; absent
	// without package blocks.
	Packages []LockPiPackage `json:"piPackages,omitempty"`
}

// LockUpdates is the updates block: the channel, where the TUF
// repository is and the sha256 of the initial root installed copies pin.
type LockUpdates struct {
	Channel    string `json:"channel"`
	Source     string `json:"source"`
	RootSHA256 string `json:"rootSha256"`
}

// LockAudit is the audit policy, lists sorted, and the digests of the
// offline advisory databases it reads.
type LockAudit struct {
	Sources          []string    `json:"sources"`
	FailOn           string      `json:"failOn"`
	AllowUnavailable bool        `json:"allowUnavailable"`
	Allow            []LockAllow `json:"allow"`
	// Databases maps every file of the osv: sources (slash-separated,
	// relative to the distribution directory) to its sha256.
	Databases map[string]string `json:"databases"`
}

// LockAllow is an accepted advisory.
type LockAllow struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
	// Expires is YYYY-MM-DD.
	Expires string `json:"expires"`
}

// LockSignatures is the signatures policy.
type LockSignatures struct {
	AllowUnavailable bool `json:"allowUnavailable"`
}

// LockSmoke is a smoke test, in the order written.
type LockSmoke struct {
	Name      string   `json:"name"`
	Args      []string `json:"args"`
	Expect    string   `json:"expect"`
	TimeoutMs int64    `json:"timeoutMs"`
}

// LockDistribution identifies the distribution.
type LockDistribution struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Command string `json:"command"`
}

// LockRuntime pins the npm project.
type LockRuntime struct {
	Dir               string `json:"dir"`
	Entry             string `json:"entry"`
	PackageJSONSHA256 string `json:"packageJsonSha256"`
	PackageLockSHA256 string `json:"packageLockSha256"`
	// Packages counts the package-lock.json entries besides the root.
	Packages int `json:"packages"`
	// AllowInstallScripts is the sorted runtime.allow_install_scripts.
	AllowInstallScripts []string `json:"allowInstallScripts"`
}

// LockTool pins an extra executable.
type LockTool struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
}

// LockRelease is the release policy, lists sorted.
type LockRelease struct {
	Bundle  bool     `json:"bundle"`
	Strip   bool     `json:"strip"`
	Targets []string `json:"targets"`
	Sources []string `json:"sources"`
}

// ComputeLock hashes everything the distribution is made of. A local tool
// whose digest is not the one distribution.hcl pins is refused
// (POLICY_DENIED); an https:// tool is recorded with its pinned digest,
// which whatever fetches it must check.
func ComputeLock(d *Distribution) (*Lock, error) {
	l := &Lock{
		Schema:             LockSchema,
		Distribution:       LockDistribution{ID: d.ID, Name: d.Name, Version: d.Version, Command: d.Command},
		DistributionSHA256: d.SHA256,
		Resources:          map[string]string{},
		Tools:              map[string]LockTool{},
		Release: LockRelease{
			Bundle:  d.Release.Bundle,
			Strip:   d.Release.Strip,
			Targets: sortedCopy(d.Release.Targets),
			Sources: sortedCopy(d.Release.Sources),
		},
		VerifyAtLaunch: d.VerifyAtLaunch,
	}
	l.Runtime = LockRuntime{Dir: d.Runtime.Dir, Entry: d.Runtime.Entry, AllowInstallScripts: sortedCopy(d.Runtime.AllowInstallScripts)}

	rt := d.RuntimeDir()
	pj, err := atomicfs.ReadRegular(filepath.Join(rt, "package.json"), 0)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "runtime (%s): %v", d.Pos("runtime.dir"), err)
	}
	l.Runtime.PackageJSONSHA256 = canon.SHA256Hex(pj)
	pl, raw, err := ReadPackageLock(filepath.Join(rt, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	l.Runtime.PackageLockSHA256 = canon.SHA256Hex(raw)
	for key := range pl.Packages {
		if key != "" {
			l.Runtime.Packages++
		}
	}

	// Resources: list every file first, then hash them in parallel.
	var files []string
	for i, r := range d.Resources {
		found, err := listTree(d, r, fmt.Sprintf("resources[%d]", i), "resource")
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	sums, err := hashFiles(d.Dir, files)
	if err != nil {
		return nil, err
	}
	for i, f := range files {
		l.Resources[f] = sums[i]
	}

	for _, name := range slices.Sorted(maps.Keys(d.Tools)) {
		t := d.Tools[name]
		if !t.IsURL() {
			sum, err := hashFile(filepath.Join(d.Dir, filepath.FromSlash(t.Source)))
			if err != nil {
				return nil, errcode.Newf(errcode.ConfigInvalid, "tool %q (%s): %v", name, d.Pos("tools."+name+".source"), err)
			}
			if sum != t.SHA256 {
				return nil, errcode.Newf(errcode.PolicyDenied, "tool %q (%s): %s has sha256 %s but %s pins %s; if this file is the one to ship, set sha256 = %q and run piship lock %s",
					name, d.Pos("tools."+name+".sha256"), d.shown(t.Source), sum, FileName, t.SHA256, sum, d.ShownDir())
			}
		}
		l.Tools[name] = LockTool{Source: t.Source, SHA256: t.SHA256}
	}
	l.SearchTools = lockSearchTools(d)
	l.Node = lockNode(d)
	l.Installers = lockInstallers(d)
	if err := lockPolicy(d, l); err != nil {
		return nil, err
	}
	if err := lockPackages(d, l); err != nil {
		return nil, err
	}
	return l, nil
}

// lockPolicy records the audit, signatures, smoke and updates blocks that
// are written, hashing every file of the osv: audit databases.
func lockPolicy(d *Distribution, l *Lock) error {
	if d.Declared("audit") {
		a := &LockAudit{
			Sources:          sortedCopy(d.Audit.Sources),
			FailOn:           d.Audit.FailOn,
			AllowUnavailable: d.Audit.AllowUnavailable,
			Allow:            []LockAllow{},
			Databases:        map[string]string{},
		}
		for _, al := range d.Audit.Allow {
			a.Allow = append(a.Allow, LockAllow{ID: al.ID, Reason: al.Reason, Expires: al.Expires.Format(time.DateOnly)})
		}
		slices.SortFunc(a.Allow, func(x, y LockAllow) int { return strings.Compare(x.ID, y.ID) })
		var files []string
		for i, src := range d.Audit.Sources {
			p, ok := strings.CutPrefix(src, SourceOSVPrefix)
			if !ok {
				continue
			}
			found, err := listTree(d, p, fmt.Sprintf("audit.sources[%d]", i), "OSV database")
			if err != nil {
				return err
			}
			files = append(files, found...)
		}
		sums, err := hashFiles(d.Dir, files)
		if err != nil {
			return err
		}
		for i, f := range files {
			a.Databases[f] = sums[i]
		}
		l.Audit = a
	}
	if d.Declared("signatures") {
		l.Signatures = &LockSignatures{AllowUnavailable: d.Signatures.AllowUnavailable}
	}
	for _, s := range d.Smoke {
		l.Smoke = append(l.Smoke, LockSmoke{Name: s.Name, Args: append([]string{}, s.Args...), Expect: s.Expect, TimeoutMs: s.Timeout.Milliseconds()})
	}
	if u := d.Updates; u != nil {
		lu := &LockUpdates{Channel: u.Channel, Source: u.Source, RootSHA256: u.RootSHA256}
		l.Updates = lu
	}
	return nil
}

// UpdateRoot is the initial root the lock pins for updates
// ("sha256:<hex>"). Installations take it from the installed release's
// lock, whose digest the receipt pins. A lock without an updates block, or
// one written before TUF (no rootSha256), is refused.
func (l *Lock) UpdateRoot() (string, error) {
	id := l.Distribution.ID
	u := l.Updates
	if u == nil {
		return "", NoUpdatesError(id, l.Distribution.Version)
	}
	pin, msg := CheckRootPin(u.RootSHA256)
	if msg != "" {
		return "", errcode.Newf(errcode.UpdateFailed, "the lock of %q pins no TUF root (updates.rootSha256 %q): it was built for piship-channel/v1, which was replaced by TUF repositories; install a release built with updates.root_sha256", id, u.RootSHA256)
	}
	return pin, nil
}

// NoUpdatesError is the refusal of an update of a release whose lock has
// no updates block: it pins no TUF root, and piship never trusts a
// repository on first use (--from included). It says what the publisher
// adds to distribution.hcl and the commands that make the repository.
func NoUpdatesError(id, version string) error {
	return errcode.Newf(errcode.UpdateFailed, `distribution %[1]q has no updates block: release %[2]s pins no TUF root, and piship trusts no update repository on first use (--from included)
To make %[1]s updatable, its publisher makes a repository and pins its root in distribution.hcl:
  piship keygen root.pem && piship keygen targets.pem && piship keygen online.pem
  piship repo init REPO --key root=root.pem --key targets=targets.pem --key snapshot=online.pem --key timestamp=online.pem
adds the updates block with the root_sha256 line repo init prints (source: where REPO is served, or its directory):
  updates {
    channel     = "stable"
    source      = "https://example.com/%[1]s/"
    root_sha256 = "sha256:<hex that repo init prints>"
  }
then runs piship lock, piship release and piship repo add REPO ARCHIVE --key targets.pem --key online.pem, and installs that release once (piship install ARCHIVE): its later releases then update with piship update %[1]s`, id, version)
}

// listTree returns the slash paths of every regular file at or under r,
// a path of the distribution (what: "resource", "OSV database"); a symlink
// or a special file is refused.
func listTree(d *Distribution, r, key, what string) ([]string, error) {
	root := filepath.Join(d.Dir, filepath.FromSlash(r))
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return errcode.Newf(errcode.ConfigInvalid, "%s %s (%s) does not exist", what, d.shown(r), d.Pos(key))
			}
			return errcode.Newf(errcode.ConfigInvalid, "%s %s (%s): %v", what, d.shown(r), d.Pos(key), err)
		}
		rel, _ := filepath.Rel(d.Dir, p)
		rel = filepath.ToSlash(rel)
		switch t := e.Type(); {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			return errcode.Newf(errcode.ConfigInvalid, "%s %s (%s): %s is a symbolic link; only regular files are locked: replace it with what it points to", what, r, d.Pos(key), d.shown(rel))
		case !t.IsRegular():
			return errcode.Newf(errcode.ConfigInvalid, "%s %s (%s): %s is not a regular file", what, r, d.Pos(key), d.shown(rel))
		}
		out = append(out, rel)
		return nil
	})
	return out, err
}

// hashFiles hashes files (slash paths relative to dir) on a few workers;
// sums[i] is the digest of files[i].
func hashFiles(dir string, files []string) ([]string, error) {
	sums, err := payload.HashFiles(context.Background(), dir, files)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	return sums, nil
}

func hashFile(p string) (string, error) { return cache.HashFile(p) }

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return out
}

// Marshal returns the canonical bytes of the lock: keys sorted, two-space
// indent, no HTML escaping, a trailing newline; empty lists and maps are
// written as [] and {}.
func (l *Lock) Marshal() []byte {
	c := *l
	if c.Resources == nil {
		c.Resources = map[string]string{}
	}
	if c.Tools == nil {
		c.Tools = map[string]LockTool{}
	}
	for _, s := range []*[]string{&c.Runtime.AllowInstallScripts, &c.Release.Targets, &c.Release.Sources} {
		if *s == nil {
			*s = []string{}
		}
	}
	if c.Audit != nil {
		a := *c.Audit
		if a.Sources == nil {
			a.Sources = []string{}
		}
		if a.Allow == nil {
			a.Allow = []LockAllow{}
		}
		if a.Databases == nil {
			a.Databases = map[string]string{}
		}
		c.Audit = &a
	}
	if c.Updates != nil {
		u := *c.Updates
		c.Updates = &u
	}
	if c.Packages != nil {
		c.Packages = slices.Clone(c.Packages)
		for i := range c.Packages {
			if c.Packages[i].Extensions == nil {
				c.Packages[i].Extensions = []LockFile{}
			}
			if c.Packages[i].AllowInstallScripts == nil {
				c.Packages[i].AllowInstallScripts = []string{}
			}
		}
	}
	if c.Smoke != nil {
		c.Smoke = slices.Clone(c.Smoke)
		for i := range c.Smoke {
			if c.Smoke[i].Args == nil {
				c.Smoke[i].Args = []string{}
			}
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		panic(err) // strings, bools and ints only
	}
	// Through a generic value, whose maps encoding/json writes sorted.
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		panic(err)
	}
	out, err := canon.JSON(v)
	if err != nil {
		panic(err)
	}
	return out
}

// SHA256 is the digest of the canonical bytes: what a receipt records.
func (l *Lock) SHA256() string { return canon.SHA256Hex(l.Marshal()) }

// WriteLock writes the lock to the distribution directory atomically: a
// temporary sibling, flushed, then renamed over piship.lock. A lock that
// already holds these bytes is left alone.
func WriteLock(d *Distribution, l *Lock) error {
	data := l.Marshal()
	dst := d.LockPath()
	if old, err := atomicfs.ReadRegular(dst, 0); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := atomicfs.WriteFile(dst, data, 0o644, atomicfs.Options{Sync: true}); err != nil {
		return fmt.Errorf("cannot write %s: %v", dst, err)
	}
	return nil
}

// LockError is a lock that is missing, unreadable or stale. Its message
// says what changed and to run piship lock.
type LockError struct {
	// Path is the lock file as shown; Dir the distribution directory.
	Path, Dir string
	Missing   bool
	// Reason is why an existing lock cannot be read, "" when it can.
	Reason string
	// Changes name what differs from the lock: "distribution.hcl",
	// "runtime/package-lock.json", "resource resources/a.txt (added)",
	// "tool rg"...
	Changes []string
}

// ErrorCode is LOCK_INVALID (errcode.Coder).
func (e *LockError) ErrorCode() string { return errcode.LockInvalid }

var _ errcode.Coder = (*LockError)(nil)

func (e *LockError) Error() string {
	hint := "run piship lock " + e.Dir
	switch {
	case e.Missing:
		return fmt.Sprintf("%s: %s is missing: %s", errcode.LockInvalid, e.Path, hint)
	case e.Reason != "":
		return fmt.Sprintf("%s: %s %s: %s", errcode.LockInvalid, e.Path, e.Reason, hint)
	}
	const show = 10
	changes := e.Changes
	if len(changes) > show {
		changes = append(changes[:show:show], fmt.Sprintf("and %d more", len(e.Changes)-show))
	}
	return fmt.Sprintf("%s: %s is stale: changed since it was written: %s: %s", errcode.LockInvalid, e.Path, strings.Join(changes, ", "), hint)
}

// ReadLock reads dir/piship.lock and returns it with its raw bytes. A
// missing or malformed lock is a *LockError.
func ReadLock(dir string) (*Lock, []byte, error) {
	return readLock(filepath.Join(dir, LockFileName), filepath.Join(dir, LockFileName), dir)
}

func readLock(file, shownPath, shownDir string) (*Lock, []byte, error) {
	raw, err := atomicfs.ReadRegular(file, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &LockError{Path: shownPath, Dir: shownDir, Missing: true}
		}
		return nil, nil, &LockError{Path: shownPath, Dir: shownDir, Reason: fmt.Sprintf("cannot be read (%v)", err)}
	}
	l, err := ParseLock(raw)
	if err != nil {
		return nil, raw, &LockError{Path: shownPath, Dir: shownDir, Reason: fmt.Sprintf("is not a valid lock (%v)", err)}
	}
	return l, raw, nil
}

// ParseLock decodes lock bytes, refusing unknown fields and other schemas.
func ParseLock(raw []byte) (*Lock, error) {
	var l Lock
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the lock object")
	}
	if l.Schema != LockSchema {
		return nil, fmt.Errorf("schema is %q, not %q", l.Schema, LockSchema)
	}
	return &l, nil
}

// CheckLock recomputes the lock and compares it with piship.lock, byte for
// byte. It returns the current lock, or a *LockError naming what changed
// (distribution.hcl, the runtime's package.json or package-lock.json, a
// resource added, changed or removed, a tool) with the hint to run
// piship lock. Errors of the inputs themselves (a tool that is not what is
// pinned) come from ComputeLock as they are.
func CheckLock(d *Distribution) (*Lock, error) {
	shownPath := filepath.Join(d.ShownDir(), LockFileName)
	old, raw, err := readLock(d.LockPath(), shownPath, d.ShownDir())
	if err != nil {
		return nil, err
	}
	cur, err := ComputeLock(d)
	if err != nil {
		return nil, err
	}
	carryExtensions(old, cur)
	carryNode(old, cur)
	if bytes.Equal(raw, cur.Marshal()) {
		return cur, nil
	}
	changes := diffLocks(old, cur)
	if len(changes) == 0 {
		return nil, &LockError{Path: shownPath, Dir: d.ShownDir(), Reason: "was edited: it holds the right values but not in canonical form"}
	}
	return nil, &LockError{Path: shownPath, Dir: d.ShownDir(), Changes: changes}
}

// diffLocks names what differs between the recorded lock and the current
// one, most fundamental first.
func diffLocks(old, cur *Lock) []string {
	var out []string
	if old.DistributionSHA256 != cur.DistributionSHA256 {
		out = append(out, FileName)
	} else if !jsonEqual(old.Distribution, cur.Distribution) || !jsonEqual(old.Release, cur.Release) ||
		old.VerifyAtLaunch != cur.VerifyAtLaunch || old.Runtime.Dir != cur.Runtime.Dir || old.Runtime.Entry != cur.Runtime.Entry ||
		!jsonEqual(nonNil(old.Runtime.AllowInstallScripts), nonNil(cur.Runtime.AllowInstallScripts)) ||
		!jsonEqual(policyOf(old), policyOf(cur)) {
		// Same distribution.hcl, other values: the lock was edited.
		out = append(out, "the lock's copy of "+FileName+" settings")
	}
	if old.Runtime.PackageJSONSHA256 != cur.Runtime.PackageJSONSHA256 {
		out = append(out, path.Join(cur.Runtime.Dir, "package.json"))
	}
	if old.Runtime.PackageLockSHA256 != cur.Runtime.PackageLockSHA256 || old.Runtime.Packages != cur.Runtime.Packages {
		out = append(out, path.Join(cur.Runtime.Dir, "package-lock.json"))
	}
	out = append(out, mapChanges("resource", old.Resources, cur.Resources)...)
	out = append(out, mapChanges("tool", old.Tools, cur.Tools)...)
	out = append(out, mapChanges("OSV database file", databasesOf(old), databasesOf(cur))...)
	out = append(out, packageChanges(old, cur)...)
	out = append(out, nodeChanges(old, cur)...)
	if old.Schema != cur.Schema {
		out = append(out, "schema")
	}
	return out
}

// mapChanges names every key added, removed or changed between two
// versions of a map, as "<what> <key> (added|removed|changed)", sorted.
func mapChanges[V comparable](what string, old, cur map[string]V) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(union(old, cur))) {
		o, inOld := old[k]
		c, inCur := cur[k]
		switch {
		case !inOld:
			out = append(out, what+" "+k+" (added)")
		case !inCur:
			out = append(out, what+" "+k+" (removed)")
		case o != c:
			out = append(out, what+" "+k+" (changed)")
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// policyOf is the lock's copy of the audit, signatures, smoke and updates
// settings, without the database digests (diffLocks names those file by
// file).
func policyOf(l *Lock) any {
	var a *LockAudit
	if l.Audit != nil {
		c := *l.Audit
		c.Databases = nil
		a = &c
	}
	// Through Marshal's normalization: nil and empty lists are the same.
	n := (&Lock{Audit: a, Signatures: l.Signatures, Smoke: l.Smoke, Updates: l.Updates}).Marshal()
	return string(n)
}

func databasesOf(l *Lock) map[string]string {
	if l.Audit == nil {
		return nil
	}
	return l.Audit.Databases
}
