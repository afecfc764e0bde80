package home

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/home/receipt"
)

func (e *env) repair(from string) *RepairResult {
	e.t.Helper()
	res, err := Repair(context.Background(), e.opts(), "hello", from)
	if err != nil {
		e.t.Fatalf("repair: %v", err)
	}
	return res
}

func (e *env) wantClean(what string) {
	e.t.Helper()
	if rep := e.doctor(); rep.Damaged() || !rep.Verified {
		e.t.Fatalf("%s: doctor found %s (verified %v)", what, foundText(rep), rep.Verified)
	}
}

// A receipt edited to name another payload file as the entry (or another
// command) is found by doctor (issue 29, point 12) and restored from the
// lock by repair, or by installing the same archive again.
func TestAnEditedEntryIsFoundAndRestored(t *testing.T) {
	e := newEnv(t)
	arc, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(arc)
	edit := func(mod func(*receipt.Release)) {
		rc := e.receipt()
		mod(rc.Find("1.0.0"))
		if err := receipt.Write(e.homes.Install, rc); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		mod  func(*receipt.Release)
	}{
		{"entry", func(r *receipt.Release) { r.Entry = "node_modules/x/package.json" }},
		{"entry, no lock digest", func(r *receipt.Release) { r.Entry, r.LockSHA256 = "bin/hello", "" }},
		{"command", func(r *receipt.Release) { r.Command = "other" }},
	} {
		for _, how := range []string{"repair", "reinstall"} {
			t.Run(c.name+" "+how, func(t *testing.T) {
				e.t = t
				before := e.receipt().Find("1.0.0")
				edit(c.mod)
				rep := e.wantFound(c.name, DoctorReceiptModified)
				if f := rep.Found[0]; f.Path != receipt.ReceiptPath(e.homes.Install, "hello") || !strings.Contains(f.Detail, "run piship repair hello") {
					t.Fatalf("doctor says: %s", f)
				}
				switch how {
				case "repair":
					if res := e.repair(""); len(res.Records) != 1 {
						t.Fatalf("repair: %+v", res)
					}
					if c.name == "entry, no lock digest" {
						edit(func(r *receipt.Release) { r.LockSHA256 = before.LockSHA256 })
					}
				case "reinstall":
					if res := e.mustInstall(arc); res.Reused {
						t.Fatalf("install reused the edited record: %+v", res)
					}
				}
				after := e.receipt().Find("1.0.0")
				if after.Entry != before.Entry || after.Command != before.Command {
					t.Fatalf("after %s: entry %q command %q, want %q %q", how, after.Entry, after.Command, before.Entry, before.Command)
				}
				if _, err := os.Stat(filepath.Join(e.homes.Bin, "other")); err == nil {
					t.Fatal("a shim of the edited command is left")
				}
				e.wantClean("after " + how)
			})
		}
	}
}
