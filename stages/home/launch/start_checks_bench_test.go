package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
)

// BenchmarkStartChecks times what a start does before node, in process:
// register (gate, receipt, lease) and checkTrust (target.json, the lock
// hashed and parsed, the record held to the lock), on Pi's lock
// (testdata/distributions/pi-dev, the largest) and a receipt that records
// ten executables. It is the part of a start piship's own code decides,
// without the process starts that drown it in BenchmarkLaunchOverhead:
//
//	go test -run '^$' -bench StartChecks -benchtime 20000x -count 6 ./stages/home/launch/
func BenchmarkStartChecks(b *testing.B) {
	lock, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "distributions", "pi-dev", "piship.lock"))
	if err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	dir := filepath.Join(home, "apps", "pi", "0.73.1")
	pay := filepath.Join(dir, "payload")
	plat, arch, _ := strings.Cut(platform.HostTarget(), "-")
	os.MkdirAll(filepath.Join(pay, "metadata"), 0o755)
	os.WriteFile(filepath.Join(pay, "metadata", "target.json"), []byte(`{"arch":"`+arch+`","platform":"`+plat+`"}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(pay, "piship.lock"), lock, 0o644)
	var execs []string
	for i := range 10 {
		execs = append(execs, `"payload/node_modules/.bin/tool`+string(rune('a'+i))+`"`)
	}
	// Written as bytes, so that the benchmark compiles against a receipt
	// type with or without the executables.
	rc := `{
  "schema": "piship-install/v1",
  "app": "pi",
  "active": "0.73.1",
  "previous": "",
  "releases": [
    {
      "version": "0.73.1",
      "dir": "` + dir + `",
      "payload": "` + pay + `",
      "installedAt": "2026-01-01T00:00:00Z",
      "lockSha256": "` + hexSum(lock) + `",
      "archiveSha256": "` + strings.Repeat("a", 64) + `",
      "inventorySha256": "` + strings.Repeat("b", 64) + `",
      "releaseSha256": "` + strings.Repeat("c", 64) + `",
      "target": "` + platform.HostTarget() + `",
      "channel": "stable",
      "command": "pi-dev",
      "entry": "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js",
      "verifyAtLaunch": false,
      "source": "archive",
      "executables": [` + strings.Join(execs, ", ") + `]
    }
  ],
  "updatedAt": "2026-01-01T00:00:00Z"
}
`
	os.MkdirAll(filepath.Join(home, "receipts"), 0o755)
	if err := os.WriteFile(filepath.Join(home, "receipts", "pi.json"), []byte(rc), 0o644); err != nil {
		b.Fatal(err)
	}
	mark := func(string) {}
	// The whole of it, and the reads and parses alone (no gate, no lease
	// file: what the receipt's and the lock's contents cost).
	b.Run("register+checkTrust", func(b *testing.B) {
		for b.Loop() {
			rel, remove, _, err := register(context.Background(), home, "pi", 0, mark)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := checkTrust("pi", rel); err != nil {
				b.Fatal(err)
			}
			remove()
		}
	})
	b.Run("read+checkTrust", func(b *testing.B) {
		for b.Loop() {
			r, err := receipt.Read(home, "pi")
			if err != nil {
				b.Fatal(err)
			}
			rel, _ := r.ActiveRelease()
			if _, _, err := checkTrust("pi", rel); err != nil {
				b.Fatal(err)
			}
		}
	})
}
