package e2e

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// damageAll deletes every file of the installed payload but its inventory
// and changes release.json's neighbour, the SBOM: the installation does
// not start until it is repaired.
func damageAll(t *testing.T, versionDir string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(versionDir, "payload"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, filepath.Join("metadata", "inventory.json")) {
			os.Remove(p)
		}
		return nil
	})
	os.WriteFile(filepath.Join(versionDir, "sbom.spdx.json"), []byte("{}\n"), 0o644)
}

// damageModesAndRecord makes what decides what runs unsafe and edits the
// receipt (issue 29, points 10-12): apps/hello and the version's
// metadata directory writable by everyone, the receipt group-writable,
// and the active record's entry naming another payload file. Repair
// restores the modes and the record after the files.
func damageModesAndRecord(t *testing.T, home string) {
	t.Helper()
	versionDir := filepath.Join(home, "apps", "hello", "1.0.0")
	for p, m := range map[string]os.FileMode{
		filepath.Join(home, "apps", "hello"):              0o777,
		filepath.Join(versionDir, "payload", "metadata"):  0o777,
		filepath.Join(home, "receipts", "hello.json"):     0o664,
		filepath.Join(versionDir, "payload", "resources"): 0o777 | os.ModeSticky,
	} {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(home, "receipts", "hello.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rc map[string]any
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	for _, r := range rc["releases"].([]any) {
		if r := r.(map[string]any); r["version"] == rc["active"] {
			r["entry"] = "resources/motd.txt"
		}
	}
	data, _ = json.MarshalIndent(rc, "", "  ")
	if err := os.WriteFile(path, data, 0o664); err != nil {
		t.Fatal(err)
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			out[p] = string(data)
		}
		return nil
	})
	return out
}

// Repair restores a damaged installation from its archive (files, the
// modes of what decides what runs, and an edited receipt entry); doctor is
// clean after, the user's state is byte-identical, and a repair killed at
// a random point leaves the installation repairable (the next repair
// succeeds and it launches).
func TestRepairThroughTheCLIAndKilledAtRandom(t *testing.T) {
	w := newConsumerWorld(t)
	w.run("install", w.release["1.0.0"])
	home := w.envValue("PISHIP_INSTALL_HOME=")
	versionDir := filepath.Join(home, "apps", "hello", "1.0.0")
	stateDir := filepath.Join(w.envValue("PISHIP_STATE_HOME="), "hello")
	os.MkdirAll(filepath.Join(stateDir, "sessions"), 0o700)
	os.WriteFile(filepath.Join(stateDir, "sessions", "s1.json"), []byte(`{"mine":true}`), 0o600)
	state := readTree(t, stateDir)
	arc := w.release["1.0.0"]

	damageModesAndRecord(t, home)
	if out, err := w.try("launch", "hello"); err == nil || !strings.Contains(out, "INTEGRITY_FAILED") || !strings.Contains(out, "the receipt was edited") {
		t.Fatalf("a launch of the edited receipt: %v\n%s", err, out)
	}
	if out, err := w.try("doctor", "hello"); err == nil || !strings.Contains(out, "MODE_UNSAFE") || !strings.Contains(out, "RECEIPT_MODIFIED") {
		t.Fatalf("doctor of unsafe modes and an edited receipt: %v\n%s", err, out)
	}
	damageAll(t, versionDir)
	if out, _ := w.try("doctor", "hello"); !strings.Contains(out, "piship repair hello") {
		t.Fatalf("doctor does not suggest repair:\n%s", out)
	}
	if out, err := w.try("repair", "hello"); err == nil || !strings.Contains(out, "--from") {
		t.Fatalf("repair without a kept archive: %v\n%s", err, out)
	}
	t0 := time.Now()
	out := w.run("repair", "hello", "--from", arc)
	full := time.Since(t0)
	if !strings.Contains(out, "repaired hello 1.0.0") {
		t.Fatalf("repair: %s", out)
	}
	w.doctorClean(0, "repair")
	w.launchOK("after the repair")
	if !maps.Equal(readTree(t, stateDir), state) {
		t.Fatal("repair changed the user's state")
	}

	running := 0
	const trials = 20
	for i := range trials {
		damageAll(t, versionDir)
		damageModesAndRecord(t, home)
		d := time.Duration(rand.Int64N(int64(full)))
		if w.killAfter(d, "repair", "hello", "--from", arc) {
			running++
		}
		// Launchable now, or repairable: the next repair succeeds.
		out := w.run("repair", "hello", "--from", arc)
		if !strings.Contains(out, "hello 1.0.0") {
			t.Fatalf("trial %d: repair after a kill at %s: %s", i, d, out)
		}
		w.doctorClean(i, "killed repair, then repair")
		w.launchOK("after a killed repair and another")
	}
	if !maps.Equal(readTree(t, stateDir), state) {
		t.Fatal("the repairs changed the user's state")
	}
	t.Logf("a repair took %s; %d of %d kills found it running", full, running, trials)
	if running < trials/4 {
		t.Fatalf("only %d of %d kills landed while the repair ran: the trials did not test killed repairs", running, trials)
	}
}

// purge is refused while the app runs through its shim, then removes the
// installation, its state and its shim; --smoke through the shim runs the
// release's first smoke test.
func TestPurgeAndSmokeThroughTheShim(t *testing.T) {
	w := newConsumerWorld(t)
	w.run("install", w.release["1.0.0"])
	shim := filepath.Join(w.bin, "hello")
	lt := smokeStart(t, shim, w.env)
	if lt.Notes["smoke"] != "version" || lt.Phases[len(lt.Phases)-1].Name != "smoke_checked" {
		t.Fatalf("hello --smoke: %+v", lt)
	}
	// A smoke start keeps no compile cache (docs/performance.md), so it
	// leaves no state behind; an ordinary start creates the state
	// directory, which purge must remove.
	stateDir := filepath.Join(w.envValue("PISHIP_STATE_HOME="), "hello")
	if _, err := os.Stat(stateDir); err == nil {
		t.Fatal("the smoke start created the state directory: it keeps no compile cache")
	}
	start := exec.Command(shim, "--version")
	start.Env = w.env
	if out, err := start.CombinedOutput(); err != nil {
		t.Fatalf("hello --version: %v\n%s", err, out)
	}
	if _, err := os.Stat(stateDir); err != nil {
		t.Fatalf("the first ordinary start did not create the state directory: %v", err)
	}

	// A start that stays up (node preloads a module that waits), through
	// the shim: its lease refuses the purge.
	dir := t.TempDir()
	ready, hold := filepath.Join(dir, "ready"), filepath.Join(dir, "hold.cjs")
	os.WriteFile(hold, []byte(`require("fs").writeFileSync(process.env.READY, "up"); setTimeout(() => {}, 60000);`), 0o644)
	run := exec.Command(shim)
	run.Env = append(slices.Clone(w.env), "NODE_OPTIONS=--require "+hold, "READY="+ready)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the held start did not come up")
		}
	}
	if out, err := w.try("purge", "hello"); err == nil || !strings.Contains(out, "hello is running") {
		t.Fatalf("purge while running: %v\n%s", err, out)
	}
	if _, err := os.Stat(shim); err != nil {
		t.Fatal("a refused purge removed the shim")
	}
	run.Process.Signal(os.Interrupt)
	run.Wait()
	out := w.run("purge", "hello")
	if !strings.Contains(out, "uninstalled hello") {
		t.Fatalf("purge: %s", out)
	}
	for _, p := range []string{shim, stateDir, filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("purge left %s", p)
		}
	}
}

// The path issue 29 (point 11) walked: a payload file chmod 4777 makes
// doctor exit 1 with MODE_UNSAFE and advise piship repair; repair (with no
// archive kept) restores the mode, and so does installing the same
// archive again, which no longer says "nothing written" over a damaged
// copy. Doctor is clean after each.
func TestModeDamageClearedAsDoctorAdvises(t *testing.T) {
	w := newConsumerWorld(t)
	w.run("install", w.release["1.0.0"])
	motd := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello", "1.0.0", "payload", "resources", "motd.txt")
	for _, fix := range [][]string{{"repair", "hello"}, {"install", w.release["1.0.0"]}} {
		if err := os.Chmod(motd, 0o777|os.ModeSetuid); err != nil {
			t.Fatal(err)
		}
		out, err := w.try("doctor", "hello")
		if err == nil || !strings.Contains(out, "MODE_UNSAFE "+motd) || !strings.Contains(out, "run piship repair hello") {
			t.Fatalf("doctor after chmod 4777: %v\n%s", err, out)
		}
		out = w.run(fix...)
		if strings.Contains(out, "nothing to repair") || strings.Contains(out, "nothing written") {
			t.Fatalf("piship %v over a damaged copy:\n%s", fix, out)
		}
		// As install wrote it: the mode of its untouched neighbour.
		fi, err := os.Stat(motd)
		want, werr := os.Stat(filepath.Join(filepath.Dir(motd), "..", "piship.lock"))
		if err != nil || werr != nil || fi.Mode() != want.Mode() {
			t.Fatalf("after piship %v: %v (%v), want %v (%v)", fix, fi, err, want, werr)
		}
		w.doctorClean(0, fix[0])
		w.launchOK("after piship " + fix[0])
	}
}
