package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/proc"
)

// piWithTestSearchTools copies the flagship with its search_tools block
// replaced by archives of stand-in fd and rg in upstream's layout, seeded
// into the run's cache, at URLs of a local TLS server that counts what is
// asked of it (the release must ask nothing), its node block by the Node
// 22 fixture seeded likewise (fixture.SetNode), and relocks it.
func piWithTestSearchTools(t *testing.T, env map[string]string) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no downloads in this test", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	dir := copyDist(t, "pi")
	tools := fixture.FlagshipSearchTools()
	if err := fixture.SetSearchTools(dir, env["PISHIP_CACHE_HOME"], srv.URL+"/releases", tools); err != nil {
		t.Fatal(err)
	}
	// Its pinned Node is a stand-in too, packed as the registry's package
	// and seeded by digest (make test downloads no Node): a small script
	// that runs the Node 22 fixture by its absolute path, so the payload,
	// its archive and the install carry a few bytes instead of the 120 MB
	// executable (the real pinned Node: TestPiPinnedNodeWithoutNodeOnPath,
	// make test-pi).
	standIn := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(standIn, []byte("#!/bin/sh\nexec '"+node22(t)+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := fixture.SetNode(dir, env["PISHIP_CACHE_HOME"], standIn); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	return dir, &hits
}

// launchTiming is PISHIP_DEBUG_TIMING's JSON line of a start.
type launchTiming struct {
	Phases []struct {
		Name string
	}
	Counters map[string]int64
	Notes    map[string]string
}

// smokeStart runs `<shim> --smoke` with PISHIP_DEBUG_TIMING=1 in env and
// returns its timing line.
func smokeStart(t *testing.T, shim string, env []string) launchTiming {
	t.Helper()
	cmd := exec.Command(shim, "--smoke")
	cmd.Env = append(env, "PISHIP_DEBUG_TIMING=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --smoke: %v\n%s%s", shim, err, out, stderr.String())
	}
	var lt launchTiming
	i := strings.Index(stderr.String(), `{"schema":"piship-timing/v1","command":"launch"`)
	if i < 0 {
		t.Fatalf("no launch timing line:\n%s", stderr.String())
	}
	if err := json.Unmarshal([]byte(strings.SplitN(stderr.String()[i:], "\n", 2)[0]), &lt); err != nil {
		t.Fatal(err)
	}
	return lt
}

// checkSearchToolsAtLaunch: the installed flagship's starts (HOME root,
// so Pi's agent bin directory is root/.pi/agent/bin) place the bundled
// tools, read none of their bytes once placed, and catch a changed one,
// even with its modification time put back.
func checkSearchToolsAtLaunch(t *testing.T, env map[string]string, root, shim string) {
	t.Helper()
	runEnv := []string{"PATH=" + env["PATH"], "HOME=" + root, "PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
	agentBin := filepath.Join(root, ".pi", "agent", "bin")
	want := fixture.FlagshipSearchTools()
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(agentBin, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after the first start, %s in Pi's agent bin directory: %v (%d bytes, want the bundled %d)", name, err, len(got), len(data))
		}
	}
	// Pi's interactive start finds both tools: it neither downloads nor
	// says one is missing (there is no network here: an attempt would show
	// "Downloading..." and fail), and it does not run them to start.
	node := filepath.Join(t.TempDir(), "bin")
	os.MkdirAll(node, 0o755)
	os.Symlink(os.Getenv("PISHIP_NODE22"), filepath.Join(node, "node"))
	log := filepath.Join(t.TempDir(), "tools.log")
	uiEnv := []string{"PATH=" + node + ":/bin", "HOME=" + root, "TMPDIR=" + t.TempDir(), "PISHIP_TEST_TOOL_LOG=" + log,
		"PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
	// Pi looks for its tools once the UI is up: watch 3 s more.
	var upAt time.Time
	screen := interactiveScreen(t, uiEnv, []string{shim}, func(s string) bool {
		if upAt.IsZero() && strings.Contains(s, "v1.6.0") && strings.Contains(s, "ctrl+c") {
			upAt = time.Now()
		}
		return !upAt.IsZero() && time.Since(upAt) > 3*time.Second || strings.Contains(s, "Downloading")
	}, 60*time.Second)
	for _, bad := range []string{"not found", "Downloading", "Failed to download"} {
		if strings.Contains(screen, bad) {
			t.Fatalf("Pi's interactive start says %q with the bundled tools:\n%s", bad, screen)
		}
	}

	// The second start (and the first smoke start): fingerprints only.
	lt := smokeStart(t, shim, runEnv)
	if lt.Counters["search_tools_bytes_read"] != 0 || lt.Notes["search_tools_checked"] != "fd,rg" {
		t.Fatalf("second start: counters %v notes %v: want no tool bytes read, both checked", lt.Counters, lt.Notes)
	}
	// A smoke start keeps no compile cache unless asked (issue 29: it is
	// slower there, docs/performance.md).
	if lt.Notes["compile_cache"] != "off: off by default for a smoke start (PISHIP_COMPILE_CACHE=1 turns it on)" || lt.Notes["smoke"] != "version" || len(lt.Notes["launcher_build"]) != 12 {
		t.Fatalf("second start notes %v: want the compile cache off by default for a smoke start, the smoke test named, the launcher's build stamp", lt.Notes)
	}
	if lt := smokeStart(t, shim, append(slices.Clone(runEnv), "PISHIP_COMPILE_CACHE=1")); lt.Notes["compile_cache"] != "on" {
		t.Fatalf("smoke start with PISHIP_COMPILE_CACHE=1: notes %v, want the compile cache on", lt.Notes)
	}
	if lt.Phases[len(lt.Phases)-1].Name != "smoke_checked" {
		t.Fatalf("phases %+v", lt.Phases)
	}
	// fd rewritten with its size and modification time kept.
	fd := filepath.Join(agentBin, "fd")
	fi, _ := os.Stat(fd)
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(fd, bytes.Repeat([]byte{'#'}, int(fi.Size())), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(fd, fi.ModTime(), fi.ModTime())
	// Doctor sees what the next start will do, and changes nothing.
	doctorEnv := maps.Clone(env)
	doctorEnv["HOME"] = root
	if _, out, _ := cli(t, doctorEnv, "doctor", "pi", "--json"); !strings.Contains(out, `"code": "SEARCH_TOOL_STALE"`) || !strings.Contains(out, strconv.Quote(fd)) || strings.Contains(out, filepath.Join(agentBin, "rg")) {
		t.Fatalf("doctor after fd was changed: want SEARCH_TOOL_STALE for %s only:\n%s", fd, out)
	}
	lt = smokeStart(t, shim, runEnv)
	if lt.Notes["search_tools_placed"] != "fd" || lt.Notes["search_tools_checked"] != "rg" {
		t.Fatalf("after fd was changed (mtime restored): notes %v, want fd placed again and rg checked", lt.Notes)
	}
	if got, _ := os.ReadFile(fd); !bytes.Equal(got, want["fd"]) {
		t.Fatal("the changed fd was not replaced by the bundled one")
	}
	if _, out, _ := cli(t, doctorEnv, "doctor", "pi", "--json"); strings.Contains(out, "SEARCH_TOOL_") {
		t.Fatalf("doctor after the start placed fd again:\n%s", out)
	}
}

// interactiveScreen starts argv in a detached tmux session of its own
// (a real terminal, 160x45) with exactly env, and returns the screen once
// done says it is complete, or fails after timeout. The session is killed
// at the end of the test.
func interactiveScreen(t *testing.T, env []string, argv []string, done func(screen string) bool, timeout time.Duration) string {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed: make test-deps installs it (apt-get install tmux)")
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	words := []string{"env", "-i", "TERM=xterm-256color"}
	for _, kv := range append(slices.Clone(env), argv...) {
		words = append(words, quote(kv))
	}
	name := fmt.Sprintf("piship-e2e-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	socket := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) ([]byte, error) {
		return exec.Command("tmux", append([]string{"-S", socket}, args...)...).CombinedOutput()
	}
	if out, err := tm("new-session", "-d", "-s", name, "-x", "160", "-y", "45", strings.Join(words, " ")+"; sleep 600"); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	// The screen's processes outlive kill-server by a moment (Pi writes
	// its compile cache as it exits on SIGHUP): the cleanup waits until
	// every one of them is gone, so the test's directories are removed
	// after the last write into them, not beside it.
	pane, err := tm("display-message", "-p", "-t", name, "#{pane_pid}")
	if err != nil {
		t.Fatalf("tmux display-message: %v\n%s", err, pane)
	}
	panePID, _ := strconv.Atoi(strings.TrimSpace(string(pane)))
	t.Cleanup(func() {
		procs := descendants(panePID)
		tm("kill-server")
		waitGone(t, procs, 15*time.Second)
	})
	var screen string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		out, err := tm("capture-pane", "-p", "-t", name)
		if err != nil {
			t.Fatalf("tmux capture-pane: %v\n%s", err, out)
		}
		if screen = string(out); done(screen) {
			return screen
		}
	}
	t.Fatalf("%v: the screen after %s:\n%s", argv, timeout, screen)
	return ""
}

// descendants is pid and every process below it, read from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				children[ppid] = append(children[ppid], child)
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// waitGone waits until none of procs runs any more (proc.Exists: a
// zombie writes nothing more), failing after timeout.
func waitGone(t *testing.T, procs []int, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(20 * time.Millisecond) {
		alive := slices.DeleteFunc(slices.Clone(procs), func(pid int) bool { return !proc.Exists(pid) })
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes %v of the terminal session still run %s after it was killed", alive, timeout)
			return
		}
	}
}
