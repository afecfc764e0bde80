package home

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
)

func TestRollback(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	_, err := Rollback(ctx, e.opts(), "hello")
	wantCode(t, err, receipt.CodeRollback)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	_, err = Rollback(ctx, e.opts(), "hello")
	wantCode(t, err, receipt.CodeRollback) // nothing before 1.0.0
	e.mustInstall(makeRelease(t, e.src, spec("2.0.0")))

	rc, err := Rollback(ctx, e.opts(), "hello")
	if err != nil {
		t.Fatal(err)
	}
	if rc.Active != "1.0.0" || rc.Previous != "" || rc.RolledBackFrom != "2.0.0" {
		t.Fatalf("%+v", rc)
	}
	if got := e.receipt(); got.Active != "1.0.0" {
		t.Fatal(got.Active)
	}
	_, err = Rollback(ctx, e.opts(), "hello")
	wantCode(t, err, receipt.CodeRollback)
	if !strings.Contains(err.Error(), "second rollback") {
		t.Fatal(err)
	}
	// Both versions still stand: nothing was deleted.
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if _, err := os.Stat(receipt.VersionDir(e.homes.Install, "hello", v)); err != nil {
			t.Fatal(err)
		}
	}
	// Moving forward again makes a rollback possible again.
	e.mustInstall(makeRelease(t, filepath.Join(e.src, "b"), spec("3.0.0")))
	if rc, err := Rollback(ctx, e.opts(), "hello"); err != nil || rc.Active != "1.0.0" {
		t.Fatalf("%v %+v", err, rc)
	}
}

func TestRollbackRefusesAnIncompletePrevious(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(makeRelease(t, e.src, spec("2.0.0")))
	os.Remove(filepath.Join(receipt.VersionDir(e.homes.Install, "hello", "1.0.0"), "payload", "piship.lock"))
	before := e.receiptBytes()
	_, err := Rollback(context.Background(), e.opts(), "hello")
	wantCode(t, err, receipt.CodeRollback)
	if e.receiptBytes() != before {
		t.Fatal("receipt changed")
	}
}

func TestUninstallLeases(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	writeFile(t, filepath.Join(e.homes.StateDir("hello"), "sessions", "a.json"), "{}", 0o644)
	writeFile(t, receipt.TrustPath(e.homes.Install, "hello"), "{}", 0o644)

	// A dead lease (a pid that cannot exist) does not hold anything.
	writeLease(t, e, "1.0.0", 1<<22+4242)
	// A lease of this process does.
	_, remove, err := receipt.WriteLease(e.homes.Install, "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Uninstall(ctx, e.opts(), "hello", false)
	wantCode(t, err, receipt.CodeUnavailable)
	if !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("%v does not name the pid", err)
	}
	if _, err := receipt.Read(e.homes.Install, "hello"); err != nil {
		t.Fatal("the receipt went away although the uninstall was refused")
	}
	remove()

	res, err := Uninstall(ctx, e.opts(), "hello", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{receipt.ReceiptPath(e.homes.Install, "hello"), filepath.Join(e.homes.Bin, "hello"), receipt.AppDir(e.homes.Install, "hello")} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("%s still exists", gone)
		}
	}
	if len(res.Kept) != 2 {
		t.Fatalf("kept %v", res.Kept)
	}
	if _, err := os.Stat(e.homes.StateDir("hello")); err != nil {
		t.Fatal("state removed without purge")
	}
	// Purge removes the state and the trust state.
	if _, err := Uninstall(ctx, e.opts(), "hello", true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(e.homes.StateDir("hello")); err == nil {
		t.Fatal("state kept by purge")
	}
	if _, err := os.Stat(receipt.TrustPath(e.homes.Install, "hello")); err == nil {
		t.Fatal("trust kept by purge")
	}
	_, err = Uninstall(ctx, e.opts(), "hello", false)
	wantCode(t, err, receipt.CodeUnavailable)
}

func writeLease(t *testing.T, e *env, version string, pid int) string {
	t.Helper()
	l := receipt.Lease{Schema: receipt.LeaseSchema, App: "hello", Version: version, PID: pid, Host: receipt.Hostname(), Start: time.Now(), Instance: canon.RandomHex(8)}
	data, _ := json.Marshal(l)
	p := filepath.Join(receipt.LeasesDir(e.homes.Install, "hello"), version, l.Instance+".json")
	writeFile(t, p, string(data), 0o644)
	return p
}

func TestInstallRefusesToReplaceARunningVersion(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	_, remove, err := receipt.WriteLease(e.homes.Install, "hello", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	s := spec("1.0.0")
	s.extra = map[string]string{"resources/x.txt": "other bytes\n"}
	_, err = e.install(makeRelease(t, filepath.Join(e.src, "b"), s))
	wantCode(t, err, receipt.CodeUnavailable)
}

func TestDoctor(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i, v := range []string{"1.0.0", "2.0.0", "3.0.0", "4.0.0", "5.0.0"} {
		s := spec(v)
		s.extra = map[string]string{}
		for j := range 40 {
			s.extra[fmt.Sprintf("resources/%d/f%02d.txt", i, j)] = strings.Repeat("x", j)
		}
		e.mustInstall(makeRelease(t, e.src, s))
	}
	// 5 active, 4 previous; 2 leased by this process; 1 leased by a dead
	// pid; 3 obsolete; plus a retained leftover.
	_, remove, err := receipt.WriteLease(e.homes.Install, "hello", "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	deadLease := writeLease(t, e, "1.0.0", 1<<22+777)
	leftover := filepath.Join(receipt.AppDir(e.homes.Install, "hello"), receipt.RetainedPrefix+"9.9.9-abcd1234")
	writeFile(t, filepath.Join(leftover, "payload", "a.js"), "x", 0o644)

	rep, err := Doctor(ctx, e.opts(), "hello", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Verified || len(rep.Found) != 0 || rep.Active != "5.0.0" || rep.Previous != "4.0.0" {
		t.Fatalf("%+v", rep)
	}
	app := receipt.AppDir(e.homes.Install, "hello")
	for _, v := range []string{"2.0.0", "4.0.0", "5.0.0"} {
		if _, err := os.Stat(filepath.Join(app, v)); err != nil {
			t.Errorf("doctor removed %s: %v", v, err)
		}
	}
	for _, gone := range []string{filepath.Join(app, "1.0.0"), filepath.Join(app, "3.0.0"), leftover, deadLease} {
		if _, err := os.Stat(gone); err == nil {
			t.Errorf("%s not reclaimed", gone)
		}
	}
	if len(rep.Leases) != 1 || rep.Leases[0].Version != "2.0.0" || len(rep.Remaining) != 0 || rep.DiskBytes <= 0 {
		t.Fatalf("%+v", rep)
	}
	rc := e.receipt()
	if rc.Find("1.0.0") != nil || rc.Find("3.0.0") != nil || rc.Find("2.0.0") == nil {
		t.Fatalf("records %+v", rc.Releases)
	}

	// A changed payload file is caught.
	writeFile(t, filepath.Join(app, "5.0.0", "payload", "node_modules", "x", "cli.js"), "changed()\n", 0o644)
	rep, err = Doctor(ctx, e.opts(), "hello", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified || len(rep.Found) == 0 || !strings.Contains(foundText(rep), "node_modules/x/cli.js") {
		t.Fatalf("%+v", rep)
	}
}

func TestDoctorBudget(t *testing.T) {
	e := newEnv(t)
	app := receipt.AppDir(e.homes.Install, "hello")
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	for _, d := range []string{".retained-0.1.0-aaaa", ".retained-0.2.0-bbbb", ".retained-0.3.0-cccc"} {
		for j := range 200 {
			writeFile(t, filepath.Join(app, d, fmt.Sprintf("f%03d", j)), "x", 0o644)
		}
	}
	r, err := Reclaim(context.Background(), e.opts(), "hello", time.Nanosecond)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exhausted || r.Unlinks != reclaimCheckEvery || len(r.Remaining) != 3 {
		t.Fatalf("%+v", r)
	}
	// The next sweep with time finishes the job.
	r, err = Reclaim(context.Background(), e.opts(), "hello", time.Minute)
	if err != nil || len(r.Remaining) != 0 || len(r.Reclaimed) != 3 {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(app, "1.0.0")); err != nil {
		t.Fatal("the active version was reclaimed")
	}
}

func needNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the tests need Node.js (see README)")
	}
}

// TestInstallThenLaunch is the consumer path end to end: install an
// archive, launch it through the receipt, then refuse a changed lock.
func TestInstallThenLaunch(t *testing.T) {
	needNode(t)
	e := newEnv(t)
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(arch)
	var out bytes.Buffer
	code, tr, err := launch.Run(context.Background(), e.homes.Install, "hello", []string{"a b", "--flag"},
		launch.Options{Stdout: &out, Stderr: &out, Env: []string{"EXIT_CODE=7"}})
	if err != nil {
		t.Fatal(err)
	}
	if code != 7 || strings.TrimSpace(out.String()) != `["a b","--flag"]` {
		t.Fatalf("exit %d, output %q", code, out.String())
	}
	if phases := tr.Phases; len(phases) < 6 || phases[len(phases)-1].Name != launch.PhaseNodeExited {
		t.Fatalf("phases %+v", phases)
	}
	if live, _ := receipt.LiveLeases(e.homes.Install, "hello"); len(live) != 0 {
		t.Fatalf("lease left behind: %+v", live)
	}
	lock := filepath.Join(receipt.VersionDir(e.homes.Install, "hello", "1.0.0"), "payload", "piship.lock")
	data, _ := os.ReadFile(lock)
	writeFile(t, lock, strings.Replace(string(data), `"verifyAtLaunch": false`, `"verifyAtLaunch": true`, 1), 0o644)
	_, _, err = launch.Run(context.Background(), e.homes.Install, "hello", nil, launch.Options{Stdout: &out, Stderr: &out})
	wantCode(t, err, receipt.CodeIntegrity)
}

// TestShimRuns runs the installed POSIX shim with sh against a stand-in
// launcher that prints what it was given.
func TestShimRuns(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Fatal("no sh on PATH")
	}
	e := newEnv(t)
	e.homes.State = filepath.Join(e.root, "it's state") // a quote to survive
	fake := filepath.Join(e.root, "tools dir", "piship-launch")
	writeFile(t, fake, "#!/bin/sh\nprintf '%s|' \"$@\" \"$PISHIP_INSTALL_HOME\" \"$PISHIP_STATE_HOME\"\n", 0o755)
	res := e.mustInstall(makeRelease(t, e.src, spec("1.0.0")), func(o *InstallOptions) { o.Launcher = fake })
	out, err := exec.Command(res.Shims[0], "a b", "$HOME", "--").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "hello|--|a b|$HOME|--|" + e.homes.Install + "|" + e.homes.State + "|"
	if string(out) != want {
		t.Fatalf("shim ran the launcher with %q, want %q", out, want)
	}
	// With the piship binary itself, the launch subcommand comes first.
	if s := ShimScript("/usr/bin/piship", "hello", e.homes); !strings.Contains(s, "exec '/usr/bin/piship' launch 'hello' -- \"$@\"\n") {
		t.Fatal(s)
	}
	if launcherFromShim(res.Shims[0]) != fake {
		t.Fatalf("launcherFromShim = %q", launcherFromShim(res.Shims[0]))
	}
}

// A failed first install leaves nothing: no receipt and no apps/<id>
// (issue 13, defect 8: it removes the directory it wrote). What a killed
// first install leaves (a half-written version directory) doctor
// reclaims, reporting the distribution as not installed, and removes
// apps/<id>; an id with neither a receipt nor apps/<id> is still "not
// installed".
func TestDoctorReclaimsAFailedFirstInstall(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	good, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, arch, string(good[:len(good)*2/3]), 0o644)
	if _, err := e.install(arch); err == nil {
		t.Fatal("a truncated archive installed")
	}
	app := receipt.AppDir(e.homes.Install, "hello")
	if left, err := os.ReadDir(app); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("left after the failure: %v (%v), want no %s", left, err, app)
	}
	// What a kill during the extraction leaves.
	left := []string{receipt.VersionDir(e.homes.Install, "hello", "1.0.0")}
	writeFile(t, filepath.Join(left[0], "payload", "piship.lock"), "half", 0o644)
	if ids, err := receipt.IDs(e.homes.Install); err != nil || !slices.Equal(ids, []string{"hello"}) {
		t.Fatalf("IDs = %v, %v; want [hello] (its apps directory)", ids, err)
	}

	rep, err := Doctor(ctx, e.opts(), "hello", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.NotInstalled || rep.Verified || len(rep.Found) != 0 || len(rep.Reclaimed) != 1 || !strings.Contains(rep.Reclaimed[0], filepath.Base(left[0])) {
		t.Fatalf("%+v", rep)
	}
	if _, err := os.Stat(app); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("apps/hello after doctor: %v", err)
	}
	if ids, err := receipt.IDs(e.homes.Install); err != nil || len(ids) != 0 {
		t.Fatalf("IDs after doctor = %v, %v", ids, err)
	}
	if _, err := Doctor(ctx, e.opts(), "hello", time.Minute); !errors.Is(err, receipt.ErrNotInstalled) {
		t.Fatalf("doctor with nothing left = %v, want not installed", err)
	}

	// The next attempt installs.
	writeFile(t, arch, string(good), 0o644)
	if res := e.mustInstall(arch); res.Version != "1.0.0" {
		t.Fatalf("%+v", res)
	}
	if ids, _ := receipt.IDs(e.homes.Install); !slices.Equal(ids, []string{"hello"}) {
		t.Fatalf("IDs = %v", ids)
	}
}
