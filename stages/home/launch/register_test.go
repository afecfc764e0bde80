package launch

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

// failHome makes every lease file (and, read-only, every lock file) under
// the given directories fail with errno, as a full or read-only file
// system does
// (through receipt.FaultHook: chmod cannot stop root, and the tests may
// run as root), and keeps the fallback leases inside the test.
func failHome(t *testing.T, errno syscall.Errno, dirs ...string) {
	t.Helper()
	t.Setenv(receipt.EnvRuntimeDir, t.TempDir())
	t.Setenv("TMPDIR", t.TempDir())
	receipt.FaultHook = func(p string) error {
		if errno == syscall.ENOSPC && !strings.HasSuffix(p, ".json") {
			return nil // a full disk still opens an existing lock file
		}
		for _, d := range dirs {
			if strings.HasPrefix(p, d+string(filepath.Separator)) {
				return &fs.PathError{Op: "open", Path: p, Err: errno}
			}
		}
		return nil
	}
	t.Cleanup(func() { receipt.FaultHook = nil })
}

// A launch on a read-only or full install home, with nowhere else to
// register either, still runs: node's output and exit code come through,
// and stderr has exactly one line saying what was not protected.
func TestRunUnregistered(t *testing.T) {
	needNode(t)
	for _, errno := range []syscall.Errno{syscall.EROFS, syscall.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			f := install(t, nil)
			failHome(t, errno, f.home, os.Getenv(receipt.EnvRuntimeDir), os.TempDir())
			var out, errOut bytes.Buffer
			code, _, err := Run(context.Background(), f.home, "hello", []string{"a", "b c"},
				Options{Stdout: &out, Stderr: &errOut, Env: []string{"EXIT_CODE=5"}})
			if err != nil || code != 5 || strings.TrimSpace(out.String()) != `["a","b c"]` {
				t.Fatalf("code %d err %v out %q stderr %q", code, err, out.String(), errOut.String())
			}
			lines := strings.Split(strings.TrimRight(errOut.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "hello: cannot register this run (") ||
				!strings.Contains(lines[0], errno.Error()) ||
				!strings.HasSuffix(lines[0], "); an uninstall or reclaim meanwhile may remove the running version") {
				t.Fatalf("stderr %q, want one warning line", errOut.String())
			}
			t.Log(lines[0])
		})
	}
}

// A launch whose install home refuses its lease registers in the runtime
// directory instead, silently: while it runs the lease is live there, and
// it is gone when node ends. The gate's file refusing to open does not
// stop it either.
func TestRunRegistersOutsideARefusingHome(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	failHome(t, syscall.EROFS, f.home)
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() {
		code, _, err := Run(ctx, f.home, "hello", []string{"wait"}, Options{Stderr: &errOut, Env: []string{"READY=" + ready}})
		if err == nil && code != 3 {
			err = fs.ErrInvalid
		}
		done <- err
	}()
	waitFor(t, ready, done)
	live, _ := receipt.LiveLeases(f.home, "hello")
	if len(live) != 1 || live[0].PID != os.Getpid() || !strings.HasPrefix(live[0].Path, os.Getenv(receipt.EnvRuntimeDir)+string(filepath.Separator)) {
		t.Fatalf("live leases %+v, want this process's in %s", live, os.Getenv(receipt.EnvRuntimeDir))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if errOut.Len() != 0 {
		t.Fatalf("a registered run warned: %q", errOut.String())
	}
	if l, _ := receipt.ListLeases(f.home, "hello"); len(l) != 0 {
		t.Fatalf("lease left: %+v", l)
	}
}

// waitFor waits for node's ready file, failing when the launch ended first.
func waitFor(t *testing.T, ready string, done chan error) {
	t.Helper()
	for range 1000 {
		if _, err := os.Stat(ready); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the launch ended before node was ready: %v", err)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("node never got ready")
}

// A gate that cannot be opened at all (here a directory in its place)
// does not stop a start: the receipt is read without it, the lease is
// written as always, and nothing is said.
func TestRunWithAnUnopenableGate(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	gate := receipt.GatePath(f.home, "hello")
	os.Remove(gate)
	if err := os.Mkdir(gate, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code, _, err := Run(context.Background(), f.home, "hello", []string{"x"}, Options{Stdout: &out, Stderr: &errOut})
	if err != nil || code != 0 || strings.TrimSpace(out.String()) != `["x"]` || errOut.Len() != 0 {
		t.Fatalf("code %d err %v out %q stderr %q", code, err, out.String(), errOut.String())
	}
}
