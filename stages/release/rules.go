package release

// The rules of a valid release (the table in the package comment), as
// functions of data: the digests of the files a consumer wrote or found,
// and the bytes of the few small metadata files. Install (stages/home),
// verify-release (stages/verify) and doctor (stages/home, for an installed
// version) all call Check; none reads a payload file for it.

import (
	"bytes"
	"context"
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
	"sort"
	"strings"
	"sync"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage/errcode"
)

// Rule names one rule of a valid release. It is the name of the
// verify-release check that applies it, and install's and doctor's errors
// say it in parentheses: "release refused (lock-entry): ...".
type Rule string

// The release rules, in the order Check applies them.
const (
	RuleRequired  Rule = "required-files"          // every file a release (or a payload) must hold is there
	RuleChecksums Rule = "checksums"               // checksums.txt: sorted `<sha256>  <path>` lines, exactly the covered files, each digest right
	RuleJSON      Rule = "release-json"            // release.json: strict piship-release/v1, required fields, qualified
	RuleInvPath   Rule = "inventory-path"          // every inventory entry is a slash path inside the payload, with a sha256
	RuleInventory Rule = "payload-inventory"       // the payload's files are exactly the inventory's, each digest right
	RuleLock      Rule = "lock"                    // payload/piship.lock parses (strict piship-lock schema)
	RuleLockEntry Rule = "lock-entry"              // the lock's command is a file name; its entry a slash path in the inventory; each search tool it bundles is in tools/
	RuleTarget    Rule = "target"                  // payload/metadata/target.json names a platform and an arch
	RuleBindings  Rule = "release-matches-payload" // release.json binds payload/, the inventory's and the lock's digests and the file count
	RuleIdentity  Rule = "identity"                // the archive's name, release.json, the lock and target.json name one id, version, command and target
	RuleSigned    Rule = "signed-entry"            // the lock is the one the signed TUF target an update chose claims (its lockSha256)
	CodeIntegrity      = errcode.IntegrityFailed   // the code of every release rule's refusal
)

// Required files, release-relative slash paths.
const (
	LockPath      = "payload/" + distribution.LockFileName
	InventoryPath = "payload/" + payload.InventoryName
	TargetPath    = "payload/metadata/target.json"
)

// SearchToolPath is the payload path of search tool name's executable in
// an inventory: tools/<name>, or tools/<name>.exe (a win32 payload).
func SearchToolPath(inv map[string]string, name string) (string, bool) {
	for _, p := range []string{"tools/" + name, "tools/" + name + ".exe"} {
		if _, ok := inv[p]; ok {
			return p, true
		}
	}
	return "", false
}

// NodePath is the payload path of the pinned Node's executable, given
// whether the inventory has a path: node/bin/node, or node/node.exe (a
// win32 payload).
func NodePath(has func(p string) bool) (string, bool) {
	for _, p := range []string{"node/bin/node", "node/node.exe"} {
		if has(p) {
			return p, true
		}
	}
	return "", false
}

// RequiredFiles lists what a release must hold (payloadOnly: what a
// payload directory, installed as payload/, must hold).
func RequiredFiles(payloadOnly bool) []string {
	if payloadOnly {
		return []string{InventoryPath, LockPath, TargetPath}
	}
	return []string{ChecksumsName, releasejson.Name, NoticesName, NoticesIndexName, SBOMName, VulnerabilitiesName, InventoryPath, LockPath, TargetPath}
}

// Error is a refused release: the rule, the file and what is wrong.
type Error struct {
	Rule   Rule
	File   string // release-relative slash path
	Detail string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: release refused (%s): %s: %s", CodeIntegrity, e.Rule, e.File, e.Detail)
}

// ErrorCode is INTEGRITY_FAILED (errcode.Coder).
func (e *Error) ErrorCode() string { return CodeIntegrity }

var _ errcode.Coder = (*Error)(nil)

// AsError returns the *Error in err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Identity is a release's id, version and target. In Input.Name an empty
// field is not compared (a payload directory has no name to go by; an
// update's archive may be named for its channel entry only).
type Identity struct {
	ID, Version, Target string
}

// Input is what a consumer found, as data.
type Input struct {
	// PayloadOnly: a payload directory (piship build), installed as
	// payload/: no release.json, checksums or SBOM.
	PayloadOnly bool
	// Name is the identity the archive's name (or the caller) claims.
	Name Identity
	// Files maps every regular file of the release (release-relative
	// slash paths, the shipped piship binaries aside) to its lowercase
	// hex SHA-256, computed while the consumer wrote or read it.
	Files map[string]string
	// Read returns the bytes of one small metadata file; Check compares
	// them with Files, so a file changed after it was hashed is refused.
	Read func(rel string) ([]byte, error)
	// SignedLock is the lock digest the signed TUF target an update chose
	// claims (its custom lockSha256); "" when there is none to compare.
	SignedLock string
}

// Checked is what Check learned.
type Checked struct {
	// Results has one entry per rule applied, in order (Err nil: passed).
	// A rule whose inputs an earlier failure left unknown is not applied.
	Results  []Result
	Release  *releasejson.Metadata // nil for a payload directory
	Lock     *distribution.Lock
	Identity Identity // from release.json, else the lock and target.json
	// InventorySHA256 and LockSHA256 are the digests of the two files;
	// Files counts the payload's files, the inventory included.
	InventorySHA256, LockSHA256 string
	Files                       int
}

// Result is one rule's outcome.
type Result struct {
	Rule Rule
	File string
	Err  *Error // nil when the rule held
}

// Err is the first failed rule as an error, or nil.
func (c *Checked) Err() error {
	for _, r := range c.Results {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// ValidPath reports whether p is a slash path that stays inside the
// directory it is relative to on every target: not empty, not absolute, no
// "." or ".." or empty segment, no backslash, no drive prefix.
func ValidPath(p string) bool {
	return fs.ValidPath(p) && p != "." && !strings.ContainsAny(p, `\:`) && path.Clean(p) == p
}

// Checksummed reports whether checksums.txt covers the release file p:
// every file but checksums.txt itself, the payload (its inventory stands
// for it) and the files outside the archive (OutsideArchive).
func Checksummed(p string) bool {
	switch {
	case p == ChecksumsName, OutsideArchive(p):
		return false
	case strings.HasPrefix(p, "payload/"):
		return p == InventoryPath
	}
	return true
}

type checker struct {
	in  Input
	out *Checked
}

func (c *checker) result(rule Rule, file string, problems []string) bool {
	r := Result{Rule: rule, File: file}
	if len(problems) > 0 {
		r.Err = &Error{Rule: rule, File: file, Detail: summarize(problems)}
	}
	c.out.Results = append(c.out.Results, r)
	return r.Err == nil
}

func (c *checker) fail(rule Rule, file, format string, args ...any) bool {
	return c.result(rule, file, []string{fmt.Sprintf(format, args...)})
}

// read returns a metadata file's bytes, checked against its digest.
func (c *checker) read(rule Rule, rel string) ([]byte, bool) {
	want, ok := c.in.Files[rel]
	if !ok {
		return nil, c.fail(rule, rel, "missing")
	}
	data, err := c.in.Read(rel)
	if err != nil {
		return nil, c.fail(rule, rel, "%v", err)
	}
	if canon.SHA256Hex(data) != want {
		return nil, c.fail(rule, rel, "changed after it was hashed")
	}
	return data, true
}

// Check applies every release rule to in, in the order of the table. It
// continues past a failure wherever the later rules' inputs are known, so
// verify-release can report every problem; install and doctor take Err.
func Check(in Input) *Checked {
	c := &checker{in: in, out: &Checked{}}
	out := c.out

	// required-files
	var missing []string
	for _, p := range RequiredFiles(in.PayloadOnly) {
		if _, ok := in.Files[p]; !ok {
			missing = append(missing, "missing "+p)
		}
	}
	c.result(RuleRequired, map[bool]string{true: "payload/", false: "."}[in.PayloadOnly], missing)

	if !in.PayloadOnly {
		if raw, ok := c.read(RuleChecksums, ChecksumsName); ok {
			c.result(RuleChecksums, ChecksumsName, checksumProblems(raw, in.Files))
		}
		if raw, ok := c.read(RuleJSON, releasejson.Name); ok {
			rel, err := releasejson.Parse(raw)
			if err != nil {
				c.fail(RuleJSON, releasejson.Name, "%v", err)
			} else {
				out.Release = rel
				c.result(RuleJSON, releasejson.Name, nil)
			}
		}
	}

	// The inventory: its entries, then the exact set.
	var inv map[string]string
	if raw, ok := c.read(RuleInvPath, InventoryPath); ok {
		out.InventorySHA256 = canon.SHA256Hex(raw)
		var problems []string
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&inv); err != nil || dec.More() || inv == nil {
			problems = append(problems, fmt.Sprintf("not a JSON object of path -> sha256 (%v)", err))
			inv = nil
		}
		for p, s := range inv {
			switch {
			case !ValidPath(p):
				problems = append(problems, fmt.Sprintf("entry %q is not a path inside the payload", p))
			case p == payload.InventoryName:
				problems = append(problems, "lists itself")
			case !canon.IsSHA256Hex(s):
				problems = append(problems, fmt.Sprintf("entry %q has no lowercase hex sha256", p))
			}
		}
		if c.result(RuleInvPath, InventoryPath, problems) {
			var diffs []string
			for p, s := range inv {
				if got, ok := in.Files["payload/"+p]; !ok {
					diffs = append(diffs, "missing "+p)
				} else if got != s {
					diffs = append(diffs, "changed "+p)
				}
			}
			for p := range in.Files {
				if rel, ok := strings.CutPrefix(p, "payload/"); ok && rel != payload.InventoryName {
					if _, listed := inv[rel]; !listed {
						diffs = append(diffs, "unexpected "+rel)
					}
				}
			}
			out.Files = len(inv) + 1
			c.result(RuleInventory, InventoryPath, diffs)
		} else {
			inv = nil
		}
	}

	// The lock and its entry.
	if raw, ok := c.read(RuleLock, LockPath); ok {
		out.LockSHA256 = canon.SHA256Hex(raw)
		if l, err := distribution.ParseLock(raw); err != nil {
			c.fail(RuleLock, LockPath, "%v", err)
		} else {
			out.Lock = l
			c.result(RuleLock, LockPath, nil)
			var problems []string
			if cmd := l.Distribution.Command; !receipt.ValidName(cmd) {
				problems = append(problems, fmt.Sprintf("the command %q cannot be a file name", cmd))
			}
			switch e := l.Runtime.Entry; {
			case !ValidPath(e):
				problems = append(problems, fmt.Sprintf("the entry %q is not a path inside the payload", e))
			case inv != nil && inv[e] == "":
				problems = append(problems, fmt.Sprintf("the entry %s is not in the payload's inventory", e))
			}
			// Each search tool the lock pins for the payload's target is
			// bundled: a payload without it would let Pi download an
			// unpinned one at its first prompt. (A target the lock pins no
			// archive for ships without it, and the release says so.)
			payloadTarget := ""
			if raw, err := c.in.Read(TargetPath); err == nil {
				payloadTarget, _ = TargetOf(raw)
			}
			for _, name := range slices.Sorted(maps.Keys(l.SearchTools)) {
				if _, pinned := l.SearchTools[name][payloadTarget]; payloadTarget != "" && !pinned {
					continue
				}
				if _, ok := SearchToolPath(inv, name); inv != nil && !ok {
					problems = append(problems, fmt.Sprintf("the lock bundles the search tool %s, and the payload's inventory has no tools/%s", name, name))
				}
			}
			// The pinned Node is in the payload at a digest the lock pins:
			// launches run it, not the node on PATH.
			if l.Node != nil && inv != nil {
				p, ok := NodePath(func(p string) bool { _, ok := inv[p]; return ok })
				pinned := false
				for _, t := range slices.Sorted(maps.Keys(l.Node.Targets)) {
					a := l.Node.Targets[t]
					pinned = pinned || ok && a.BinarySHA256 == inv[p] && distribution.NodePayloadPath(t) == p
				}
				switch {
				case !ok:
					problems = append(problems, fmt.Sprintf("the lock pins Node %s, and the payload's inventory has no node/bin/node (node/node.exe)", l.Node.Version))
				case !pinned:
					problems = append(problems, fmt.Sprintf("the payload's %s (sha256 %s) is not a node executable the lock pins", p, inv[p]))
				}
			}
			c.result(RuleLockEntry, LockPath, problems)
		}
	}

	var target string
	if raw, ok := c.read(RuleTarget, TargetPath); ok {
		if t, err := TargetOf(raw); err != nil {
			c.fail(RuleTarget, TargetPath, "%v", err)
		} else {
			target = t
			c.result(RuleTarget, TargetPath, nil)
		}
	}

	// release.json binds the payload.
	rel := out.Release
	if rel != nil {
		var problems []string
		if rel.Payload.Path != "payload" {
			problems = append(problems, fmt.Sprintf("release.json puts the payload at %q, not payload", rel.Payload.Path))
		}
		if out.InventorySHA256 != "" && !strings.EqualFold(rel.Payload.InventorySHA256, out.InventorySHA256) {
			problems = append(problems, fmt.Sprintf("inventory sha256 %s, release.json says %s", out.InventorySHA256, rel.Payload.InventorySHA256))
		}
		if out.LockSHA256 != "" && !strings.EqualFold(rel.LockSHA256, out.LockSHA256) {
			problems = append(problems, fmt.Sprintf("payload lock sha256 %s, release.json says %s", out.LockSHA256, rel.LockSHA256))
		}
		if inv != nil && out.Files != rel.Payload.Files {
			problems = append(problems, fmt.Sprintf("payload has %s, release.json says %d", canon.Count(out.Files, "file"), rel.Payload.Files))
		}
		c.result(RuleBindings, releasejson.Name, problems)
		c.checkClaims(rel)
	}

	// One identity.
	var id Identity
	var problems []string
	differ := func(what string, a, b Identity) {
		if a.ID != "" && b.ID != "" && (a.ID != b.ID || a.Version != b.Version) {
			problems = append(problems, fmt.Sprintf("%s is %s %s", what, b.ID, b.Version))
		}
		if a.Target != "" && b.Target != "" && a.Target != b.Target {
			problems = append(problems, fmt.Sprintf("%s is for %s", what, b.Target))
		}
	}
	var lockID Identity
	if l := out.Lock; l != nil {
		lockID = Identity{ID: l.Distribution.ID, Version: l.Distribution.Version}
	}
	// The lock records distribution.hcl's version, and none when it
	// writes none (the release is then named by its git tag or
	// --version): such a lock names the id alone.
	lockAs := func(v string) Identity {
		if lockID.Version == "" {
			return Identity{ID: lockID.ID, Version: v, Target: lockID.Target}
		}
		return lockID
	}
	switch {
	case rel != nil:
		id = Identity{ID: rel.Distribution.ID, Version: rel.Distribution.Version, Target: rel.Target}
		differ("release.json", in.Name, id)
		differ("payload/piship.lock", id, lockAs(id.Version))
		differ("payload/metadata/target.json", id, Identity{Target: target})
		if l := out.Lock; l != nil && l.Distribution.Command != rel.Distribution.Command {
			problems = append(problems, fmt.Sprintf("payload/piship.lock names the command %q, release.json %q", l.Distribution.Command, rel.Distribution.Command))
		}
	case in.PayloadOnly && out.Lock != nil && target != "":
		id = Identity{ID: lockID.ID, Version: lockAs(in.Name.Version).Version, Target: target}
		differ("payload/piship.lock", in.Name, lockAs(in.Name.Version))
		differ("payload/metadata/target.json", in.Name, Identity{Target: target})
	}
	if id != (Identity{}) {
		if len(problems) > 0 {
			problems = append([]string{fmt.Sprintf("the archive's name says %s %s for %s", in.Name.ID, in.Name.Version, in.Name.Target)}, problems...)
		}
		c.result(RuleIdentity, releasejson.Name, problems)
	}
	out.Identity = id
	if in.SignedLock != "" && out.LockSHA256 != "" {
		err := CheckSignedLock(out.LockSHA256, in.SignedLock)
		c.out.Results = append(c.out.Results, Result{Rule: RuleSigned, File: LockPath, Err: err})
	}
	return out
}

// CheckSignedLock is the signed-entry rule: the lock's digest is the one
// the signed TUF target an update chose claims (signed "" claims none).
// Check applies it to a fresh extraction, install to a recorded release
// an update would reuse.
func CheckSignedLock(lockSHA256, signed string) *Error {
	if signed == "" || strings.EqualFold(signed, lockSHA256) {
		return nil
	}
	return &Error{Rule: RuleSigned, File: LockPath, Detail: fmt.Sprintf("the lock's sha256 is %s, and the signed TUF target claims %s: the repository signs another release under this version", lockSHA256, signed)}
}

// checksumProblems compares checksums.txt with the release's files.
func checksumProblems(raw []byte, files map[string]string) []string {
	var problems []string
	listed := map[string]bool{}
	prev := ""
	text := string(raw)
	if text != "" && !strings.HasSuffix(text, "\n") {
		problems = append(problems, "the last line has no newline")
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if text == "" {
			break
		}
		sum, p, ok := strings.Cut(line, "  ")
		switch {
		case !ok || !canon.IsSHA256Hex(sum) || !ValidPath(p):
			return append(problems, fmt.Sprintf("line %d is not `<sha256>  <path>`", n+1))
		case p <= prev:
			return append(problems, fmt.Sprintf("line %d (%s) is out of order or repeated: lines are sorted by path", n+1, p))
		}
		prev = p
		listed[p] = true
		got, have := files[p]
		switch {
		case !Checksummed(p):
			problems = append(problems, "lists a file it does not cover: "+p)
		case !have:
			problems = append(problems, "listed but missing: "+p)
		case got != sum:
			problems = append(problems, "changed: "+p)
		}
	}
	for p := range files {
		if Checksummed(p) && !listed[p] {
			problems = append(problems, "not listed: "+p)
		}
	}
	return problems
}

// MaxMetadataBytes bounds a metadata file Check reads.
const MaxMetadataBytes = 4 << 20

// DirReader returns an Input.Read for files below dir: regular files of
// at most MaxMetadataBytes.
func DirReader(dir string) func(rel string) ([]byte, error) {
	return func(rel string) ([]byte, error) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", rel)
		}
		if fi.Size() > MaxMetadataBytes {
			return nil, fmt.Errorf("%s is larger than %d bytes", rel, MaxMetadataBytes)
		}
		return atomicfs.ReadRegular(p, 0)
	}
}

// Scan hashes every regular file below dir (a release directory or an
// installed version), the files outside the archive aside (OutsideArchive):
// the Files of an Input for a release that stands on disk.
func Scan(ctx context.Context, dir string) (map[string]string, error) {
	files, err := payload.Walk(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		if !OutsideArchive(f.Path) {
			paths = append(paths, f.Path)
		}
	}
	sums, err := payload.HashFiles(ctx, dir, paths)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(paths))
	for i, p := range paths {
		out[p] = sums[i]
	}
	return out, nil
}

// ParseSidecar reads <archive>.sha256 beside the archive named base: one
// sha256sum line, `<sha256>  <base>` (the name may carry sha256sum's "*"
// and the directory it was hashed in).
func ParseSidecar(data []byte, base string) (string, error) {
	fields := strings.Fields(string(data))
	if len(fields) != 2 || !canon.IsSHA256Hex(strings.ToLower(fields[0])) || path.Base(strings.TrimPrefix(fields[1], "*")) != base {
		return "", fmt.Errorf("%s.sha256 is not a sha256sum line `<sha256>  %s`", base, base)
	}
	return strings.ToLower(fields[0]), nil
}

func summarize(problems []string) string {
	sort.Strings(problems)
	if len(problems) > 5 {
		problems = append(problems[:5:5], fmt.Sprintf("and %d more", len(problems)-5))
	}
	return strings.Join(problems, "; ")
}

// targetOf reads payload/metadata/target.json: its platform and arch, and
// libc "musl" for a linux-<arch>-musl payload (glibc is not written).
func TargetOf(raw []byte) (string, error) {
	var t struct {
		Platform string `json:"platform"`
		Arch     string `json:"arch"`
		Libc     string `json:"libc"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", err
	}
	if !ValidPath(t.Platform) || !ValidPath(t.Arch) || strings.Contains(t.Platform+t.Arch, "/") || (t.Libc != "" && t.Libc != "musl") {
		return "", fmt.Errorf("names no platform and arch")
	}
	if t.Libc == "musl" {
		return t.Platform + "-" + t.Arch + "-musl", nil
	}
	return t.Platform + "-" + t.Arch, nil
}

// nodeTargetRE is <platform>-<arch> in Node's naming, or linux-<arch>-musl.
var nodeTargetRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^((aix|android|darwin|freebsd|linux|openbsd|sunos|win32)-(arm|arm64|ia32|loong64|mips|mipsel|ppc64|riscv64|s390x|x64)|linux-(arm|arm64|ia32|loong64|mips|mipsel|ppc64|riscv64|s390x|x64)-musl)$`)
})

// ParseArchiveName splits <id>-<version>-<target>.tar.zst (or .tar.gz:
// the extension of either archive format, archive.TrimExt), the name a
// release archive keeps: the identity install extracts it under and both
// consumers hold release.json to. The target is the last two segments (three
// for linux-<arch>-musl); of
// the remaining name, every split into a valid id and a semantic version is
// a candidate, and there must be exactly one. why says what is wrong ("" when
// nothing is).
func ParseArchiveName(base string) (n Identity, why string) {
	name, ok := archive.TrimExt(base)
	if !ok {
		return n, "not <id>-<version>-<target>.tar.zst (or .tar.gz)"
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return n, "no target"
	}
	j := strings.LastIndexByte(name[:i], '-')
	if j <= 0 {
		return n, "no target"
	}
	if name[i+1:] == "musl" {
		if k := strings.LastIndexByte(name[:j], '-'); k > 0 {
			j = k
		}
	}
	target, rest := name[j+1:], name[:j]
	if !nodeTargetRE().MatchString(target) {
		return n, fmt.Sprintf("%q is not a target", target)
	}
	found := 0
	for k := 0; k < len(rest); k++ {
		if rest[k] == '-' && receipt.ValidName(rest[:k]) && receipt.ValidVersion(rest[k+1:]) {
			n = Identity{ID: rest[:k], Version: rest[k+1:], Target: target}
			found++
		}
	}
	switch found {
	case 0:
		return Identity{}, "no <id>-<version>"
	case 1:
		return n, ""
	}
	return Identity{}, "more than one way to split it"
}
