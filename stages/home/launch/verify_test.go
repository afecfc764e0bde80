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
	"strings"
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

// VerifyInventory passes an intact payload and names what differs:
// changed, missing and unexpected files, a symlink, an unreadable
// inventory; a cancelled context stops it.
func TestVerifyInventory(t *testing.T) {
	mk := func(t *testing.T) string {
		dir := t.TempDir()
		inv := map[string]string{}
		for i := range 300 {
			rel := fmt.Sprintf("lib/d%d/f%03d.js", i%9, i)
			data := bytes.Repeat([]byte{byte(i)}, i*37)
			p := filepath.Join(dir, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, data, 0o644)
			sum := sha256.Sum256(data)
			inv[rel] = hex.EncodeToString(sum[:])
		}
		raw, _ := json.Marshal(inv)
		os.MkdirAll(filepath.Join(dir, "metadata"), 0o755)
		os.WriteFile(filepath.Join(dir, filepath.FromSlash(InventoryName)), raw, 0o644)
		return dir
	}
	ctx := context.Background()
	if err := VerifyInventory(ctx, mk(t)); err != nil {
		t.Fatalf("intact payload: %v", err)
	}
	for name, c := range map[string]struct {
		edit func(dir string)
		want string
	}{
		"changed":    {func(d string) { os.WriteFile(filepath.Join(d, "lib/d1/f010.js"), []byte("x"), 0o644) }, "changed lib/d1/f010.js"},
		"missing":    {func(d string) { os.Remove(filepath.Join(d, "lib/d2/f200.js")) }, "missing lib/d2/f200.js"},
		"unexpected": {func(d string) { os.WriteFile(filepath.Join(d, "lib/new.js"), nil, 0o644) }, "unexpected lib/new.js"},
		"symlink":    {func(d string) { os.Symlink("/etc/passwd", filepath.Join(d, "lib/link")) }, "lib/link is not a regular file"},
		"inventory":  {func(d string) { os.WriteFile(filepath.Join(d, filepath.FromSlash(InventoryName)), []byte("{"), 0o644) }, "has no readable inventory"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := mk(t)
			c.edit(dir)
			err := VerifyInventory(ctx, dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "INTEGRITY_FAILED") {
				t.Fatalf("err = %v, want INTEGRITY_FAILED naming %q", err, c.want)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := VerifyInventory(cancelled, mk(t)); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("cancelled: %v", err)
	}
}
