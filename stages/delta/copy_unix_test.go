//go:build unix

package delta

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe put where a kept file was listed is refused at that file,
// at once: Apply never waits for a writer on it.
func TestKeptFileTurnedIntoAPipe(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	listed := scan(t, p.from)
	keep := filepath.Join(p.from, "payload", "lib", "keep1.js")
	os.Remove(keep)
	if err := syscall.Mkfifo(keep, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := applyTo(t, d, p, listed, ApplyOptions{}); done <- err }()
	select {
	case err := <-done:
		if e, ok := IsRefused(err); !ok || e.Reason != ReasonBase || e.Path != "payload/lib/keep1.js" {
			t.Fatalf("err %v, want ReasonBase at the pipe", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Apply waited on a named pipe")
	}
}
