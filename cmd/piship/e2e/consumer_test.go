package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/proc"
)

// consumerWorld is a signing key, two releases of hello trusting it, a
// signed channel holding both, and three empty homes.
type consumerWorld struct {
	t       *testing.T
	id      string
	target  string
	env     []string
	bin     string
	chanDir string
	// chanArchives is chanDir without the delta (newWorldOf).
	chanArchives string
	release      map[string]string // version -> archive
	fp           string            // the signing key's fingerprint
}

func newConsumerWorld(t *testing.T) *consumerWorld {
	return newWorldOf(t, "hello", "1.0.0", "1.1.0", nil)
}

// newWorldOf releases two versions of an example distribution (edit may
// change each copy's distribution.hcl text before it is locked).
func newWorldOf(t *testing.T, example, v1, v2 string, edit func(string) string) *consumerWorld {
	// An example's directory is its distribution ID, or the ID and a
	// version series (pi-0.73).
	id, _, _ := strings.Cut(example, "-")
	w := &consumerWorld{t: t, id: id, target: "linux-x64", release: map[string]string{}}
	root := t.TempDir()
	w.bin = filepath.Join(root, "bin")
	w.env = append(os.Environ(), "PISHIP_PROGRESS=0", "PISHIP_CACHE_HOME="+sharedCache(t),
		"PISHIP_INSTALL_HOME="+filepath.Join(root, "install"), "PISHIP_BIN_HOME="+w.bin,
		"PISHIP_STATE_HOME="+filepath.Join(root, "state"))
	key := filepath.Join(root, "k.pem")
	w.run("keygen", key, "--id", "rel-1")
	w.chanDir = filepath.Join(root, "channel")
	out := w.run("repo", "init", w.chanDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	w.fp = "sha256:" + regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)[1]
	for _, v := range []string{v1, v2} {
		dir := copyDist(t, example)
		p := filepath.Join(dir, "distribution.hcl")
		b, _ := os.ReadFile(p)
		s := string(b)
		if edit != nil {
			s = edit(s)
		}
		os.WriteFile(p, []byte(fixture.WithUpdates(s, v, "https://updates.example.invalid/hello/", w.fp)), 0o644)
		if example == "hello" {
			os.WriteFile(filepath.Join(dir, "resources", "motd.txt"), []byte("motd "+v+"\n"), 0o644)
		}
		w.run("lock", dir)
		w.run("release", dir)
		w.release[v] = filepath.Join(dir, "dist", "releases", id+"-"+v+"-"+w.target+".tar.zst")
	}
	w.run("repo", "add", w.chanDir, w.release[v1], w.release[v2], "--key", key, "--deltas", "0")
	// chanArchives: the channel without deltas, for the tests of the
	// archive's own download (slow servers); then chanDir gets the delta
	// from v1 to v2 (repo add's default, adding v2 again), which every
	// update from it takes.
	w.chanArchives = filepath.Join(root, "channel-archives")
	if err := fixture.CopyTree(w.chanDir, w.chanArchives, nil); err != nil {
		t.Fatal(err)
	}
	if out := w.run("repo", "add", w.chanDir, w.release[v2], "--key", key); !strings.Contains(out, ".delta: the delta from "+v1) {
		t.Fatalf("repo add published no delta from %s:\n%s", v1, out)
	}
	return w
}

// exe is the binary for args: piship-install for a consumer command, as
// an end user runs it with the piship a release directory carries, the
// full piship for the rest (binaryFor).
func (w *consumerWorld) exe(args []string) string { return binaryFor(w.t, args) }

func (w *consumerWorld) run(args ...string) string {
	w.t.Helper()
	out, err := w.try(args...)
	if err != nil {
		w.t.Fatalf("piship %v: %v\n%s", args, err, out)
	}
	return out
}

func (w *consumerWorld) try(args ...string) (string, error) {
	cmd := exec.Command(w.exe(args), args...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// launch runs the installed command shim.
func (w *consumerWorld) launch(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, w.id), args...)
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("hello %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *consumerWorld) active() string {
	var r struct{ Active string }
	home := strings.TrimPrefix(w.envValue("PISHIP_INSTALL_HOME="), "")
	if err := readJSONFile(filepath.Join(home, "receipts", w.id+".json"), &r); err != nil {
		w.t.Fatal(err)
	}
	return r.Active
}

func (w *consumerWorld) envValue(prefix string) string {
	for _, kv := range w.env {
		if v, ok := strings.CutPrefix(kv, prefix); ok {
			return v
		}
	}
	return ""
}

// install -> launch -> update -> launch -> rollback -> launch, through the
// command shim, with the channel served from a directory and over HTTP.
func TestInstallUpdateRollbackThroughTheShim(t *testing.T) {
	for _, served := range []string{"directory", "http"} {
		t.Run(served, func(t *testing.T) {
			w := newConsumerWorld(t)
			from := w.chanDir
			if served == "http" {
				srv := httptest.NewServer(http.FileServer(http.Dir(w.chanDir)))
				defer srv.Close()
				from = srv.URL + "/"
			}
			other := "sha256:" + strings.Repeat("ab", 32)
			if out, err := w.try("install", w.release["1.0.0"], "--expect-root", other); err == nil || !strings.Contains(out, "POLICY_DENIED") {
				t.Fatalf("install with an another --expect-root: %v\n%s", err, out)
			}
			// The bin home is a temp dir, not on PATH: install names the
			// shim by its path and the line to add for the user's shell.
			icmd := exec.Command(w.exe([]string{"install"}), "install", w.release["1.0.0"], "--expect-root", w.fp)
			icmd.Env = append(slices.Clone(w.env), "SHELL=/bin/zsh")
			iout, err := icmd.CombinedOutput()
			if err != nil {
				t.Fatalf("install: %v\n%s", err, iout)
			}
			for _, want := range []string{"; run it as `" + filepath.Join(w.bin, "hello") + "`\n",
				w.bin + " is not on PATH", "Add this line to ~/.zshrc and open a new shell:\n  export PATH=\"" + w.bin + ":$PATH\"\n"} {
				if !strings.Contains(string(iout), want) {
					t.Fatalf("install output lacks %q:\n%s", want, iout)
				}
			}
			if got := w.launch("--version"); got != "1.0.0" {
				t.Fatalf("launch after install: %q", got)
			}
			if served == "directory" {
				// A piship-channel/v1 channel is refused, saying what replaced it.
				v1 := t.TempDir()
				os.WriteFile(filepath.Join(v1, "stable.json"), []byte(`{"schema": "piship-channel/v1", "distribution": "hello"}`), 0o644)
				out, err := w.try("update", "hello", "--from", v1)
				if err == nil || !strings.Contains(out, "UPDATE_FAILED") || !strings.Contains(out, "piship-channel/v1 was replaced by TUF repositories") ||
					!strings.Contains(out, "piship repo init") {
					t.Fatalf("update from a v1 channel: %v\n%s", err, out)
				}
			}
			if served == "http" {
				updateFromSlowServers(t, w) // issue 13: a dead or slow server ends an update in time
			}
			if out := w.run("update", "hello", "--from", from, "--check"); !strings.Contains(out, "update available 1.0.0 -> 1.1.0") {
				t.Fatalf("update --check: %s", out)
			}
			if w.active() != "1.0.0" {
				t.Fatal("update --check changed the installation")
			}
			w.run("update", "hello", "--from", from)
			if w.active() != "1.1.0" {
				t.Fatalf("active after update: %s", w.active())
			}
			if got := w.launch("piship"); !strings.Contains(got, "Hello, piship!") {
				t.Fatalf("launch after update: %q", got)
			}
			if out := w.run("update", "hello", "--from", from); !strings.Contains(out, "is up to date") {
				t.Fatalf("second update: %s", out)
			}
			w.run("rollback", "hello")
			if w.active() != "1.0.0" {
				t.Fatalf("active after rollback: %s", w.active())
			}
			if got := w.launch("--version"); got != "1.0.0" {
				t.Fatalf("launch after rollback: %q", got)
			}
			if out, err := w.try("rollback", "hello"); err == nil || !strings.Contains(out, "ROLLBACK_FAILED") {
				t.Fatalf("second rollback: %v\n%s", err, out)
			}
			out := w.run("doctor", "hello")
			for _, want := range []string{
				"hello: verified, nothing to repair", "active 1.0.0, previous none", "leases: 0 live",
				"trust: channel stable from https://updates.example.invalid/hello/, initial root " + w.fp, "disk: ",
			} {
				if !strings.Contains(out, want) {
					t.Fatalf("doctor output lacks %q:\n%s", want, out)
				}
			}

			// doctor replaces an outdated shim (one that runs an old launcher).
			shim := filepath.Join(w.bin, "hello")
			b, _ := os.ReadFile(shim)
			launcher := regexp.MustCompile(`exec '([^']+)'`).FindStringSubmatch(string(b))[1]
			os.WriteFile(shim, []byte(strings.Replace(string(b), launcher, "/old/piship-launch", 1)), 0o755)
			w.run("doctor", "hello")
			if got := w.launch("--version"); got != "1.0.0" {
				t.Fatalf("launch after doctor refreshed the shim: %q", got)
			}
			// update again after the rollback: the trusted TUF metadata in
			// trust/hello/ carries on from the first update.
			w.run("update", "hello", "--from", from)
			if w.active() != "1.1.0" {
				t.Fatalf("active after the update after rollback: %s", w.active())
			}
		})
	}
}

// A changed payload file is caught by doctor; a changed lock by every
// launch; uninstall is refused while a launch holds a lease.
func TestTamperingAndLeases(t *testing.T) {
	w := newConsumerWorld(t)
	w.run("install", w.release["1.0.0"])
	home := w.envValue("PISHIP_INSTALL_HOME=")
	payloadDir := filepath.Join(home, "apps", "hello", "1.0.0", "payload")

	motd := filepath.Join(payloadDir, "resources", "motd.txt")
	os.Chmod(motd, 0o644)
	os.WriteFile(motd, []byte("tampered\n"), 0o644)
	if out, err := w.try("doctor", "hello"); err == nil || !strings.Contains(out, "INTEGRITY_FAILED") {
		t.Fatalf("doctor missed a changed payload file: %v\n%s", err, out)
	}

	lock := filepath.Join(payloadDir, "piship.lock")
	b, _ := os.ReadFile(lock)
	os.Chmod(lock, 0o644)
	os.WriteFile(lock, append(b, ' '), 0o644)
	cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "INTEGRITY_FAILED") || strings.Contains(string(out), "1.0.0\n") {
		t.Fatalf("launch with a changed lock: %v\n%s", err, out)
	}
	os.WriteFile(lock, b, 0o644)
	os.WriteFile(motd, []byte("motd 1.0.0\n"), 0o644)

	// A kept launcher someone changed is damage: doctor replaces it and
	// exits 1. One piship kept before piship itself was updated (the stamp
	// vouches for the file) is a routine refresh: replaced, exit 0.
	kept := filepath.Join(home, "launcher", "piship-launch")
	orig, err := os.ReadFile(kept)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(kept, append(append([]byte{}, orig...), 0), 0o755) // still an executable that runs
	if out, err := w.try("doctor", "hello"); err == nil || !strings.Contains(out, "found: LAUNCHER_MODIFIED "+kept) ||
		!strings.Contains(out, "repaired: LAUNCHER_MODIFIED") || !strings.Contains(out, "INTEGRITY_FAILED") {
		t.Errorf("doctor on a modified launcher: %v\n%s", err, out)
	}
	if now, _ := os.ReadFile(kept); string(now) != string(orig) {
		t.Error("the kept launcher is not the one beside piship")
	}
	os.WriteFile(kept, append(append([]byte{}, orig...), 0), 0o755)
	keptID, _ := cache.FileIdentity(kept)
	os.WriteFile(kept+".stamp", []byte("an older piship-launch\n"+keptID+"\n"), 0o644)
	if out := w.run("doctor", "hello"); !strings.Contains(out, "repaired: LAUNCHER_OUTDATED") || strings.Contains(out, "found:") {
		t.Errorf("doctor did not refresh the outdated launcher:\n%s", out)
	}
	if now, _ := os.ReadFile(kept); string(now) != string(orig) {
		t.Error("the kept launcher is not the one beside piship")
	}
	if out := w.run("doctor", "hello"); strings.Contains(out, "LAUNCHER") || !strings.Contains(out, "hello: verified, nothing to repair") {
		t.Errorf("doctor replaced a current launcher:\n%s", out)
	}
	w.launchOK("after doctor replaced the launcher")
	checkDoctorTampering(w, home)

	// A running process's lease (written the way launch writes its own)
	// blocks uninstall; once the process is gone the lease is dead.
	leases := filepath.Join(home, "apps", "hello", ".runtime-leases")
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleeper.Process.Kill()
	writeLease(t, leases, "1.0.0", sleeper.Process.Pid)
	if out, err := w.try("uninstall", "hello"); err == nil || !strings.Contains(out, "hello is running") {
		t.Fatalf("uninstall with a live lease: %v\n%s", err, out)
	}
	sleeper.Process.Kill()
	sleeper.Wait()
	w.run("uninstall", "hello")
	if _, err := os.Stat(filepath.Join(w.bin, "hello")); !os.IsNotExist(err) {
		t.Fatal("uninstall left the shim")
	}

	// doctor without an ID looks at every distribution the home knows; a
	// failed first install leaves nothing for it (it removes what it
	// wrote: issue 13, defect 8).
	if out := w.run("doctor"); !strings.Contains(out, "nothing is installed in "+home) {
		t.Fatalf("doctor with nothing installed:\n%s", out)
	}
	good, _ := os.ReadFile(w.release["1.1.0"])
	bad := filepath.Join(t.TempDir(), filepath.Base(w.release["1.1.0"]))
	os.WriteFile(bad, good[:len(good)/2], 0o644)
	// Its one gzip member is checked whole when install opens it for the
	// space check, so it is refused before anything is written.
	if out, err := w.try("install", bad); err == nil || !strings.Contains(out, "INTEGRITY_FAILED") || !strings.Contains(out, "(truncated)") {
		t.Fatalf("install of a truncated archive: %v\n%s", err, out)
	}
	if dout := w.run("doctor"); !strings.Contains(dout, "nothing is installed in "+home) {
		t.Fatalf("doctor after a failed first install:\n%s", dout)
	}
	w.run("install", w.release["1.0.0"])
	var reps []struct {
		ID       string
		Verified bool
	}
	if out := w.run("doctor", "--json"); json.Unmarshal([]byte(out[strings.Index(out, "["):]), &reps) != nil || len(reps) != 1 || reps[0].ID != "hello" || !reps[0].Verified {
		t.Fatalf("doctor --json without ID:\n%s", out)
	}
}

func writeLease(t *testing.T, leasesDir, version string, pid int) {
	t.Helper()
	start, ok := proc.StartTime(pid)
	if !ok {
		start = time.Now()
	}
	l := receipt.Lease{Schema: receipt.LeaseSchema, App: "hello", Version: version, PID: pid, Host: receipt.Hostname(), Start: start, Instance: "test"}
	dir := filepath.Join(leasesDir, version)
	os.MkdirAll(dir, 0o755)
	b, _ := json.Marshal(l)
	if err := os.WriteFile(filepath.Join(dir, "test.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The real Pi of the 0.73 series (Node 20) goes the same way: install ->
// update -> rollback -> update, launched through its shim after each, with
// the TUF repository served from a directory and over loopback HTTP.
func TestPiInstallUpdateRollback(t *testing.T) {
	w := newWorldOf(t, "pi-0.73", "0.73.1", "0.73.2", nil)
	for _, served := range []string{"directory", "http"} {
		from := w.chanDir
		if served == "http" {
			srv := httptest.NewServer(http.FileServer(http.Dir(w.chanDir)))
			defer srv.Close()
			from = srv.URL + "/"
		}
		w.try("uninstall", "pi")
		w.run("install", w.release["0.73.1"])
		if got := w.launch("--version"); got != "0.73.1" {
			t.Fatalf("%s: pi --version after install: %q", served, got)
		}
		w.run("update", "pi", "--from", from)
		if a := w.active(); a != "0.73.2" {
			t.Fatalf("%s: active after update %s", served, a)
		}
		if got := w.launch("--version"); got != "0.73.1" {
			t.Fatalf("%s: pi --version after update: %q", served, got)
		}
		w.run("rollback", "pi")
		if a := w.active(); a != "0.73.1" {
			t.Fatalf("%s: active after rollback %s", served, a)
		}
		if got := w.launch("--version"); got != "0.73.1" {
			t.Fatalf("%s: pi --version after rollback: %q", served, got)
		}
		// And forward again: the trusted metadata carries on.
		w.run("update", "pi", "--from", from)
		if a := w.active(); a != "0.73.2" {
			t.Fatalf("%s: active after the update after rollback %s", served, a)
		}
		if got := w.launch("--version"); got != "0.73.1" {
			t.Fatalf("%s: pi --version after the update after rollback: %q", served, got)
		}
	}
	checkToolDownloadsDeferred(t, w)
}

// checkToolDownloadsDeferred: Pi 0.73 bundles no search tools, so with
// neither fd nor rg on PATH or in Pi's agent bin directory its starts run
// Pi offline and say so, doctor warns, and PISHIP_ALLOW_TOOL_DOWNLOAD=1
// gives Pi its own download back.
func checkToolDownloadsDeferred(t *testing.T, w *consumerWorld) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() // node alone: no fd, fdfind or rg
	if err := os.Symlink(node, filepath.Join(path, "node")); err != nil {
		t.Fatal(err)
	}
	env := append(slices.Clone(w.env), "HOME="+t.TempDir(), "PATH="+path)
	shim := filepath.Join(w.bin, w.id)
	lt := smokeStart(t, shim, env)
	if !strings.Contains(lt.Notes["tool_downloads_deferred"], "offline") {
		t.Fatalf("a start without search tools: notes %v, want tool_downloads_deferred", lt.Notes)
	}
	lt = smokeStart(t, shim, append(env, "PISHIP_ALLOW_TOOL_DOWNLOAD=1"))
	if _, deferred := lt.Notes["tool_downloads_deferred"]; deferred {
		t.Fatalf("PISHIP_ALLOW_TOOL_DOWNLOAD=1 still deferred: %v", lt.Notes)
	}
	// What Pi does with it, in a terminal: it skips the download, and
	// with PISHIP_ALLOW_TOOL_DOWNLOAD=1 it tries (and, offline, fails).
	ui := append(slices.Clone(env), "TMPDIR="+t.TempDir())
	shown := func(want string) func(string) bool { return func(s string) bool { return strings.Contains(s, want) } }
	interactiveScreen(t, ui, []string{shim}, shown("not found. Offline mode enabled, skipping download"), 60*time.Second)
	interactiveScreen(t, append(ui, "PISHIP_ALLOW_TOOL_DOWNLOAD=1"), []string{shim}, shown("not found. Downloading"), 60*time.Second)

	cmd := exec.Command(w.exe([]string{"doctor"}), "doctor", w.id, "--json")
	cmd.Env = env
	out, _ := cmd.Output()
	if !strings.Contains(string(out), `"TOOL_DOWNLOADS_DEFERRED"`) {
		t.Fatalf("doctor does not warn of the deferred downloads:\n%s", out)
	}
}

// With verify_at_launch the whole payload is checked at every start.
func TestVerifyAtLaunchCatchesAChangedFile(t *testing.T) {
	w := newWorldOf(t, "hello", "1.0.0", "1.1.0", func(s string) string {
		return strings.Replace(s, "verify_at_launch = false", "verify_at_launch = true", 1)
	})
	w.run("install", w.release["1.0.0"])
	if got := w.launch("--version"); got != "1.0.0" {
		t.Fatalf("launch: %q", got)
	}
	motd := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello", "1.0.0", "payload", "resources", "motd.txt")
	os.Chmod(motd, 0o644)
	os.WriteFile(motd, []byte("tampered\n"), 0o644)
	cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "INTEGRITY_FAILED") {
		t.Fatalf("verify_at_launch missed a changed payload file: %v\n%s", err, out)
	}
}

// A release for this platform carries the piship binaries in its
// directory, beside install.sh (not in the archive, not in
// checksums.txt), so install.sh needs nothing else: it installs with no
// piship on PATH. verify-release checks them against build-info.json.
func TestReleaseShipsPiship(t *testing.T) {
	w := newConsumerWorld(t)
	arc := w.release["1.0.0"]
	dir := strings.TrimSuffix(arc, ".tar.zst")
	for _, n := range []string{"piship", "piship-launch"} {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Fatalf("release directory without an executable %s: %v", n, err)
		}
	}
	out, err := exec.Command("tar", "--zstd", "-tf", arc).CombinedOutput()
	if err != nil {
		t.Fatalf("tar --zstd -tf: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "piship") {
			t.Fatalf("the archive carries %s", line)
		}
	}
	if sums, _ := os.ReadFile(filepath.Join(dir, "checksums.txt")); strings.Contains(string(sums), "  piship") {
		t.Fatalf("checksums.txt lists the binaries:\n%s", sums)
	}
	w.run("verify-release", dir)
	w.run("verify-release", arc)

	cmd := exec.Command("sh", filepath.Join(dir, "install.sh"))
	cmd.Env = append(slices.Clone(w.env), "PATH=/usr/bin:/bin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("install.sh with no piship on PATH: %v\n%s", err, out)
	}
	if got := w.launch("--version"); got != "1.0.0" {
		t.Fatalf("launch after install.sh: %q", got)
	}
	// Installing the same release again writes nothing, and says so.
	if out := w.run("install", dir); !strings.Contains(out, "hello 1.0.0 was already installed from the same release: activated it, nothing written") {
		t.Fatalf("second install of the same release:\n%s", out)
	}
	installed := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello", "1.0.0")
	if _, err := os.Stat(filepath.Join(installed, "piship")); err == nil {
		t.Fatal("the installed version holds the installer binary")
	}

	// A changed binary fails verify-release, naming the check.
	f, _ := os.OpenFile(filepath.Join(dir, "piship"), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("x"))
	f.Close()
	if out, err := w.try("verify-release", dir); err == nil || !strings.Contains(out, "tools") || !strings.Contains(out, "changed: piship") {
		t.Fatalf("verify-release of a changed piship: %v\n%s", err, out)
	}
}
