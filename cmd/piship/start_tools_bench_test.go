package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// BenchmarkPiStartToolsAndCompileCache measures two things the installed
// flagship (Pi 1.6 on Node 22) does at its starts, each side by side in
// alternating order:
//
//   - the first start (a new HOME, so Pi's agent bin directory is empty,
//     and no state directory) of the flagship released with fd and rg
//     bundled (it copies them into the agent bin directory) against the
//     same release without them (the start is deferred: PI_OFFLINE=1), both
//     `pi --smoke` offline: first-tools-ms, first-none-ms;
//   - the warm `pi --smoke` (the same HOME and state again, the tools
//     checked by fingerprint) with the launcher's V8 compile cache
//     (PISHIP_COMPILE_CACHE=1: <state>/pi/cache/compile, from the second
//     start on) against NODE_DISABLE_COMPILE_CACHE=1: warm-cache-ms,
//     warm-nocache-ms.
//
// The tools are real executables: Debian's rg and fdfind (make
// search-tools-bin puts them in PISHIP_BENCH_SEARCH_TOOLS), placed in the
// upstream archive layout and seeded into the cache, since GitHub is out
// of reach here. Medians over the iterations.
//
//	make node22-bin search-tools-bin
//	PISHIP_NODE22=... PISHIP_BENCH_SEARCH_TOOLS=... go test -run '^$' -bench PiStartToolsAndCompileCache -benchtime 15x -timeout 30m ./cmd/piship/
func BenchmarkPiStartToolsAndCompileCache(b *testing.B) {
	node22, toolsDir := os.Getenv("PISHIP_NODE22"), os.Getenv("PISHIP_BENCH_SEARCH_TOOLS")
	if node22 == "" || toolsDir == "" {
		b.Fatal("PISHIP_NODE22 and PISHIP_BENCH_SEARCH_TOOLS must be set: run `make node22-bin search-tools-bin` (make bench does)")
	}
	tools := map[string][]byte{}
	for _, n := range []string{"fd", "rg"} {
		data, err := os.ReadFile(filepath.Join(toolsDir, n))
		if err != nil {
			b.Fatal(err)
		}
		tools[n] = data
	}
	piship := realBinaries(b)
	work := b.TempDir()
	cache := filepath.Join(work, "cache")
	env := node22Env(node22)
	shims := map[string]string{}
	states := map[string]string{}
	for _, form := range []string{"tools", "none"} {
		dir := copyDist(b, "pi")
		bundled := tools
		if form == "none" {
			bundled = nil
		}
		if err := fixture.SetSearchTools(dir, cache, "https://127.0.0.1:9/unreachable", bundled); err != nil {
			b.Fatal(err)
		}
		// The pinned Node: the fixture, seeded (no download).
		if err := fixture.SetNode(dir, cache, node22); err != nil {
			b.Fatal(err)
		}
		ibRun(b, piship, env(map[string]string{"PISHIP_CACHE_HOME": cache}), "lock", dir)
		ibRun(b, piship, env(map[string]string{"PISHIP_CACHE_HOME": cache}), "release", dir)
		root := filepath.Join(work, form)
		ibRun(b, piship, env(ibHomes(cache, root)), "install", ibArchive(b, dir))
		shims[form], states[form] = filepath.Join(root, "bin", "pi"), filepath.Join(root, "state", "pi")
	}
	warmHome := b.TempDir()
	startEnv := func(home string, kv ...string) []string {
		return env(nil, append([]string{"HOME", home, "TMPDIR", home}, kv...)...)
	}
	on := []string{"PISHIP_COMPILE_CACHE", "1"}
	ibTime(b, shims["tools"], startEnv(warmHome, on...), "", true, "--smoke") // creates the state directory
	ibTime(b, shims["tools"], startEnv(warmHome, on...), "", true, "--smoke") // fills the compile cache
	m := map[string][]float64{}
	n := 0
	for b.Loop() {
		for k := range 2 {
			form := []string{"tools", "none"}[(n+k)%2]
			os.RemoveAll(states[form])
			d := ibTime(b, shims[form], startEnv(b.TempDir()), "", true, "--smoke")
			m["first-"+form] = append(m["first-"+form], float64(d.Microseconds())/1000)
		}
		for k := range 2 {
			cached := (n+k)%2 == 0
			kv := []string{"PISHIP_COMPILE_CACHE", "1"}
			if !cached {
				kv = []string{"NODE_DISABLE_COMPILE_CACHE", "1"}
			}
			d := ibTime(b, shims["tools"], startEnv(warmHome, kv...), "", true, "--smoke")
			name := map[bool]string{true: "warm-cache", false: "warm-nocache"}[cached]
			m[name] = append(m[name], float64(d.Microseconds())/1000)
		}
		n++
	}
	for name, xs := range m {
		b.ReportMetric(ibMedian(xs), name+"-ms")
	}
	b.ReportMetric(ibMedian(m["warm-cache"])/ibMedian(m["warm-nocache"]), "cache/nocache")
	b.ReportMetric(ibMedian(m["first-tools"])/ibMedian(m["first-none"]), "tools/none")
	if fi, err := os.Stat(filepath.Join(states["tools"], "cache", "compile")); err != nil || !fi.IsDir() {
		b.Fatalf("no compile cache was written: %v", err)
	}
	b.Logf("%d iterations; tools %d+%d bytes", n, len(tools["fd"]), len(tools["rg"]))
}

// BenchmarkPiInteractiveCompileCache times Pi 1.6's interactive start (the
// installed flagship on Node 22, through its command shim, in a real
// terminal: a tmux pane 160x45) until its first screen is up (the header
// with "v1.6.0" and the "ctrl+c" hint), in three forms, each iteration
// running all three in rotating order on the same HOME:
//
//   - cache: the launcher's V8 compile cache (PISHIP_COMPILE_CACHE=1:
//     NODE_COMPILE_CACHE=<state>/pi/cache/compile, filled by an
//     interactive start before the loop);
//   - nocache: no compile cache at all (NODE_DISABLE_COMPILE_CACHE=1);
//   - picache: the launcher's cache off (PISHIP_COMPILE_CACHE=0), which
//     leaves Pi's own: Pi 1.6's cli.js calls module.enableCompileCache(),
//     whose default is $TMPDIR/node-compile-cache (filled before the loop).
//
// One benchmark iteration is interactiveRounds rounds (20 paired starts of
// each form, also under make bench's default -benchtime). Pi is quit
// between starts (ctrl+d) and the pane's command has ended before the
// next one. It reports the medians (cache-ms, nocache-ms,
// picache-ms), the medians of the iterations' paired ratios
// (paired-cache/nocache, paired-picache/nocache) and the ratio of the
// medians (cache/nocache). The search tools are the stand-ins (Pi does
// not run them to start).
//
//	make node22-bin
//	PISHIP_NODE22=... go test -run '^$' -bench PiInteractiveCompileCache -benchtime 1x -timeout 40m ./cmd/piship/
func BenchmarkPiInteractiveCompileCache(b *testing.B) {
	node22 := os.Getenv("PISHIP_NODE22")
	if node22 == "" {
		b.Fatal("PISHIP_NODE22 must be set: run `make node22-bin` (make bench does)")
	}
	piship := realBinaries(b)
	work := b.TempDir()
	cache := filepath.Join(work, "cache")
	env := node22Env(node22)
	dir := copyDist(b, "pi")
	if err := fixture.SetSearchTools(dir, cache, "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
		b.Fatal(err)
	}
	if err := fixture.SetNode(dir, cache, node22); err != nil {
		b.Fatal(err)
	}
	ibRun(b, piship, env(map[string]string{"PISHIP_CACHE_HOME": cache}), "lock", dir)
	ibRun(b, piship, env(map[string]string{"PISHIP_CACHE_HOME": cache}), "release", dir)
	root := filepath.Join(work, "home")
	homes := ibHomes(cache, root)
	ibRun(b, piship, env(homes), "install", ibArchive(b, dir))
	shim, compileDir := filepath.Join(root, "bin", "pi"), filepath.Join(root, "state", "pi", "cache", "compile")

	// Pi's environment: exactly this (env -i), node first on PATH.
	nodeDir := filepath.Join(work, "node")
	os.MkdirAll(nodeDir, 0o755)
	if err := os.Symlink(node22, filepath.Join(nodeDir, "node")); err != nil {
		b.Fatal(err)
	}
	userHome, tmp := filepath.Join(work, "user"), filepath.Join(work, "tmp")
	os.MkdirAll(userHome, 0o755)
	os.MkdirAll(tmp, 0o755)
	piCacheDir := filepath.Join(tmp, "node-compile-cache")
	forms := []string{"cache", "nocache", "picache"}
	piEnv := func(form string) []string {
		e := []string{"PATH=" + nodeDir + ":/usr/bin:/bin", "HOME=" + userHome, "TMPDIR=" + tmp, "LANG=C.UTF-8",
			"PISHIP_INSTALL_HOME=" + homes["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + homes["PISHIP_STATE_HOME"]}
		switch form {
		case "cache":
			return append(e, "PISHIP_COMPILE_CACHE=1")
		case "nocache":
			return append(e, "PISHIP_COMPILE_CACHE=0", "NODE_DISABLE_COMPILE_CACHE=1")
		}
		return append(e, "PISHIP_COMPILE_CACHE=0")
	}
	term := newPiTerm(b, work)
	term.firstScreen(piEnv("cache"), shim) // creates the state directory
	if n := dirEntries(piCacheDir); n == 0 {
		b.Fatalf("Pi 1.6 wrote no compile cache of its own into %s on a start without the launcher's", piCacheDir)
	}
	term.firstScreen(piEnv("cache"), shim) // fills the launcher's compile cache
	if n := dirEntries(compileDir); n == 0 {
		b.Fatalf("no compile cache was written into %s by an interactive start", compileDir)
	}
	m := map[string][]float64{}
	ratios := map[string][]float64{}
	n := 0
	for b.Loop() {
		for range interactiveRounds {
			got := map[string]float64{}
			for k := range forms {
				form := forms[(n+k)%len(forms)]
				d := term.firstScreen(piEnv(form), shim)
				got[form] = float64(d.Microseconds()) / 1000
				m[form] = append(m[form], got[form])
			}
			ratios["cache"] = append(ratios["cache"], got["cache"]/got["nocache"])
			ratios["picache"] = append(ratios["picache"], got["picache"]/got["nocache"])
			n++
		}
	}
	for _, f := range forms {
		b.ReportMetric(ibMedian(m[f]), f+"-ms")
	}
	b.ReportMetric(ibMedian(ratios["cache"]), "paired-cache/nocache")
	b.ReportMetric(ibMedian(ratios["picache"]), "paired-picache/nocache")
	b.ReportMetric(ibMedian(m["cache"])/ibMedian(m["nocache"]), "cache/nocache")
	b.Logf("%d rounds; ms: cache %v; nocache %v; picache %v; compile cache files: launcher's %d, Pi's own %d",
		n, m["cache"], m["nocache"], m["picache"], dirEntries(compileDir), dirEntries(piCacheDir))
}

// interactiveRounds is how many rounds of the three forms one iteration of
// BenchmarkPiInteractiveCompileCache runs.
const interactiveRounds = 20

// dirEntries is the number of files under dir (0 when it is missing).
func dirEntries(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// piTerm is a private tmux server (its own socket, no user configuration)
// for timing interactive starts.
type piTerm struct {
	b      *testing.B
	socket string
	dir    string
	n      int
}

func newPiTerm(b *testing.B, dir string) *piTerm {
	b.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatal("tmux is not installed: make test-deps installs it (apt-get install tmux)")
	}
	pt := &piTerm{b: b, socket: filepath.Join(dir, "tmux.sock"), dir: dir}
	conf := filepath.Join(dir, "tmux.conf")
	if err := os.WriteFile(conf, []byte("set -s exit-empty off\nset -g status off\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	if out, err := pt.tmux("-f", conf, "start-server"); err != nil {
		b.Fatalf("tmux start-server: %v\n%s", err, out)
	}
	b.Cleanup(func() { pt.tmux("kill-server") })
	return pt
}

func (pt *piTerm) tmux(args ...string) ([]byte, error) {
	return exec.Command("tmux", append([]string{"-S", pt.socket}, args...)...).CombinedOutput()
}

// firstScreen starts shim with exactly env in a new 160x45 pane and
// returns the time until Pi's first screen is up. Then it quits Pi with
// ctrl+d and waits until the pane's command has ended (killing the
// session after 10 s), so the next start finds no process of this one.
func (pt *piTerm) firstScreen(env []string, shim string) time.Duration {
	pt.b.Helper()
	pt.n++
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	done := filepath.Join(pt.dir, fmt.Sprintf("done%d", pt.n))
	words := []string{"env", "-i", "TERM=xterm-256color"}
	for _, kv := range append(slices.Clone(env), shim) {
		words = append(words, quote(kv))
	}
	script := strings.Join(words, " ") + "; echo $? >" + quote(done)
	session := fmt.Sprintf("pi%d", pt.n)
	start := time.Now()
	if out, err := pt.tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "45", script); err != nil {
		pt.b.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	var screen string
	var up time.Duration
	for deadline := start.Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, err := pt.tmux("capture-pane", "-p", "-t", session)
		if err != nil {
			pt.b.Fatalf("tmux capture-pane: %v\n%s", err, out)
		}
		screen = string(out)
		if strings.Contains(screen, "v1.6.0") && strings.Contains(screen, "ctrl+c") {
			up = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			pt.b.Fatalf("Pi's first screen did not appear in 60 s:\n%s", screen)
		}
	}
	pt.tmux("send-keys", "-t", session, "C-d")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(deadline) {
			out, _ := pt.tmux("capture-pane", "-p", "-t", session)
			pt.b.Fatalf("Pi did not quit on ctrl+d in 10 s:\n%s", out)
		}
	}
	pt.tmux("kill-session", "-t", session)
	return up
}
