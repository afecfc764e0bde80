package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A piship killed while a child runs (here a fake npm) takes the child
// with it: the orphan would otherwise keep writing into a cache entry
// nobody owns.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("PISHIP_PROC_TEST_HELPER") != "" {
		// The helper: run the child until the test kills this process.
		err := Run(exec.CommandContext(context.Background(), "npm", "ci"))
		t.Fatalf("Run returned %v, want to be killed while the child runs", err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(tmp, "npm.pid")
	script := "#!/bin/sh\necho $$ > \"$PIDFILE.tmp\" && mv \"$PIDFILE.tmp\" \"$PIDFILE\"\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$", "-test.count=1")
	helper.Env = append(os.Environ(),
		"PISHIP_PROC_TEST_HELPER=1",
		"PIDFILE="+pidFile,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			break
		}
		if time.Now().After(deadline) {
			_ = helper.Process.Kill()
			_ = helper.Wait()
			t.Fatal("the child never started")
		}
	}
	if !alive(pid) {
		t.Fatalf("the child (pid %d) is not running before the kill", pid)
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child (pid %d) still runs 5 s after its parent was killed", pid)
		}
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// waiting to be reaped counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	// The state follows the command, which is in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
}
