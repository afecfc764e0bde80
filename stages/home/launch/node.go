package launch

import (
	"fmt"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

// The pinned Node at launch.
//
// A release whose lock has a node block ships its own Node in the payload
// (node/bin/node; node/node.exe on win32), and install records it in the
// receipt (receipt.Release.Node: path, sha256, size). A start runs that
// node, never the one on PATH, after checking it:
//
//   - the receipt's digest must be the one the lock (whose digest the start
//     has just compared) pins for this machine's target, and a lock with a
//     node block needs a receipt that records the node: an edited receipt
//     is INTEGRITY_FAILED;
//   - Node is ~100 MB, so a start does not hash it: it compares the
//     executable's stat fingerprint (size, modification and change times,
//     device and inode, as the search tools' receipt does) with
//     .piship-node.json in the state directory, written by the start that
//     last hashed it in full. Any difference (a first start, a reinstall,
//     a rewrite, even one that puts the modification time back, which
//     still moves the change time) hashes it in full again: the right
//     digest is recorded again, any other is INTEGRITY_FAILED and nothing
//     runs;
//   - under verifyAtLaunch, and in doctor, it is hashed in full whatever
//     the fingerprint says.
//
// Without a state directory (Options.StateDir ""), every start hashes it.

// NodeReceiptName is the pinned Node's fingerprint record in the state
// directory.
const NodeReceiptName = ".piship-node.json"

// NodeReceiptSchema identifies its format.
const NodeReceiptSchema = "piship-node/v1"

type nodeReceipt struct {
	Schema string `json:"schema"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	fingerprint
}

// lockNode is what a start reads of the lock's node block.
type lockNode struct {
	Version string `json:"version"`
	Targets map[string]struct {
		BinarySHA256 string `json:"binarySha256"`
	} `json:"targets"`
}

// NodeResult is what checking the pinned Node did.
type NodeResult struct {
	// Path is the node executable to run ("" when the release ships none).
	Path string
	// Hashed says it was hashed in full (BytesRead bytes); otherwise its
	// fingerprint matched the record.
	Hashed    bool
	BytesRead int64
	// Unrecorded says why the fingerprint could not be recorded ("" when it
	// was, or did not need to be): the next start hashes it again.
	Unrecorded string
}

// PrepareNode returns the payload's node to run for rel, checked as above
// (full: hashed whatever the fingerprint), or a zero result when the
// release ships none.
func PrepareNode(id string, rel *receipt.Release, lock *lockNode, stateDir string, full bool) (NodeResult, error) {
	var res NodeResult
	if lock == nil && rel.Node == nil {
		return res, nil
	}
	if lock == nil || rel.Node == nil {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: the lock and the receipt disagree on whether the release ships its own Node: nothing was run; run piship repair %s, or reinstall the release", id, rel.Version, id)
	}
	target := platform.HostTarget()
	pin, ok := lock.Targets[target]
	if !ok || pin.BinarySHA256 == "" || !strings.EqualFold(pin.BinarySHA256, rel.Node.SHA256) {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: the receipt's Node (sha256 %s) is not the one the lock pins for %s (%q): nothing was run; run piship repair %s", id, rel.Version, rel.Node.SHA256, target, pin.BinarySHA256, id)
	}
	if !filepath.IsLocal(filepath.FromSlash(rel.Node.Path)) {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: the receipt names Node at %q, which is not a file of the payload: reinstall the release", id, rel.Version, rel.Node.Path)
	}
	res.Path = filepath.Join(rel.Payload, filepath.FromSlash(rel.Node.Path))
	fp, err := statFingerprint(res.Path)
	if err != nil {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: its Node %s is missing (%v): nothing was run; run piship repair %s", id, rel.Version, res.Path, err, id)
	}
	rpath := ""
	if stateDir != "" {
		rpath = filepath.Join(stateDir, NodeReceiptName)
	}
	if !full && rpath != "" {
		var rc nodeReceipt
		if readRecord(rpath, &rc) &&
			rc.Schema == NodeReceiptSchema && rc.Path == res.Path && strings.EqualFold(rc.SHA256, rel.Node.SHA256) && rc.fingerprint == fp {
			return res, nil
		}
	}
	sum, n, err := hashPath(res.Path)
	res.Hashed, res.BytesRead = true, n
	if err != nil {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: cannot read its Node %s: %v: nothing was run; run piship doctor %s", id, rel.Version, res.Path, err, id)
	}
	if !strings.EqualFold(sum, rel.Node.SHA256) {
		return res, receipt.Errorf(receipt.CodeIntegrity, "%s %s: its Node %s changed since it was installed (sha256 %s, the receipt recorded %s): nothing was run; run piship repair %s", id, rel.Version, res.Path, sum, rel.Node.SHA256, id)
	}
	if rpath == "" {
		res.Unrecorded = "no state directory"
		return res, nil
	}
	if err := writeRecord(rpath, nodeReceipt{Schema: NodeReceiptSchema, Path: res.Path, SHA256: sum, fingerprint: fp}); err != nil {
		res.Unrecorded = err.Error()
	}
	return res, nil
}

// CheckNode hashes the release's pinned Node in full against the receipt
// (doctor): "" when it is intact or the release ships none, else what is
// wrong.
func CheckNode(rel *receipt.Release) string {
	if rel.Node == nil {
		return ""
	}
	p := filepath.Join(rel.Payload, filepath.FromSlash(rel.Node.Path))
	sum, _, err := hashPath(p)
	switch {
	case err != nil:
		return fmt.Sprintf("cannot read %s: %v", p, err)
	case !strings.EqualFold(sum, rel.Node.SHA256):
		return fmt.Sprintf("%s has sha256 %s, install recorded %s", p, sum, rel.Node.SHA256)
	}
	return ""
}
