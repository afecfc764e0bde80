package main

import (
	"os"
	"path/filepath"
	"testing"

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
//     checked by fingerprint) with the V8 compile cache
//     (<state>/pi/cache/compile, from the second start on) against
//     NODE_DISABLE_COMPILE_CACHE=1: warm-cache-ms, warm-nocache-ms.
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
	ibTime(b, shims["tools"], startEnv(warmHome), "", true, "--smoke") // creates the state directory
	ibTime(b, shims["tools"], startEnv(warmHome), "", true, "--smoke") // fills the compile cache
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
			var kv []string
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
