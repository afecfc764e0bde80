package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// piWithTestSearchTools copies the flagship with its search_tools block
// replaced by archives of stand-in fd and rg in upstream's layout, seeded
// into the run's cache, at URLs of a local TLS server that counts what is
// asked of it (the release must ask nothing), and relocks it.
func piWithTestSearchTools(t *testing.T, env map[string]string) (string, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no downloads in this test", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	dir := copyDist(t, "pi")
	tools := map[string][]byte{"fd": fixture.SearchToolScript("fd", "10.2.0"), "rg": fixture.SearchToolScript("rg", "14.1.1")}
	if err := fixture.SetSearchTools(dir, env["PISHIP_CACHE_HOME"], srv.URL+"/releases", tools); err != nil {
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
	want := map[string][]byte{"fd": fixture.SearchToolScript("fd", "10.2.0"), "rg": fixture.SearchToolScript("rg", "14.1.1")}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(agentBin, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after the first start, %s in Pi's agent bin directory: %v (%d bytes, want the bundled %d)", name, err, len(got), len(data))
		}
	}
	// The second start (and the first smoke start): fingerprints only.
	lt := smokeStart(t, shim, runEnv)
	if lt.Counters["search_tools_bytes_read"] != 0 || lt.Notes["search_tools_checked"] != "fd,rg" {
		t.Fatalf("second start: counters %v notes %v: want no tool bytes read, both checked", lt.Counters, lt.Notes)
	}
	if lt.Notes["compile_cache"] != "on" || lt.Notes["smoke"] != "version" || len(lt.Notes["launcher_build"]) != 12 {
		t.Fatalf("second start notes %v: want the compile cache on, the smoke test named, the launcher's build stamp", lt.Notes)
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
	lt = smokeStart(t, shim, runEnv)
	if lt.Notes["search_tools_placed"] != "fd" || lt.Notes["search_tools_checked"] != "rg" {
		t.Fatalf("after fd was changed (mtime restored): notes %v, want fd placed again and rg checked", lt.Notes)
	}
	if got, _ := os.ReadFile(fd); !bytes.Equal(got, want["fd"]) {
		t.Fatal("the changed fd was not replaced by the bundled one")
	}
}
