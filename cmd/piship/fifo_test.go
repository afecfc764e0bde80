package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// A named pipe where piship reads a file by name (the lock, the
// distribution, an archive) is refused at once with a code and the path,
// instead of an open that waits for a writer forever (and a command that
// ignores Ctrl-C meanwhile). Each command runs as a child process under a
// deadline, since a blocked open cannot be interrupted in-process.
func TestNamedPipesAreRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Fatal("this test makes FIFOs: run it on a Unix")
	}
	root := t.TempDir()
	fifo := func(p string) {
		t.Helper()
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	withLock := filepath.Join(root, "lock-fifo")
	if err := fixture.CopyDist("hello", withLock); err != nil {
		t.Fatal(err)
	}
	fifo(filepath.Join(withLock, "piship.lock"))
	withHCL := filepath.Join(root, "hcl-fifo")
	if err := fixture.CopyDist("hello", withHCL); err != nil {
		t.Fatal(err)
	}
	fifo(filepath.Join(withHCL, "distribution.hcl"))
	arc := filepath.Join(root, "hello-1.0.0-linux-x64.tar.zst")
	fifo(arc)

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"piship.lock a FIFO: build", []string{"build", withLock}, exitUsage, "LOCK_INVALID"},
		{"distribution.hcl a FIFO: build", []string{"build", withHCL}, exitUsage, "CONFIG_INVALID"},
		{"distribution.hcl a FIFO: lock", []string{"lock", withHCL}, exitUsage, "CONFIG_INVALID"},
		{"an archive a FIFO: install", []string{"install", arc}, exitUsage, "CONFIG_INVALID"},
		{"an archive a FIFO: verify-release", []string{"verify-release", arc}, exitUsage, "CONFIG_INVALID"},
	} {
		home := filepath.Join(root, "home-"+strings.Fields(c.name)[0]+"-"+c.args[0])
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], c.args...)
		cmd.Env = []string{"PISHIP_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), "HOME=" + home,
			"PISHIP_CACHE_HOME=" + filepath.Join(home, "cache"), "PISHIP_INSTALL_HOME=" + filepath.Join(home, "i"),
			"PISHIP_BIN_HOME=" + filepath.Join(home, "b"), "PISHIP_STATE_HOME=" + filepath.Join(home, "s")}
		started := time.Now()
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() == context.DeadlineExceeded
		cancel()
		if timedOut {
			t.Errorf("%s: still running after %s (killed): a named pipe was opened and waited on\n%s", c.name, time.Since(started).Round(time.Millisecond), out)
			continue
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.want+": ") || !strings.Contains(string(out), "named pipe") {
			t.Errorf("%s: exit %d, want %d with %s naming the named pipe:\n%s", c.name, code, c.code, c.want, out)
		}
	}
}

// `piship launch` of an id that is no id is a usage error: exit 2 with
// CONFIG_INVALID, as the exit-code rule says for every command.
func TestLaunchOfAnInvalidIDExitsTwo(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(dir, "i"), "PISHIP_BIN_HOME": filepath.Join(dir, "b"), "PISHIP_STATE_HOME": filepath.Join(dir, "s")}
	code, _, stderr := piship(t, env, "launch", "../../x")
	if code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: ") {
		t.Errorf("piship launch ../../x: exit %d, want %d with CONFIG_INVALID:\n%s", code, exitUsage, stderr)
	}
}
