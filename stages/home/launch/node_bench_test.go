package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

// BenchmarkPrepareNode times what a start adds for a release that ships
// its Node: the check of the payload's node by its stat fingerprint (a
// start after the first), and, for comparison, the full hash a first
// start, a changed file or verify_at_launch takes. The node is
// PISHIP_NODE22 copied into the payload (Node 22, ~120 MB) when set, else
// a 100 MB file:
//
//	go test -run '^$' -bench PrepareNode -count 6 ./stages/home/launch/
func BenchmarkPrepareNode(b *testing.B) {
	payload := b.TempDir()
	p := filepath.Join(payload, "node", "bin", "node")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	h := sha256.New()
	if src := os.Getenv("PISHIP_NODE22"); src != "" {
		in, err := os.Open(src)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.MultiWriter(f, h), in)
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
	} else {
		chunk := make([]byte, 1<<20)
		for range 100 {
			f.Write(chunk)
			h.Write(chunk)
		}
	}
	f.Close()
	sum := hex.EncodeToString(h.Sum(nil))
	rel := &receipt.Release{Version: "1.0.0", Payload: payload, Node: &receipt.Node{Version: "22", Path: "node/bin/node", SHA256: sum}}
	ln := &lockNode{Version: "22", Targets: map[string]struct {
		BinarySHA256 string `json:"binarySha256"`
	}{platform.HostTarget(): {BinarySHA256: sum}}}
	state := b.TempDir()
	if res, err := PrepareNode("app", rel, ln, state, false); err != nil || !res.Hashed {
		b.Fatalf("first start: %+v %v", res, err)
	}
	b.Run("fingerprint", func(b *testing.B) {
		for b.Loop() {
			if res, err := PrepareNode("app", rel, ln, state, false); err != nil || res.Hashed {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			if res, err := PrepareNode("app", rel, ln, state, true); err != nil || !res.Hashed {
				b.Fatalf("%+v %v", res, err)
			}
		}
	})
}
