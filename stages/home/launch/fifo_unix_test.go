//go:build unix

package launch

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

// A named pipe where the payload's lock or target.json stands (a local
// user who could write the home) stops the start with INTEGRITY_FAILED at
// once: the launcher opens every file it reads as a regular file or
// refuses it, and never waits on a pipe no one writes.
func TestRunRefusesANamedPipeInThePayload(t *testing.T) {
	for _, rel := range []string{"piship.lock", filepath.Join("metadata", "target.json")} {
		t.Run(rel, func(t *testing.T) {
			f := install(t, nil)
			p := filepath.Join(f.payload, rel)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := Run(context.Background(), f.home, "hello", nil, Options{Stdout: &bytes.Buffer{}})
				done <- err
			}()
			select {
			case err := <-done:
				wantCode(t, err, receipt.CodeIntegrity)
				if !strings.Contains(err.Error(), "named pipe") {
					t.Fatalf("the refusal does not name the pipe: %v", err)
				}
			case <-time.After(20 * time.Second):
				// Unblock the open so the test binary can end.
				if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatalf("the start waited on the named pipe %s", p)
			}
		})
	}
}
