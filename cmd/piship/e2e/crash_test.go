package e2e

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/stages/home/receipt"
)

// killAfter starts piship with args and kills it (SIGKILL) after d. It
// reports whether the kill found it running (false: it had finished).
func (w *consumerWorld) killAfter(d time.Duration, args ...string) bool {
	cmd := exec.Command(w.exe(args), args...)
	cmd.Env = w.env
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	time.Sleep(d)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// launchOK runs the command shim and fails the test unless the installed
// release starts and answers.
func (w *consumerWorld) launchOK(when string) {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
	cmd.Env = w.env
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1.0.0" {
		w.t.Fatalf("%s: the installed release does not launch: %v\n%s", when, err, out)
	}
}

// crashTrialsEnv sets how many kills TestKilledCommandsRecoverWithoutRepair
// makes per command: 5 in make test, 30 in make test-crash.
const crashTrialsEnv = "PISHIP_CRASH_TRIALS"

func crashTrials(t *testing.T) int {
	s := os.Getenv(crashTrialsEnv)
	if s == "" {
		return 5
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number of trials", crashTrialsEnv, s)
	}
	return n
}

// homeState is what a user can tell of an installation without running
// doctor: whether a receipt makes it installed, and its active and
// previous versions.
type homeState struct {
	Installed        bool
	Active, Previous string
}

func (s homeState) String() string {
	if !s.Installed {
		return "not installed"
	}
	return fmt.Sprintf("active %s, previous %s", s.Active, cmp.Or(s.Previous, "none"))
}

// killCase is one consumer command under the kill test: the setup that
// gives it real work in a fresh home, its arguments, the states before and
// after it, and how a re-run may refuse when the kill came after the
// commit (a completed rollback or uninstall is not repeated).
type killCase struct {
	name          string
	setup         func(w *consumerWorld)
	args          func(w *consumerWorld) []string
	before, after homeState
	// doneRefusal is what the re-run may fail with once the home is in
	// the after-state ("" = the re-run must succeed).
	doneRefusal string
	// settled checks the home once the re-run reached the after-state.
	settled func(w *consumerWorld) error
	// trust: the trusted TUF store (trust/hello/) must be the one before
	// the command or the one after it after every kill, never a mix.
	trust bool
	// minTrials is the least number of kills of this case, whatever
	// PISHIP_CRASH_TRIALS says; says is what its unkilled run prints.
	minTrials int
	says      string
}

// SIGKILL lands anywhere in install, update, a reinstall over a damaged
// copy, rollback, doctor and uninstall (PISHIP_CRASH_TRIALS times each, 5 unless set; make test-crash
// runs 30), at delays spread evenly over 1.2 times the command's unkilled
// run, and every home recovers without a repair: without running doctor,
// it is in the state before the command or after it, never between (a
// receipt names only versions whose directories stand, and the active one
// launches); running the same command again reaches the after-state; then
// doctor finds no damage. Every other trial runs with the
// content-addressed store on (objects kept and linked while the kill
// comes).
func TestKilledCommandsRecoverWithoutRepair(t *testing.T) {
	w := newConsumerWorld(t)
	base := slices.DeleteFunc(slices.Clone(w.env), func(kv string) bool {
		for _, k := range []string{"PISHIP_INSTALL_HOME=", "PISHIP_BIN_HOME=", "PISHIP_STATE_HOME=", "PISHIP_STORE="} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
	trials := crashTrials(t)
	installed := func(active, previous string) homeState { return homeState{true, active, previous} }
	twoVersions := func(w *consumerWorld) {
		w.run("install", w.release["1.0.0"])
		w.run("install", w.release["1.1.0"])
	}
	onlyKept := func(w *consumerWorld, versions ...string) error {
		app := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello")
		entries, err := os.ReadDir(app)
		if err != nil {
			return err
		}
		for _, e := range entries {
			switch n := e.Name(); {
			case slices.Contains(versions, n):
			case n == receipt.DownloadsName:
			case n == receipt.LeasesName:
				if leases, _ := filepath.Glob(filepath.Join(app, n, "*", "*.json")); len(leases) > 0 {
					return fmt.Errorf("dead leases left: %v", leases)
				}
			default:
				return fmt.Errorf("apps/hello/%s left after doctor", n)
			}
		}
		return nil
	}
	cases := []killCase{{
		name:   "install",
		setup:  func(w *consumerWorld) { w.run("install", w.release["1.0.0"]) },
		args:   func(w *consumerWorld) []string { return []string{"install", w.release["1.1.0"]} },
		before: installed("1.0.0", ""), after: installed("1.1.0", "1.0.0"),
		settled: func(w *consumerWorld) error { return onlyKept(w, "1.0.0", "1.1.0") },
	}, {
		// A delta update: the channel publishes the delta from 1.0.0
		// (repo add's default), and the update builds 1.1.0 from the
		// installed 1.0.0 and it; 10 kills at least (issue 33).
		name:   "update",
		setup:  func(w *consumerWorld) { w.run("install", w.release["1.0.0"]) },
		args:   func(w *consumerWorld) []string { return []string{"update", "hello", "--from", w.chanDir} },
		before: installed("1.0.0", ""), after: installed("1.1.0", "1.0.0"),
		settled:   func(w *consumerWorld) error { return onlyKept(w, "1.0.0", "1.1.0") },
		trust:     true,
		minTrials: 10,
		says:      "delta from 1.0.0 instead of",
	}, {
		// The same archive installed again over a damaged copy (a
		// payload file chmod 4777): not reused as it stands but
		// installed again, the damaged directory moved aside first
		// (issue 29, point 11). Either way 1.0.0 is active.
		name: "reinstall-damaged",
		setup: func(w *consumerWorld) {
			w.run("install", w.release["1.0.0"])
			motd := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello", "1.0.0", "payload", "resources", "motd.txt")
			if err := os.Chmod(motd, 0o777|os.ModeSetuid); err != nil {
				w.t.Fatal(err)
			}
		},
		args:   func(w *consumerWorld) []string { return []string{"install", w.release["1.0.0"]} },
		before: installed("1.0.0", ""), after: installed("1.0.0", ""),
		settled: func(w *consumerWorld) error { return onlyKept(w, "1.0.0") },
	}, {
		name:   "rollback",
		setup:  twoVersions,
		args:   func(w *consumerWorld) []string { return []string{"rollback", "hello"} },
		before: installed("1.1.0", "1.0.0"), after: installed("1.0.0", ""),
		doneRefusal: "ROLLBACK_FAILED: hello was already rolled back from 1.1.0 to 1.0.0",
	}, {
		// Something to reclaim: the version rolled back from, both
		// directories a failed install set aside (the version it found
		// standing and its own half-written one), and dead leases.
		name: "doctor",
		setup: func(w *consumerWorld) {
			twoVersions(w)
			w.run("rollback", "hello")
			good, _ := os.ReadFile(w.release["1.1.0"])
			bad := filepath.Join(w.t.TempDir(), filepath.Base(w.release["1.1.0"]))
			os.WriteFile(bad, good[:len(good)*3/4], 0o644)
			if out, err := w.try("install", bad); err == nil {
				w.t.Fatalf("install of a truncated archive succeeded:\n%s", out)
			}
			dead := exec.Command("true")
			dead.Run()
			leases := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello", receipt.LeasesName)
			writeLease(w.t, leases, "1.0.0", dead.Process.Pid)
			writeLease(w.t, leases, "1.1.0", dead.Process.Pid)
		},
		args:   func(w *consumerWorld) []string { return []string{"doctor", "hello"} },
		before: installed("1.0.0", ""), after: installed("1.0.0", ""),
		settled: func(w *consumerWorld) error { return onlyKept(w, "1.0.0") },
	}, {
		name:   "uninstall",
		setup:  twoVersions,
		args:   func(w *consumerWorld) []string { return []string{"uninstall", "hello"} },
		before: installed("1.1.0", "1.0.0"), after: homeState{},
		doneRefusal: "CONFIG_UNAVAILABLE: hello is not installed in",
		settled: func(w *consumerWorld) error {
			for _, p := range []string{filepath.Join(w.bin, "hello"), filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", "hello")} {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("%s is left after the uninstall", p)
				}
			}
			return nil
		},
	}}

	rng := rand.New(rand.NewPCG(13, uint64(time.Now().UnixNano())))
	homes := 0
	fresh := func(t *testing.T, store bool) {
		homes++
		root := filepath.Join(t.TempDir(), fmt.Sprintf("home-%d", homes))
		w.t, w.bin = t, filepath.Join(root, "bin")
		w.env = append(slices.Clone(base), "PISHIP_INSTALL_HOME="+filepath.Join(root, "install"), "PISHIP_BIN_HOME="+w.bin,
			"PISHIP_STATE_HOME="+filepath.Join(root, "state"), "PISHIP_STORE="+map[bool]string{true: "hardlink", false: "off"}[store])
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The command's unkilled run: that setup, before- and
			// after-state are what this case says, and how long it takes
			// (the median of three runs: the machine may be busy).
			var runs []time.Duration
			var trustBefore, trustAfter string
			for i := range 3 {
				fresh(t, false)
				c.setup(w)
				if st, err := w.observe(); err != nil || st != c.before {
					t.Fatalf("after the setup: %v (%v), want %v", st, err, c.before)
				}
				trustBefore = w.trustStore(true)
				start := time.Now()
				out := w.run(c.args(w)...)
				runs = append(runs, time.Since(start))
				if !strings.Contains(out, c.says) {
					t.Fatalf("an unkilled %s does not say %q:\n%s", c.name, c.says, out)
				}
				if i > 0 {
					continue
				}
				if trustAfter = w.trustStore(true); c.trust && trustAfter == trustBefore {
					t.Fatalf("an unkilled %s did not change the trusted store: %s", c.name, trustAfter)
				}
				if st, err := w.observe(); err != nil || st != c.after {
					t.Fatalf("after an unkilled %s: %v (%v), want %v", c.name, st, err, c.after)
				}
				if err := w.recovered(c, true); err != nil {
					t.Fatalf("after an unkilled %s: %v", c.name, err)
				}
			}
			slices.Sort(runs)
			took := runs[1]
			span := took * 12 / 10
			outcomes := map[string]int{}
			trials := trials
			if c.minTrials > trials {
				trials = c.minTrials
			}
			for trial := range trials {
				fresh(t, trial%2 == 1)
				c.setup(w)
				// Trial i is killed in the i-th of trials equal slices of
				// [0, span): a few trials still cover early, middle and
				// late.
				lo := span * time.Duration(trial) / time.Duration(trials)
				delay := lo + time.Duration(rng.Int64N(int64(span/time.Duration(trials))+1))
				where := fmt.Sprintf("trial %d (store %v): %s killed after %v of its %v", trial, trial%2 == 1, c.name, delay.Round(time.Millisecond), took.Round(time.Millisecond))
				wasRunning := w.killAfter(delay, c.args(w)...)
				st, err := w.observe()
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if st != c.before && st != c.after {
					t.Fatalf("%s: the home is between the states: %v, want %v or %v", where, st, c.before, c.after)
				}
				// A kill may leave the new store's copy beside the old
				// one; the store itself is one or the other.
				if got := w.trustStore(false); c.trust && got != trustBefore && got != trustAfter {
					t.Fatalf("%s: the trusted store is neither the old nor the new one: %s\nold: %s\nnew: %s", where, got, trustBefore, trustAfter)
				}
				outcome := map[bool]string{true: "killed", false: "finished"}[wasRunning] + map[bool]string{true: " before", false: " after"}[st == c.before && st != c.after]
				if st == c.after && c.settled != nil && c.settled(w) != nil {
					outcome += " with leftovers"
				}
				outcomes[outcome]++
				if out, err := w.try(c.args(w)...); err != nil && (st != c.after || c.doneRefusal == "" || !strings.Contains(out, c.doneRefusal)) {
					t.Fatalf("%s, leaving %v: the same %s again: %v\n%s", where, st, c.name, err, out)
				}
				if err := w.recovered(c, trial%2 == 1); err != nil {
					t.Fatalf("%s: after the same %s again: %v", where, c.name, err)
				}
				if got := w.trustStore(true); c.trust && got != trustAfter {
					t.Fatalf("%s: after the same %s again the trusted store is %s, want %s", where, c.name, got, trustAfter)
				}
				// A receipt's temporary file a kill left before its rename
				// is removed by doctor (issue 13, defect 8).
				if tmp, _ := filepath.Glob(filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "receipts", ".hello.json.tmp-*")); len(tmp) > 0 {
					t.Fatalf("%s: doctor left the temporary receipts %v", where, tmp)
				}
			}
			t.Logf("%s: unkilled %v, %d kills over [0, %v): %v", c.name, took.Round(time.Millisecond), trials, span.Round(time.Millisecond), outcomes)
		})
	}
}

// trustStore names the trusted TUF store of hello: each file of
// trust/hello/ with the sha256 of its bytes; with beside, then any other
// entry of trust/ (a killed update's copy, which doctor removes).
func (w *consumerWorld) trustStore(beside bool) string {
	dir := filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "trust")
	entries, _ := os.ReadDir(filepath.Join(dir, "hello"))
	var parts []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "hello", e.Name()))
		parts = append(parts, fmt.Sprintf("%s=%x%s", e.Name(), sha256.Sum256(b), errString(err)))
	}
	if len(parts) == 0 {
		parts = append(parts, "(no trust/hello/)")
	}
	others, _ := os.ReadDir(dir)
	for _, e := range others {
		if beside && e.Name() != "hello" {
			parts = append(parts, "beside: "+e.Name())
		}
	}
	return strings.Join(parts, " ")
}

// observe reads the home as a user would without doctor: the receipt, the
// directories it names, and a launch through the command shim. A receipt
// naming a directory that does not stand, an installed release that does
// not launch, or a command shim that launches something after an
// uninstall is an error.
func (w *consumerWorld) observe() (homeState, error) {
	home := w.envValue("PISHIP_INSTALL_HOME=")
	rc, err := receipt.Read(home, "hello")
	shim := filepath.Join(w.bin, "hello")
	cmd := exec.Command(shim, "--version")
	cmd.Env = w.env
	if errors.Is(err, receipt.ErrNotInstalled) {
		if _, serr := os.Lstat(shim); serr != nil {
			return homeState{}, nil
		}
		// A shim left beside no receipt must say so, not run anything.
		out, lerr := cmd.CombinedOutput()
		if lerr == nil || !strings.Contains(string(out), "hello is not installed") {
			return homeState{}, fmt.Errorf("no receipt, and the command shim %s answers: %v\n%s", shim, lerr, out)
		}
		return homeState{}, nil
	}
	if err != nil {
		return homeState{}, err
	}
	st := homeState{true, rc.Active, rc.Previous}
	for _, v := range []string{rc.Active, rc.Previous} {
		if v != "" && rc.Find(v) == nil {
			return st, fmt.Errorf("%v: the receipt has no record of %s", st, v)
		}
	}
	// Every record names a directory that stands, whole enough to launch
	// (a rollback to it checks the same two files).
	for _, r := range rc.Releases {
		for _, p := range []string{filepath.Join(r.Payload, "piship.lock"), filepath.Join(r.Payload, filepath.FromSlash(r.Entry))} {
			if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
				return st, fmt.Errorf("%v: the receipt records hello %s, and %s does not stand: %v", st, r.Version, p, err)
			}
		}
	}
	for _, r := range rc.Retained {
		if _, err := os.Stat(r.Dir); err != nil {
			return st, fmt.Errorf("%v: the receipt records a set-aside hello %s in %s, which does not stand: %v", st, r.Version, r.Dir, err)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "1.0.0" {
		return st, fmt.Errorf("%v: the active release does not launch: %v\n%s", st, err, out)
	}
	return st, nil
}

// recovered checks a home after the command ran to its end: it is in the
// after-state, the case's own check holds, and doctor finds no damage
// (what it reclaims is leftovers, not damage), also in its JSON report
// when asJSON.
func (w *consumerWorld) recovered(c killCase, asJSON bool) error {
	st, err := w.observe()
	if err != nil {
		return err
	}
	if st != c.after {
		return fmt.Errorf("the home is %v, want %v", st, c.after)
	}
	switch {
	case !st.Installed:
		if out, err := w.try("doctor"); err != nil || !strings.Contains(out, "nothing is installed in ") {
			return fmt.Errorf("doctor: %v\n%s", err, out)
		}
	default:
		if out, err := w.try("doctor", "hello"); err != nil || !strings.Contains(out, "hello: verified, nothing to repair") {
			return fmt.Errorf("doctor hello: %v\n%s", err, out)
		}
		if !asJSON {
			break
		}
		var rep struct {
			Verified bool
			Found    []any
		}
		out, err := w.try("doctor", "hello", "--json")
		if i := strings.Index(out, "{"); err != nil || i < 0 || json.Unmarshal([]byte(out[i:]), &rep) != nil || !rep.Verified || len(rep.Found) > 0 {
			return fmt.Errorf("doctor hello --json: %v\n%s", err, out)
		}
	}
	return c.check(w)
}

func (c killCase) check(w *consumerWorld) error {
	if c.settled == nil {
		return nil
	}
	return c.settled(w)
}

// Launches running while updates and reinstalls switch the active release
// never see a half-written version (with the store on, so the versions
// share linked files).
func TestLaunchesDuringUpdates(t *testing.T) {
	w := newConsumerWorld(t)
	w.env = append(w.env, "PISHIP_STORE=hardlink")
	w.run("install", w.release["1.0.0"])
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	launches := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cmd := exec.Command(filepath.Join(w.bin, "hello"), "--version")
				cmd.Env = w.env
				out, err := cmd.CombinedOutput()
				mu.Lock()
				launches++
				if err != nil || strings.TrimSpace(string(out)) != "1.0.0" {
					failures = append(failures, string(out)+" "+errString(err))
				}
				mu.Unlock()
			}
		}()
	}
	enough := func() bool { mu.Lock(); defer mu.Unlock(); return launches >= 30 }
	for cycle := 0; cycle < 40 && !enough(); cycle++ {
		w.run("update", "hello", "--from", w.chanDir)
		w.run("rollback", "hello")
		w.run("install", w.release["1.1.0"])
		w.run("install", w.release["1.0.0"])
	}
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d launches failed during updates, e.g. %s", len(failures), launches, failures[0])
	}
	if launches < 30 {
		t.Fatalf("only %d launches ran", launches)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
