package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// newThreeVersionWorld is the consumer world with a third release, 1.2.0,
// trusting the same key but not on the channel (which offers 1.0.0 and
// 1.1.0): what a user installs by hand from a file.
func newThreeVersionWorld(t *testing.T) *consumerWorld {
	w := &consumerWorld{t: t, id: "hello", target: "linux-x64", release: map[string]string{}}
	root := t.TempDir()
	w.bin = filepath.Join(root, "bin")
	w.env = append(os.Environ(), "PISHIP_PROGRESS=0", "PISHIP_CACHE_HOME="+sharedCache(t), "PISHIP_STORE=off",
		"PISHIP_INSTALL_HOME="+filepath.Join(root, "install"), "PISHIP_BIN_HOME="+w.bin,
		"PISHIP_STATE_HOME="+filepath.Join(root, "state"))
	key := filepath.Join(root, "k.pem")
	w.run("keygen", key, "--id", "rel-1")
	w.chanDir = filepath.Join(root, "channel")
	out := w.run("repo", "init", w.chanDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	w.fp = "sha256:" + regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)[1]
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		dir := copyDist(t, "hello")
		p := filepath.Join(dir, "distribution.hcl")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(fixture.WithUpdates(string(b), v, "https://updates.example.invalid/hello/", w.fp)), 0o644)
		os.WriteFile(filepath.Join(dir, "resources", "motd.txt"), []byte("motd "+v+"\n"), 0o644)
		w.run("lock", dir)
		w.run("release", dir)
		w.release[v] = filepath.Join(dir, "dist", "releases", "hello-"+v+"-"+w.target+".tar.zst")
	}
	w.run("repo", "add", w.chanDir, w.release["1.0.0"], w.release["1.1.0"], "--key", key)
	return w
}

// trialState is what a trial ends with, read from the files a user has.
type trialState struct {
	receipt        bool // receipts/hello.json exists
	active         string
	previous       string
	rolledBackFrom string
	appDir         bool // apps/hello exists
	shim           bool // bin/hello exists
}

func (w *consumerWorld) state() trialState {
	w.t.Helper()
	home := w.envValue("PISHIP_INSTALL_HOME=")
	var s trialState
	data, err := os.ReadFile(filepath.Join(home, "receipts", "hello.json"))
	switch {
	case err == nil:
		var r struct{ Active, Previous, RolledBackFrom string }
		if err := json.Unmarshal(data, &r); err != nil {
			w.t.Fatalf("the receipt does not parse: %v\n%s", err, data)
		}
		s.receipt, s.active, s.previous, s.rolledBackFrom = true, r.Active, r.Previous, r.RolledBackFrom
	case !errors.Is(err, os.ErrNotExist):
		w.t.Fatal(err)
	}
	_, err = os.Lstat(filepath.Join(home, "apps", "hello"))
	s.appDir = err == nil
	_, err = os.Lstat(filepath.Join(w.bin, "hello"))
	s.shim = err == nil
	return s
}

// result is one command's exit and output.
type result struct {
	out string
	err error
}

func (r result) ok() bool { return r.err == nil }

// pair runs two piship commands at once (both started before either is
// waited for) and returns their results.
func (w *consumerWorld) pair(a, b []string) (result, result) {
	var res [2]result
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, args := range [][]string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(w.exe(args), args...)
			cmd.Env = w.env
			<-start
			out, err := cmd.CombinedOutput()
			res[i] = result{string(out), err}
		}()
	}
	close(start)
	wg.Wait()
	return res[0], res[1]
}

// doctorClean runs doctor on the installation and fails unless it exits 0
// with nothing to repair.
func (w *consumerWorld) doctorClean(trial int, pair string) {
	w.t.Helper()
	out, err := w.try("doctor", "hello")
	if err != nil || !strings.Contains(out, "nothing to repair") {
		w.t.Fatalf("%s trial %d: doctor afterwards: %v\n%s", pair, trial, err, out)
	}
}

// Two commands that change one home at the same time (issue 13, defect 1)
// end as if they had run one after the other: 20 trials of each pair, with
// real processes. What each pair may end with:
//
//   - install 1.2.0 (by hand) + update (the channel's newest is 1.1.0),
//     from 1.0.0: 1.2.0 active, never a downgrade to 1.1.0. The install
//     always succeeds; the update either ran first (1.1.0 became previous)
//     or refuses the downgrade with UPDATE_FAILED, as it would after the
//     install.
//   - update + rollback, from 1.0.0 active with 1.1.0 previous: update
//     first then rollback (1.0.0 active, rolled back from 1.1.0), or
//     rollback first (1.1.0 active) and the update finds it up to date.
//     Both succeed.
//   - repair + update, from a damaged 1.0.0 (see the subtest).
//   - install + repair of a damaged 1.0.0 (see the subtest).
//   - update + uninstall, from 1.0.0: uninstalled (no receipt, no apps/hello,
//     no shim) whatever the order; the uninstall succeeds, the update
//     either ran first or fails naming what is missing.
//
// Every installed outcome passes doctor with nothing to repair.
func TestConcurrentCommandsOnOneHome(t *testing.T) {
	w := newThreeVersionWorld(t)
	update := []string{"update", "hello", "--from", w.chanDir}
	start := time.Now()
	// Each trial starts from the state it needs by installing over what
	// the previous one left (reusing recorded versions where it can): an
	// uninstall and a fresh install per trial would double the time.
	setup := func(versions ...string) {
		for _, v := range versions {
			w.run("install", w.release[v])
		}
	}
	const trials = 20
	t.Run("install+update", func(t *testing.T) {
		w.t = t
		w.try("uninstall", "hello")
		for trial := range trials {
			setup("1.0.0") // 1.0.0 active
			in, up := w.pair([]string{"install", w.release["1.2.0"]}, update)
			s := w.state()
			if !in.ok() {
				t.Fatalf("trial %d: install 1.2.0 failed: %v\n%s", trial, in.err, in.out)
			}
			if s.active != "1.2.0" {
				t.Fatalf("trial %d: active %s after install 1.2.0 + update: a downgrade\ninstall: %s\nupdate: %v %s", trial, s.active, in.out, up.err, up.out)
			}
			switch {
			case up.ok() && s.previous == "1.1.0":
			case !up.ok() && strings.Contains(up.out, "UPDATE_FAILED") && strings.Contains(up.out, "downgrade"):
			default:
				t.Fatalf("trial %d: update ended %v (previous %q):\n%s", trial, up.err, s.previous, up.out)
			}
			w.doctorClean(trial, "install+update")
		}
	})
	t.Run("update+rollback", func(t *testing.T) {
		w.t = t
		for trial := range trials {
			setup("1.1.0", "1.0.0") // 1.0.0 active, 1.1.0 previous
			up, rb := w.pair(update, []string{"rollback", "hello"})
			s := w.state()
			if !up.ok() || !rb.ok() {
				t.Fatalf("trial %d: update %v, rollback %v\nupdate: %s\nrollback: %s", trial, up.err, rb.err, up.out, rb.out)
			}
			updateFirst := s.active == "1.0.0" && s.previous == "" && s.rolledBackFrom == "1.1.0"
			rollbackFirst := s.active == "1.1.0" && strings.Contains(up.out, "up to date")
			if !updateFirst && !rollbackFirst {
				t.Fatalf("trial %d: ended %+v, which no order of the two gives\nupdate: %s\nrollback: %s", trial, s, up.out, rb.out)
			}
			w.doctorClean(trial, "update+rollback")
		}
	})
	t.Run("update+uninstall", func(t *testing.T) {
		w.t = t
		w.try("uninstall", "hello")
		for trial := range trials {
			setup("1.0.0") // on an empty home: the previous trial uninstalled
			up, un := w.pair(update, []string{"uninstall", "hello"})
			s := w.state()
			if !un.ok() {
				t.Fatalf("trial %d: uninstall failed: %v\n%s\nupdate: %s", trial, un.err, un.out, up.out)
			}
			if s.receipt || s.appDir || s.shim {
				t.Fatalf("trial %d: after update + uninstall: %+v (update %v)\nupdate: %s\nuninstall: %s", trial, s, up.err, up.out, un.out)
			}
			if !up.ok() && !strings.Contains(up.out, "not installed") {
				t.Fatalf("trial %d: the update failed without saying hello is not installed: %v\n%s", trial, up.err, up.out)
			}
			if out, err := w.try("doctor"); err != nil || !strings.Contains(out, "nothing is installed") {
				t.Fatalf("trial %d: doctor of the home after the uninstall: %v\n%s", trial, err, out)
			}
		}
	})
	// repair + update, from a damaged 1.0.0: repair first (1.0.0 restored,
	// then updated to 1.1.0) or update first (1.1.0 active, nothing of it
	// to repair). Both succeed; 1.1.0 is active and sound either way.
	t.Run("repair+update", func(t *testing.T) {
		w.t = t
		w.try("uninstall", "hello")
		home := w.envValue("PISHIP_INSTALL_HOME=")
		for trial := range trials {
			setup("1.0.0") // reused when repaired, installed again when damaged
			os.Remove(filepath.Join(home, "apps", "hello", "1.0.0", "payload", "resources", "motd.txt"))
			rp, up := w.pair([]string{"repair", "hello", "--from", w.release["1.0.0"]}, update)
			s := w.state()
			if !rp.ok() || !up.ok() || s.active != "1.1.0" {
				t.Fatalf("trial %d: repair %v, update %v, active %s\nrepair: %s\nupdate: %s", trial, rp.err, up.err, s.active, rp.out, up.out)
			}
			if !strings.Contains(rp.out, "repaired hello 1.0.0") && !strings.Contains(rp.out, "hello 1.1.0: nothing to repair") {
				t.Fatalf("trial %d: repair said: %s", trial, rp.out)
			}
			w.doctorClean(trial, "repair+update")
		}
	})
	// install + repair of a damaged 1.0.0 (unsafe modes, the receipt's
	// entry edited; issue 29, points 10-12): the install of the same
	// archive installs it again instead of reusing the damaged copy, the
	// repair restores the modes and the record; in either order both
	// succeed, 1.0.0 is active and doctor finds nothing.
	t.Run("reinstall+repair", func(t *testing.T) {
		w.t = t
		w.try("uninstall", "hello")
		home := w.envValue("PISHIP_INSTALL_HOME=")
		for trial := range trials {
			setup("1.0.0")
			damageModesAndRecord(t, home)
			in, rp := w.pair([]string{"install", w.release["1.0.0"]}, []string{"repair", "hello"})
			s := w.state()
			if !in.ok() || !rp.ok() || s.active != "1.0.0" {
				t.Fatalf("trial %d: install %v, repair %v, active %s\ninstall: %s\nrepair: %s", trial, in.err, rp.err, s.active, in.out, rp.out)
			}
			w.doctorClean(trial, "reinstall+repair")
		}
	})
	t.Logf("%d trials of 5 pairs in %s", trials, time.Since(start).Round(time.Millisecond))
}
