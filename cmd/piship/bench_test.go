package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkBuildPi times three builds of the real Pi example, each as a
// separate piship process, in both payload forms:
//
//   - cold: empty runtime and bundle caches, fresh output directory (npm ci
//     runs, with npm's own download cache as the machine has it);
//   - warm: the caches the cold build filled, fresh output directory;
//   - unchanged: the same build again into the same output directory
//     (served from the build stamp).
//
// It reports the times and the ratios the build is held to: warm at least
// 3x faster than cold, unchanged at most 3% of cold. Run it once:
//
//	go test -run '^$' -bench BuildPi -benchtime 1x ./cmd/piship/
func BenchmarkBuildPi(b *testing.B) {
	for _, bundled := range []bool{true, false} {
		name := map[bool]string{true: "bundled", false: "unbundled"}[bundled]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				dir := copyDist(b, "pi-0.73")
				env := map[string]string{"PISHIP_CACHE_HOME": filepath.Join(b.TempDir(), "cache"), "PISHIP_PROGRESS": "0"}
				if !bundled {
					setBundle(b, env, dir, false)
				}
				cold := timeBuild(b, env, dir, filepath.Join(b.TempDir(), "cold"))
				warmOut := filepath.Join(b.TempDir(), "warm")
				warm := timeBuild(b, env, dir, warmOut)
				unchanged := timeBuild(b, env, dir, warmOut)
				b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
				b.ReportMetric(float64(warm.Milliseconds()), "warm-ms")
				b.ReportMetric(float64(unchanged.Milliseconds()), "unchanged-ms")
				b.ReportMetric(cold.Seconds()/warm.Seconds(), "cold/warm")
				b.ReportMetric(100*unchanged.Seconds()/cold.Seconds(), "unchanged-%-of-cold")
			}
		})
	}
}

// timeBuild runs `piship build` as a child process and returns its wall time.
func timeBuild(b *testing.B, env map[string]string, dir, out string) time.Duration {
	b.Helper()
	return timeCommand(b, env, "build", dir, "--out", out)
}

// BenchmarkRelease times a cold release (PISHIP_RELEASE_NO_CACHE=1: npm ci
// and the bundler run again) against a warm one (runtime and bundle caches
// filled by an untimed first release) of each example, each a separate
// piship process. Target for pi: warm at most 0.25x cold.
//
//	go test -run '^$' -bench Release -benchtime 1x ./cmd/piship/
func BenchmarkRelease(b *testing.B) {
	for _, example := range []string{"hello", "pi-0.73"} {
		b.Run(example, func(b *testing.B) {
			for b.Loop() {
				dir := copyDist(b, example)
				env := map[string]string{"PISHIP_CACHE_HOME": filepath.Join(b.TempDir(), "cache"), "PISHIP_PROGRESS": "0"}
				timeCommand(b, env, "release", dir) // fills the caches
				cold := timeCommand(b, mergeEnv(env, "PISHIP_RELEASE_NO_CACHE", "1"), "release", dir)
				warm := timeCommand(b, env, "release", dir)
				b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
				b.ReportMetric(float64(warm.Milliseconds()), "warm-ms")
				b.ReportMetric(warm.Seconds()/cold.Seconds(), "warm/cold")
			}
		})
	}
}

func mergeEnv(env map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for kk, vv := range env {
		out[kk] = vv
	}
	return out
}

// timeCommand runs a piship command as a child process of the real binary
// (as make build builds it, so a release ships it as users' releases do)
// and returns its wall time.
func timeCommand(b *testing.B, env map[string]string, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(realBinaries(b), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", args, err, out)
	}
	return d
}
