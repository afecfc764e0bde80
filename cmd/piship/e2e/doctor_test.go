package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/home/receipt"
)

// doctorReport is what `piship doctor --json` prints (piship-doctor/v1).
type doctorReport struct {
	Schema   string `json:"schema"`
	ID       string `json:"id"`
	Verified bool   `json:"verified"`
	Found    []struct {
		Code, Path, Detail string
	} `json:"found"`
	Repaired []struct {
		Code, Path, Detail string
	} `json:"repaired"`
}

// doctorFinds runs piship doctor hello on the world's installed 1.0.0 and
// checks it exits 1 with INTEGRITY_FAILED, having found code and nothing
// else (and, when repaired, repaired it).
func (w *consumerWorld) doctorFinds(what, code string, repaired bool) string {
	w.t.Helper()
	out, err := w.try("doctor", "hello")
	if err == nil || !strings.Contains(out, "DAMAGED") || !strings.Contains(out, "found: "+code) || !strings.Contains(out, "INTEGRITY_FAILED: hello: doctor found") ||
		strings.Count(out, "found: ") != 1 { // one damage, one line
		w.t.Fatalf("%s: doctor did not report %s alone with exit 1: %v\n%s", what, code, err, out)
	}
	if repaired != strings.Contains(out, "repaired: "+code) {
		w.t.Fatalf("%s: repaired %s is %v, want %v:\n%s", what, code, !repaired, repaired, out)
	}
	return out
}

// checkDoctorTampering tampers with the installed 1.0.0 of the world in
// each way doctor must notice, one at a time, and checks what doctor
// reports, repairs and exits with (and that launch refuses a payload
// outside apps/hello). It leaves the installation as it found it.
func checkDoctorTampering(w *consumerWorld, home string) {
	t := w.t
	t.Helper()
	dir := filepath.Join(home, "apps", "hello", "1.0.0")
	pay := filepath.Join(dir, "payload")
	motd := filepath.Join(pay, "resources", "motd.txt")
	inv := filepath.Join(pay, "metadata", "inventory.json")
	save := func(p string) func() {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		return func() { os.Chmod(p, 0o644); os.WriteFile(p, b, 0o644); os.Chmod(p, fi.Mode().Perm()) }
	}

	// A payload file and its inventory line rewritten together; --json
	// prints the report (not [] or null) and exits 1 too.
	undoMotd, undoInv := save(motd), save(inv)
	os.Chmod(motd, 0o644)
	os.WriteFile(motd, []byte("tampered\n"), 0o644)
	var m map[string]string
	b, _ := os.ReadFile(inv)
	json.Unmarshal(b, &m)
	if _, ok := m["resources/motd.txt"]; !ok {
		t.Fatal("resources/motd.txt is not in the inventory")
	}
	sumOut, _ := exec.Command("sha256sum", motd).Output()
	m["resources/motd.txt"] = strings.Fields(string(sumOut))[0]
	b, _ = json.Marshal(m)
	os.Chmod(inv, 0o644)
	os.WriteFile(inv, b, 0o644)
	// The receipt's digest of the inventory names it; checksums.txt binds
	// it too, but one rewrite is one finding.
	w.doctorFinds("file and inventory rewritten", "INVENTORY_MODIFIED", false)
	for _, args := range [][]string{{"doctor", "hello", "--json"}, {"doctor", "--json"}} {
		cmd := exec.Command(w.exe(args), args...)
		cmd.Env = w.env
		stdout, err := cmd.Output()
		var rep doctorReport
		if args[1] == "--json" {
			var reps []doctorReport
			if jerr := json.Unmarshal(stdout, &reps); jerr != nil || len(reps) != 1 {
				t.Fatalf("%v: %v\n%s", args, jerr, stdout)
			}
			rep = reps[0]
		} else if jerr := json.Unmarshal(stdout, &rep); jerr != nil {
			t.Fatalf("%v: %v\n%s", args, jerr, stdout)
		}
		if err == nil || rep.Schema != "piship-doctor/v1" || rep.ID != "hello" || rep.Verified || len(rep.Found) != 1 ||
			rep.Found[0].Code != "INVENTORY_MODIFIED" || rep.Found[0].Path != inv || rep.Repaired == nil || strings.Contains(string(stdout), "null") {
			t.Fatalf("%v: exit %v\n%s", args, err, stdout)
		}
	}
	undoMotd()
	undoInv()

	// release.json, bound by the receipt since the install.
	rj := filepath.Join(dir, "release.json")
	undoRJ := save(rj)
	b, _ = os.ReadFile(rj)
	os.Chmod(rj, 0o644)
	os.WriteFile(rj, append(b, '\n'), 0o644)
	w.doctorFinds("release.json rewritten", "RELEASE_MODIFIED", false)
	undoRJ()

	// chmod 4777.
	undoMotd = save(motd)
	os.Chmod(motd, 0o777|os.ModeSetuid)
	w.doctorFinds("chmod 4777", "MODE_UNSAFE", false)
	undoMotd()

	// The receipt points at a consistent copy outside apps/hello: doctor
	// reports it, and the command refuses to run it.
	elsewhere := filepath.Join(t.TempDir(), "1.0.0")
	if err := os.CopyFS(elsewhere, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	rc, err := receipt.Read(home, "hello")
	if err != nil {
		t.Fatal(err)
	}
	orig := *rc.Find("1.0.0")
	point := func(d string) {
		rc.Find("1.0.0").Dir, rc.Find("1.0.0").Payload = d, filepath.Join(d, "payload")
		if err := receipt.Write(home, rc); err != nil {
			t.Fatal(err)
		}
	}
	point(elsewhere)
	w.doctorFinds("payload outside", "PAYLOAD_OUTSIDE", false)
	if _, err := os.Stat(filepath.Join(pay, "piship.lock")); err != nil {
		t.Fatalf("doctor reclaimed the real 1.0.0 while the receipt pointed elsewhere: %v", err)
	}
	cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
	cmd.Env = w.env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "INTEGRITY_FAILED") || !strings.Contains(string(out), "outside") ||
		!strings.Contains(string(out), "piship doctor") || strings.Contains(string(out), "1.0.0\n") {
		t.Fatalf("launch of a payload outside apps/hello: %v\n%s", err, out)
	}
	point(orig.Dir)

	// A shim someone changed, a deleted shim, a launch gate replaced by
	// a directory: each found and repaired, and the command runs again.
	shim := filepath.Join(w.bin, "hello")
	good, _ := os.ReadFile(shim)
	os.WriteFile(shim, []byte(strings.Replace(string(good), "exec ", "echo owned >&2\nexec ", 1)), 0o755)
	w.doctorFinds("modified shim", "SHIM_MODIFIED", true)
	if now, _ := os.ReadFile(shim); string(now) != string(good) {
		t.Fatal("doctor did not rewrite the modified shim")
	}
	os.Remove(shim)
	w.doctorFinds("deleted shim", "SHIM_MISSING", true)
	w.launchOK("after doctor recreated the shim")
	gate := filepath.Join(home, "receipts", ".hello.launch.lock")
	os.Remove(gate)
	os.Mkdir(gate, 0o755)
	w.doctorFinds("launch gate directory", "LAUNCH_LOCK_INVALID", true)
	w.launchOK("after doctor removed the directory at the launch gate")

	if out := w.run("doctor", "hello"); !strings.Contains(out, "hello: verified, nothing to repair") {
		t.Fatalf("doctor after the repairs:\n%s", out)
	}
}
