package home

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

	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage/errcode"
)

// A failure at commit time (issue 13, defect 8) leaves nothing of the new
// version behind: after three failed attempts at most one directory of it
// is set aside (in practice none: each removes what it wrote), the receipt
// names none of it, the previous release still launches, and the attempt
// after the cause is gone succeeds.
func TestCommitFailuresLeaveNoCopies(t *testing.T) {
	needNode(t)
	for _, tc := range []struct {
		name    string
		command string // the new version's command
		fault   func(e *env) func(*InstallOptions)
		want    string // in the error
	}{
		{
			// bin/hi is someone else's file: the shim of 2.0.0 cannot be written.
			name: "shim conflict", command: "hi", want: "is not a piship command shim",
			fault: func(e *env) func(*InstallOptions) {
				writeFile(t, filepath.Join(e.homes.Bin, "hi"), "#!/bin/sh\necho not piship\n", 0o755)
				return func(*InstallOptions) {}
			},
		},
		{
			// The launcher copy the install stage makes meanwhile (its
			// BeforeCommit) hits a full disk: keepLauncher's error.
			name: "no space for the launcher", command: "hello", want: "no space left on device",
			fault: func(e *env) func(*InstallOptions) {
				return func(o *InstallOptions) {
					o.BeforeCommit = func() error {
						perr := &fs.PathError{Op: "write", Path: filepath.Join(e.homes.Install, "launcher", "piship-launch"), Err: syscall.ENOSPC}
						return errcode.Newf(errcode.ConfigUnavailable, "cannot keep the launcher in %s: %v", filepath.Join(e.homes.Install, "launcher"), perr)
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
			s := spec("2.0.0")
			s.command = tc.command
			arch, _ := makeArchive(t, makeRelease(t, e.src, s))
			before := e.receiptBytes()
			shim, _ := os.ReadFile(filepath.Join(e.homes.Bin, "hello"))
			mod := tc.fault(e)
			for attempt := range 3 {
				_, err := e.install(arch, mod)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("attempt %d: %v, want an error saying %q", attempt, err, tc.want)
				}
				wantCode(t, err, receipt.CodeUnavailable)
			}
			if got := e.receiptBytes(); got != before {
				t.Fatalf("the receipt changed:\n%s", got)
			}
			if strings.Contains(e.receiptBytes(), "2.0.0") {
				t.Fatal("the receipt names the failed version")
			}
			if _, err := os.Stat(receipt.VersionDir(e.homes.Install, "hello", "2.0.0")); err == nil {
				t.Fatal("the failed version stands at its version path")
			}
			if n := retained(t, e, "2.0.0"); n > 1 {
				t.Fatalf("%d directories of 2.0.0 set aside after 3 failed attempts, want at most 1", n)
			}
			if got, _ := os.ReadFile(filepath.Join(e.homes.Bin, "hello")); !bytes.Equal(got, shim) {
				t.Fatal("the shim of 1.0.0 changed")
			}
			var out bytes.Buffer
			code, _, err := launch.Run(context.Background(), e.homes.Install, "hello", []string{"still"}, launch.Options{Stdout: &out, Stderr: &out})
			if err != nil || code != 0 || strings.TrimSpace(out.String()) != `["still"]` {
				t.Fatalf("1.0.0 after the failures: exit %d, %v, %q", code, err, out.String())
			}
			// The cause gone, the next attempt installs.
			os.Remove(filepath.Join(e.homes.Bin, "hi"))
			if res := e.mustInstall(arch); res.Version != "2.0.0" || res.MovedAside != "" || e.receipt().Active != "2.0.0" {
				t.Fatalf("install after the failures: %+v", res)
			}
		})
	}
}

// Doctor removes the temporary receipts a killed commit leaves
// (receipts/.<id>.json.tmp-*, issue 13 defect 8) and reports each; the
// receipt itself stays.
func TestDoctorRemovesTempReceipts(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	before := e.receiptBytes()
	tmp := filepath.Join(e.homes.Install, "receipts", ".hello.json.tmp-123")
	writeFile(t, tmp, before[:len(before)/2], 0o644)
	rep, err := Doctor(context.Background(), e.opts(), "hello", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(tmp); err == nil {
		t.Fatalf("%s is still there after doctor", tmp)
	}
	reported := false
	for _, r := range rep.Reclaimed {
		reported = reported || strings.Contains(r, tmp)
	}
	if !reported {
		t.Fatalf("doctor did not report removing %s: reclaimed %q", tmp, rep.Reclaimed)
	}
	if e.receiptBytes() != before || e.receipt().Active != "1.0.0" {
		t.Fatal("doctor changed the receipt")
	}
	// Another distribution's temporary receipt is not hello's doctor's.
	other := filepath.Join(e.homes.Install, "receipts", ".hello2.json.tmp-9")
	writeFile(t, other, "{", 0o644)
	if _, err := Doctor(context.Background(), e.opts(), "hello", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Fatal("doctor of hello removed hello2's temporary receipt")
	}
}
