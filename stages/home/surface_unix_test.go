//go:build unix

// Modes: Windows has no group or other write bits, and no setuid.

package home

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/home/receipt"
)

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// Every part of the homes that decides what runs, made writable by group
// or others (or setuid) in turn, is MODE_UNSAFE naming that path (issue
// 29, point 10): the install home, receipts/ and the receipt, apps/ and
// apps/<id>/, the active and previous version directories and a file in
// each, trust/, trust/<id>.json and trust/<id>/, the kept launcher, its
// stamp and its directory, and the command shim. piship repair then
// restores the mode piship writes, without a source, and doctor is clean.
func TestDoctorChecksTheModesOfWhatDecidesWhatRuns(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(makeRelease(t, e.src, spec("2.0.0")))
	home := e.homes.Install
	// What update and the install stage keep beside the receipts.
	writeFile(t, receipt.TrustPath(home, "hello"), "{}\n", 0o644)
	if err := os.MkdirAll(receipt.TrustDir(home, "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	launcher := filepath.Join(receipt.LauncherDir(home), "piship-launch")
	writeFile(t, launcher, "#!/bin/sh\n", 0o755)
	writeFile(t, launcher+".stamp", "a\nb\n", 0o644)
	e.wantClean("fresh install")
	active, previous := e.receipt().Find("2.0.0"), e.receipt().Find("1.0.0")

	for _, c := range []struct {
		name, path string
		mode       fs.FileMode
	}{
		{"the install home", home, 0o777},
		{"receipts/", filepath.Join(home, "receipts"), 0o775},
		{"the receipt", receipt.ReceiptPath(home, "hello"), 0o666},
		{"the receipt, setuid", receipt.ReceiptPath(home, "hello"), 0o644 | fs.ModeSetuid},
		{"apps/", filepath.Join(home, "apps"), 0o777},
		{"apps/hello", receipt.AppDir(home, "hello"), 0o775},
		{"the active version directory", active.Dir, 0o757},
		{"an active payload file", filepath.Join(active.Payload, "node_modules", "x", "cli.js"), 0o646},
		{"the previous version directory", previous.Dir, 0o777},
		{"a previous payload file", filepath.Join(previous.Payload, "bin", "hello"), 0o775},
		{"trust/", filepath.Join(home, "trust"), 0o777},
		{"trust/hello.json", receipt.TrustPath(home, "hello"), 0o666},
		{"trust/hello/", receipt.TrustDir(home, "hello"), 0o1777},
		{"launcher/", receipt.LauncherDir(home), 0o777},
		{"the kept launcher", launcher, 0o777},
		{"the launcher's stamp", launcher + ".stamp", 0o664},
		{"the command shim", filepath.Join(e.homes.Bin, "hello"), 0o777},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			was := perm(t, c.path)
			if err := os.Chmod(c.path, c.mode); err != nil {
				t.Fatal(err)
			}
			rep := e.wantFound(c.name, DoctorModeUnsafe)
			if f := rep.Found[0]; f.Path != c.path || !strings.Contains(f.Detail, "piship repair hello") {
				t.Fatalf("the finding does not name %s and the repair: %s", c.path, f)
			}
			res := e.repair("")
			if len(res.Modes) != 1 || !strings.HasPrefix(res.Modes[0], c.path+" (") || len(res.Restored)+len(res.Removed) != 0 {
				t.Fatalf("repair: %+v", res)
			}
			if got := perm(t, c.path); got != was {
				t.Fatalf("repair left %s at %s, installed as %s", c.path, got, was)
			}
			e.wantClean("after the repair")
		})
	}
}

// A damaged mode of a payload file (chmod 4777, 0666 on an executable,
// setuid, an executable bit dropped) is found, and cleared as doctor
// advises (issue 29, point 11): by piship repair, with no archive kept
// (the receipt records the executables), and by installing the same
// archive again, which no longer reuses a damaged copy as it stands.
func TestModeDamageIsRepairedAndReinstalled(t *testing.T) {
	e := newEnv(t)
	arc, _ := makeArchive(t, makeRelease(t, e.src, spec("1.1.0")))
	e.mustInstall(arc)
	r := e.receipt().Find("1.1.0")
	if r.Executables == nil || !slices.Equal(*r.Executables, []string{"install.sh", "payload/bin/hello"}) {
		t.Fatalf("the receipt records the executables %v", r.Executables)
	}
	cli := filepath.Join(r.Payload, "node_modules", "x", "cli.js")
	bin := filepath.Join(r.Payload, "bin", "hello")
	cliMode, binMode := perm(t, cli), perm(t, bin)
	for _, c := range []struct {
		name, path string
		mode       fs.FileMode
		code       string
	}{
		{"chmod 4777", cli, 0o777 | fs.ModeSetuid, DoctorModeUnsafe},
		{"0666 on an executable", bin, 0o666, DoctorModeUnsafe},
		{"setuid", bin, 0o755 | fs.ModeSetuid, DoctorModeUnsafe},
		{"setgid", cli, 0o644 | fs.ModeSetgid, DoctorModeUnsafe},
		{"executable bit dropped", bin, 0o644, DoctorModeModified},
		{"made executable", cli, 0o755, DoctorModeModified},
	} {
		for _, how := range []string{"repair", "reinstall"} {
			t.Run(c.name+" "+how, func(t *testing.T) {
				e.t = t
				if err := os.Chmod(c.path, c.mode); err != nil {
					t.Fatal(err)
				}
				rep := e.wantFound(c.name, c.code)
				if f := rep.Found[0]; f.Path != c.path || !strings.Contains(f.Detail, "run piship repair hello") || !strings.Contains(f.Detail, "reinstall hello 1.1.0") {
					t.Fatalf("doctor says: %s", f)
				}
				switch how {
				case "repair":
					if res := e.repair(""); len(res.Modes) != 1 {
						t.Fatalf("repair: %+v", res)
					}
				case "reinstall":
					res := e.mustInstall(arc)
					if res.Reused || len(res.Damaged) == 0 || !strings.Contains(res.Damaged[0], c.path) {
						t.Fatalf("install of the same archive over a damaged copy: reused %v, damaged %v", res.Reused, res.Damaged)
					}
					// What it moved aside is reclaimed as any obsolete copy.
					if _, err := Reclaim(context.Background(), e.opts(), "hello", 0); err != nil {
						t.Fatal(err)
					}
					if left, _ := filepath.Glob(filepath.Join(receipt.AppDir(e.homes.Install, "hello"), receipt.RetainedPrefix+"*")); len(left) != 0 {
						t.Fatalf("left beside: %v", left)
					}
				}
				if got, got2 := perm(t, cli), perm(t, bin); got != cliMode || got2 != binMode {
					t.Fatalf("after %s: %s %s and %s %s, installed as %s and %s", how, cli, got, bin, got2, cliMode, binMode)
				}
				e.wantClean("after " + how)
				// And an intact copy is still reused, nothing written.
				if res := e.mustInstall(arc); !res.Reused || len(res.Damaged) != 0 {
					t.Fatalf("install of an intact copy: reused %v, damaged %v", res.Reused, res.Damaged)
				}
			})
		}
	}
}
