package home

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
)

// waitJS writes $READY and runs until SIGTERM (exit 3).
const waitJS = `process.on("SIGTERM", () => process.exit(3));
require("fs").writeFileSync(process.env.READY, "ready");
setInterval(() => {}, 1000);
`

// A launch that could register nowhere (its install home read-only or
// full, and the fallback places too) still holds its version on Linux:
// while it runs, doctor's reclaim keeps the version although it is
// obsolete and reports it as possibly in use, and uninstall refuses; once
// it has exited, both proceed.
func TestUnregisteredLaunchHoldsItsVersion(t *testing.T) {
	needNode(t)
	for _, c := range []struct {
		name     string
		errno    syscall.Errno
		fallback bool // the runtime directory takes the lease
	}{{"read-only", syscall.EROFS, false}, {"full", syscall.ENOSPC, false}, {"read-only, registered outside", syscall.EROFS, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			s := spec("1.0.0")
			s.extra = map[string]string{"node_modules/x/cli.js": waitJS}
			e.mustInstall(makeRelease(t, e.src, s))

			t.Setenv(receipt.EnvRuntimeDir, t.TempDir())
			t.Setenv("TMPDIR", t.TempDir())
			refused := []string{e.homes.Install, os.Getenv(receipt.EnvRuntimeDir), os.TempDir()}
			if c.fallback {
				refused = refused[:1]
			}
			var writable atomic.Bool
			receipt.FaultHook = func(p string) error {
				if !writable.Load() && strings.HasSuffix(p, ".json") { // the launch's leases only: the maintenance commands' locks work
					for _, d := range refused {
						if strings.HasPrefix(p, d+string(filepath.Separator)) {
							return &fs.PathError{Op: "open", Path: p, Err: c.errno}
						}
					}
				}
				return nil
			}
			defer func() { receipt.FaultHook = nil }()

			ready := filepath.Join(t.TempDir(), "ready")
			lctx, stop := context.WithCancel(ctx)
			defer stop()
			var errOut bytes.Buffer
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, _, err := launch.Run(lctx, e.homes.Install, "hello", []string{"wait"},
					launch.Options{Stdout: &bytes.Buffer{}, Stderr: &errOut, Env: []string{"READY=" + ready}})
				done <- result{code, err}
			}()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				select {
				case res := <-done:
					t.Fatalf("the launch ended before node was ready: code %d, %v, stderr %q", res.code, res.err, errOut.String())
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("node never got ready: %q", errOut.String())
				}
			}
			writable.Store(true) // the home is writable again (space freed, remounted read-write)

			// Two more versions make 1.0.0 obsolete: neither active nor previous.
			e.mustInstall(makeRelease(t, filepath.Join(e.src, "b"), spec("2.0.0")))
			e.mustInstall(makeRelease(t, filepath.Join(e.src, "c"), spec("3.0.0")))
			running := receipt.VersionDir(e.homes.Install, "hello", "1.0.0")

			r, err := Reclaim(ctx, e.opts(), "hello", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(running); err != nil {
				t.Fatalf("reclaim removed the running version: %v (%+v)", err, r)
			}
			want := "possibly in use" // found by its process
			if c.fallback {
				want = "registered outside the install home"
			}
			if len(r.Leases) != 1 || r.Leases[0].Version != "1.0.0" || !strings.Contains(r.Leases[0].Reason, want) {
				t.Fatalf("reclaim reported %+v, want 1.0.0 %s", r.Leases, want)
			}
			_, err = Uninstall(ctx, e.opts(), "hello", false)
			wantCode(t, err, receipt.CodeUnavailable)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("uninstall: %v", err)
			}
			t.Log(err)
			if _, err := os.Stat(running); err != nil {
				t.Fatal("the refused uninstall removed the running version")
			}

			stop()
			if res := <-done; res.err != nil || res.code != 3 {
				t.Fatalf("launch: code %d err %v", res.code, res.err)
			}
			if c.fallback && errOut.Len() != 0 {
				t.Fatalf("a run registered outside the home warned: %q", errOut.String())
			}
			if n := strings.Count(errOut.String(), "\n"); !c.fallback && (n != 1 || !strings.Contains(errOut.String(), "cannot register this run")) {
				t.Fatalf("launch stderr %q, want one warning line", errOut.String())
			}
			r, err = Reclaim(ctx, e.opts(), "hello", time.Minute)
			if err != nil || len(r.Leases) != 0 {
				t.Fatalf("%v %+v", err, r)
			}
			if _, err := os.Stat(running); err == nil {
				t.Fatal("1.0.0 not reclaimed after the launch ended")
			}
			if _, err := Uninstall(ctx, e.opts(), "hello", false); err != nil {
				t.Fatal(err)
			}
		})
	}
}
