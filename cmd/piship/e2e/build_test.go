package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/payload"
)

// Killing a build at a random moment never leaves a partial payload at
// <out>/<id>, and the next build succeeds.
func TestKilledBuildLeavesNoPartialPayload(t *testing.T) {
	exe := realBinaries(t)
	dir := copyDist(t, "hello")
	out := filepath.Join(t.TempDir(), "out")
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	for i := range 8 {
		// A fresh cache each time keeps npm ci in the build, so kills
		// land in every stage from inputs to publish.
		cacheHome := filepath.Join(t.TempDir(), "cache")
		cmd := exec.Command(exe, "build", dir, "--out", out, "--rebuild")
		cmd.Env = append(os.Environ(), "PISHIP_CACHE_HOME="+cacheHome, "PISHIP_PROGRESS=0")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.IntN(900)) * time.Millisecond
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		final := filepath.Join(out, "hello")
		if _, err := os.Stat(final); err == nil {
			if err := payload.Verify(context.Background(), final); err != nil {
				t.Fatalf("kill %d after %v left a broken payload: %v", i, delay, err)
			}
		}
	}
	env := buildEnv(t)
	mustBuild(t, env, dir, "--out", out)
	final := filepath.Join(out, "hello")
	if err := payload.Verify(context.Background(), final); err != nil {
		t.Fatal(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(out, ".staging-*"))
	old, _ := filepath.Glob(filepath.Join(out, ".old-*"))
	if len(leftovers)+len(old) != 0 {
		t.Fatalf("leftovers after a successful build: %v %v", leftovers, old)
	}
	if v := strings.TrimSpace(runPayload(t, final, "hello", "--version")); v != "1.0.0" {
		t.Fatalf("--version %q", v)
	}
}
