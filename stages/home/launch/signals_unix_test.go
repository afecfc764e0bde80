//go:build unix

package launch

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

func TestRunForwardsSIGTERM(t *testing.T) {
	needNode(t)
	f := install(t, nil)
	ready := filepath.Join(t.TempDir(), "ready")
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, _, err := Run(context.Background(), f.home, "hello", []string{"wait"}, Options{Env: []string{"READY=" + ready}})
		done <- result{code, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// While a session runs its lease is live.
	if live, _ := receipt.LiveLeases(f.home, "hello"); len(live) != 1 {
		t.Fatalf("live leases %+v", live)
	}
	// To this process (the launcher), as a service manager would send it.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.code != 3 {
			t.Fatalf("code %d err %v", r.code, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("node did not get SIGTERM")
	}
	if live, _ := receipt.ListLeases(f.home, "hello"); len(live) != 0 {
		t.Fatalf("lease left: %+v", live)
	}
}
