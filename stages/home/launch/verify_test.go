package launch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkVerifyInventory times the full payload check verify_at_launch
// runs, on PISHIP_LAUNCH_BENCH_PAYLOAD (a payload directory, e.g. a
// release's payload/) or else 4,000 small files in 40 directories; the
// files are in the page cache after the first iteration.
func BenchmarkVerifyInventory(b *testing.B) {
	dir := os.Getenv("PISHIP_LAUNCH_BENCH_PAYLOAD")
	if dir == "" {
		dir = b.TempDir()
		inv := map[string]string{}
		for i := range 4000 {
			rel := fmt.Sprintf("node_modules/p%02d/lib/f%04d.js", i%40, i)
			data := bytes.Repeat([]byte{byte(i)}, 200+i%5000)
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(data)
			inv[rel] = hex.EncodeToString(sum[:])
		}
		raw, _ := json.Marshal(inv)
		p := filepath.Join(dir, filepath.FromSlash(InventoryName))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if err := VerifyInventory(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
}
