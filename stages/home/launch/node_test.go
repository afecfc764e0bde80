package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

// pinnedNode writes a stand-in node into a payload and returns its
// release record and the lock's node block pinning it for this target.
func pinnedNode(t *testing.T) (*receipt.Release, *lockNode) {
	t.Helper()
	payload := t.TempDir()
	data := []byte("#!/bin/sh\necho stand-in\n")
	p := filepath.Join(payload, "node", "bin", "node")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	rel := &receipt.Release{Version: "1.0.0", Payload: payload, Node: &receipt.Node{Version: "22.23.3", Path: "node/bin/node", SHA256: hexsum, Size: int64(len(data))}}
	ln := &lockNode{Version: "22.23.3", Targets: map[string]struct {
		BinarySHA256 string `json:"binarySha256"`
	}{platform.HostTarget(): {BinarySHA256: hexsum}}}
	return rel, ln
}

func TestPrepareNodeFingerprintThenFullDigest(t *testing.T) {
	rel, ln := pinnedNode(t)
	state := filepath.Join(t.TempDir(), "state")
	// First start: hashed in full, recorded.
	res, err := PrepareNode("app", rel, ln, state, false)
	if err != nil || !res.Hashed || res.Unrecorded != "" || res.Path != filepath.Join(rel.Payload, "node", "bin", "node") {
		t.Fatalf("first start: %+v %v", res, err)
	}
	// Second: the fingerprint matches, no byte read.
	if res, err = PrepareNode("app", rel, ln, state, false); err != nil || res.Hashed || res.BytesRead != 0 {
		t.Fatalf("second start: %+v %v", res, err)
	}
	// verifyAtLaunch hashes whatever the fingerprint says.
	if res, err = PrepareNode("app", rel, ln, state, true); err != nil || !res.Hashed {
		t.Fatalf("full: %+v %v", res, err)
	}
	// Rewritten with the same size and its modification time put back:
	// the change time moved, so it is hashed, and refused.
	fi, _ := os.Stat(res.Path)
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(res.Path, []byte("#!/bin/sh\necho tampered\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(res.Path, fi.ModTime(), fi.ModTime())
	if _, err = PrepareNode("app", rel, ln, state, false); err == nil || !strings.Contains(err.Error(), "changed since it was installed") || receipt.CodeOf(err) != receipt.CodeIntegrity {
		t.Fatalf("tampered node: %v", err)
	}
	if msg := CheckNode(rel); !strings.Contains(msg, "install recorded") {
		t.Fatalf("CheckNode: %q", msg)
	}
}

func TestPrepareNodeRefusesARecordTheLockDoesNotPin(t *testing.T) {
	rel, ln := pinnedNode(t)
	// No node block and no record: the node on PATH.
	if res, err := PrepareNode("app", &receipt.Release{Payload: rel.Payload}, nil, "", false); err != nil || res.Path != "" {
		t.Fatalf("no node: %+v %v", res, err)
	}
	// A record without the lock's block, or the block without a record.
	for _, c := range []struct {
		rel *receipt.Release
		ln  *lockNode
	}{{rel, nil}, {&receipt.Release{Payload: rel.Payload}, ln}} {
		if _, err := PrepareNode("app", c.rel, c.ln, "", false); err == nil || !strings.Contains(err.Error(), "disagree") {
			t.Fatalf("disagreement: %v", err)
		}
	}
	// A receipt digest edited to another executable's.
	edited := *rel
	n := *rel.Node
	n.SHA256 = strings.Repeat("0", 64)
	edited.Node = &n
	if _, err := PrepareNode("app", &edited, ln, "", false); err == nil || !strings.Contains(err.Error(), "is not the one the lock pins") {
		t.Fatalf("edited receipt: %v", err)
	}
	// Without a state directory every start hashes it.
	if res, err := PrepareNode("app", rel, ln, "", false); err != nil || !res.Hashed || res.Unrecorded == "" {
		t.Fatalf("no state: %+v %v", res, err)
	}
	if CheckNode(rel) != "" {
		t.Fatal("CheckNode of an intact node")
	}
}
