package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// BenchmarkUpdatePi times the TUF-verified upgrade of the Pi 0.73 example
// (the flagship before Pi 1.6), in the bundled and the unbundled
// (stripped) forms: two releases of the same runtime (distribution
// versions 0.73.1 and 0.73.2, so the payloads differ in their lock and
// metadata) in a TUF repository made with a fresh key and served from a
// directory, 0.73.1 installed (untimed) into fresh homes. Timed: `piship
// update pi --from DIR --check` (root, timestamp, snapshot and targets
// fetched and verified, the release picked, nothing written), then, in
// rotating order, `piship update pi --from DIR` (the same walk, the
// archive streamed into .downloads with its signed length and SHA-256
// checked, one-pass extraction, the receipt commit under the launch gate,
// the trusted store swapped in, the reclaim), a fresh `piship install` of
// the same 0.73.2 archive (update / install is what the repository and
// the download add) and the same update with PISHIP_STORE=hardlink,
// 0.73.1 having been installed with the store too (update-store / update:
// what linking the unchanged files saves). The store is off in the others.
//
//	go test -run '^$' -bench UpdatePi -benchtime 3x ./cmd/piship/
//
// PISHIP_BENCH_SETTLE=DURATION waits that long after the releases (see
// BenchmarkInstallPi).
func BenchmarkUpdatePi(b *testing.B) {
	piship := realBinaries(b)
	cache := filepath.Join(b.TempDir(), "cache")
	for _, form := range []string{"bundled", "unbundled"} {
		b.Run(form, func(b *testing.B) {
			root := b.TempDir()
			env := ibEnv(map[string]string{"PISHIP_CACHE_HOME": cache})
			key := filepath.Join(root, "release.pem")
			ibRun(b, piship, env, "keygen", key, "--id", "bench")
			chanDir := filepath.Join(root, "channel")
			out := ibRun(b, piship, env, "repo", "init", chanDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
			pin := "sha256:" + regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)[1]
			archives := map[string]string{}
			for _, v := range []string{"0.73.1", "0.73.2"} {
				dir := copyDist(b, "pi-0.73")
				p := filepath.Join(dir, "distribution.hcl")
				hcl, _ := os.ReadFile(p)
				s := fixture.WithUpdates(string(hcl), v, "https://updates.example.invalid/pi/", pin)
				if form == "unbundled" {
					s = regexp.MustCompile(`bundle\s*=\s*true`).ReplaceAllString(s, "bundle = false")
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					b.Fatal(err)
				}
				ibRun(b, piship, env, "lock", dir)
				ibRun(b, piship, env, "release", dir)
				archives[v] = ibArchive(b, dir)
			}
			ibRun(b, piship, env, "repo", "add", chanDir, archives["0.73.1"], archives["0.73.2"], "--key", key)
			homes := func(dir string) map[string]string { return ibHomes(cache, dir) }
			work := b.TempDir()
			// PISHIP_BENCH_SETTLE as in BenchmarkInstallPi: the releases
			// above deleted thousands of files.
			if settle, err := time.ParseDuration(os.Getenv("PISHIP_BENCH_SETTLE")); err == nil && settle > 0 {
				syscall.Sync()
				time.Sleep(settle)
			}
			var updates, stored, installs, checks []float64
			n := 0
			for b.Loop() {
				b.StopTimer()
				up := filepath.Join(work, fmt.Sprint("update-", n))
				ibRun(b, piship, ibEnv(homes(up), "PISHIP_STORE", "off"), "install", archives["0.73.1"])
				// The same with the store on: 0.73.1's install keeps its
				// node_modules files, the update links the unchanged ones.
				upStore := filepath.Join(work, fmt.Sprint("update-store-", n))
				storeEnv := ibEnv(homes(upStore), "PISHIP_STORE", "hardlink", "PISHIP_STORE_HOME", filepath.Join(upStore, "store"))
				ibRun(b, piship, storeEnv, "install", archives["0.73.1"])
				syscall.Sync()
				b.StartTimer()
				// --check first (it changes nothing): the metadata walk and
				// the pick, no download.
				d := ibTime(b, piship, ibEnv(homes(up), "PISHIP_STORE", "off"), "", true, "update", "pi", "--from", chanDir, "--check")
				checks = append(checks, float64(d.Microseconds())/1000)
				runs := []func(){
					func() {
						d := ibTime(b, piship, ibEnv(homes(up), "PISHIP_STORE", "off"), "", true, "update", "pi", "--from", chanDir)
						updates = append(updates, float64(d.Microseconds())/1000)
					},
					func() {
						d := ibTime(b, piship, storeEnv, "", true, "update", "pi", "--from", chanDir)
						stored = append(stored, float64(d.Microseconds())/1000)
					},
					func() {
						d := ibTime(b, piship, ibEnv(homes(filepath.Join(work, fmt.Sprint("install-", n))), "PISHIP_STORE", "off"), "", true, "install", archives["0.73.2"])
						installs = append(installs, float64(d.Microseconds())/1000)
					},
				}
				for k := range runs {
					runs[(n+k)%len(runs)]()
				}
				n++
			}
			b.StopTimer()
			check := ibRun(b, piship, ibEnv(homes(filepath.Join(work, "update-0"))), "doctor", "pi")
			if !strings.Contains(check, "active 0.73.2, previous 0.73.1") {
				b.Fatalf("after the update:\n%s", check)
			}
			var ratio, storeRatio []float64
			for i := range updates {
				ratio = append(ratio, updates[i]/installs[i])
				storeRatio = append(storeRatio, stored[i]/updates[i])
			}
			b.Logf("%s: update --check ms %v, update ms %v, update with the store %v, install ms %v", form, checks, updates, stored, installs)
			b.ReportMetric(ibMedian(checks), "check-ms")
			b.ReportMetric(ibMedian(updates), "update-ms")
			b.ReportMetric(ibMedian(stored), "update-store-ms")
			b.ReportMetric(ibMedian(installs), "install-ms")
			b.ReportMetric(ibMedian(ratio), "update/install")
			b.ReportMetric(ibMedian(storeRatio), "update-store/update") // budget <= 0.85
		})
	}
}
