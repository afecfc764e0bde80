package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
)

// The block make installers writes (bin/installers/installers.hcl), pasted
// into hello with the binaries copied beside it, locks; a copied binary
// that is not its pin fails piship lock with INTEGRITY_FAILED naming it.
// (Stand-in bytes: piship lock and release only hash and copy them.)
func TestLockChecksPinnedInstallers(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	writeFile(t, filepath.Join(dir, "installers", "win32-x64"), "piship-install.exe", "stand-in installer")
	launch := writeFile(t, filepath.Join(dir, "installers", "win32-x64"), "piship-launch.exe", "stand-in launcher")
	block := `  installers {
    source = "installers"
    sha256 = {
      "win32-x64" = { installer = "` + canon.SHA256Hex([]byte("stand-in installer")) + `", launcher = "` + canon.SHA256Hex([]byte("stand-in launcher")) + `" }
    }
  }
`
	hcl, err := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	end := strings.LastIndex(string(hcl), "}")
	writeFile(t, dir, "distribution.hcl", string(hcl[:end])+block+string(hcl[end:]))
	code, out, stderr := piship(t, env, "lock", dir)
	if code != exitOK || !strings.Contains(out, ", installers for 1 target)") {
		t.Fatalf("lock: %d\n%s%s", code, out, stderr)
	}
	if lock, _ := os.ReadFile(filepath.Join(dir, "piship.lock")); !strings.Contains(string(lock), canon.SHA256Hex([]byte("stand-in launcher"))) {
		t.Fatalf("piship.lock does not pin the launcher:\n%s", lock)
	}
	writeFile(t, filepath.Dir(launch), "piship-launch.exe", "another launcher")
	code, out, stderr = piship(t, env, "lock", dir)
	if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED") || !strings.Contains(stderr, launch) || !strings.Contains(stderr, "make installers") {
		t.Fatalf("lock with a launcher that is not its pin: %d\n%s%s", code, out, stderr)
	}
}
