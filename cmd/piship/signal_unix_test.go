//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptExitCodes is issue 29 point 7: a run interrupted by Ctrl-C
// (SIGINT) exits 130 and one stopped by SIGTERM 143 (128 + the signal's
// number, the shell's convention), after its always stage ran; before, both
// exited 1 like a failed stage.
func TestInterruptExitCodes(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "cleaned")
			p := writeFile(t, dir, "slow.hcl", `pipeline "slow" {
  stage "exec" "slow" {
    command = ["sleep", "60"]
  }
  stage "exec" "cleanup" {
    command    = ["touch", "`+marker+`"]
    always     = true
    depends_on = [stage.slow]
  }
}
`)
			cmd := exec.Command(self, "run", p, "--progress", "plain")
			cmd.Env = []string{"PISHIP_TEST_MAIN=1", "PISHIP_CACHE_HOME=" + filepath.Join(dir, "cache"), "PATH=" + os.Getenv("PATH"), "HOME=" + dir}
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(stderr)
			started := make(chan struct{})
			rest := make(chan struct{})
			go func() {
				defer close(rest)
				for sc.Scan() {
					lines = append(lines, sc.Text())
					if strings.HasSuffix(sc.Text(), "exec slow: started") {
						close(started)
					}
				}
			}()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("the slow stage did not start")
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { <-rest; done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("piship run did not end after %s", tc.sig)
			}
			if got := cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("exit %d after %s, want %d:\n%s", got, tc.sig, tc.want, strings.Join(lines, "\n"))
			}
			if _, err := os.Stat(marker); err != nil {
				t.Errorf("the always stage did not run: %v\n%s", err, strings.Join(lines, "\n"))
			}
		})
	}
}
