package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/home/receipt"
)

// BenchmarkInstallPi times, side by side on the same release archive of
// the real Pi example, in three payload forms (bundled; unbundled and
// stripped; unbundled and unstripped, the whole npm tree of ~19.6k files):
//
//   - piship: `piship install ARCHIVE` into fresh homes, a child process of
//     the real binary (process start, archive and per-file hashing, the
//     inventory and release.json checks, receipt and shim included), with
//     the content-addressed store off: every file written;
//   - store-fresh: the same with PISHIP_STORE=hardlink and an empty store
//     (every node_modules file written and linked into the store; a file
//     whose bytes were already kept by this install is linked);
//   - store-warm: the same with the store an untimed install of the same
//     archive filled (a second installation of the release, or an update
//     that keeps these files): node_modules files of up to 1 MiB are linked;
//   - tar+sha256sum: `tar -xzf ARCHIVE -C DIR` then `sha256sum -c` of every
//     payload file (the list made once from payload/metadata/inventory.json),
//     the usual extract-then-verify;
//   - floor: the same directories and files written from memory by 8
//     goroutines (no decompression, no hashing; open, write, close per
//     file): what creating these files costs on this file system;
//   - piship-dir: `piship install RELEASE_DIR`, what install.sh runs: the
//     release directory beside the archive copied and hashed (its files
//     in the page cache, as after a download and unpacking), store off.
//
// The releases are made once per form (untimed) with a shared runtime
// cache. Each iteration runs the six in a rotating order, each after a
// sync and into a fresh directory; nothing is deleted until the end. A
// deletion makes later creates slower on ext4 without a journal (this
// machine's): for 60 s after an inode is deleted (360 s while its inode
// table block is dirty) the inode allocator skips it, reading it each time,
// so a create after a large deletion costs ~10x one on a settled file
// system (see docs/performance.md). The release itself deletes ~10,000
// files (prune and strip); PISHIP_BENCH_SETTLE=DURATION (e.g. 70s) waits
// that long after a sync before the timed runs. Targets: piship <= 1.10x
// the floor and <= 0.5x tar+sha256sum; for shipping the store mode,
// store-warm <= 0.70x piship and store-fresh <= 1.15x piship.
//
//	go test -run '^$' -bench InstallPi -benchtime 1x ./cmd/piship/
//
// With PISHIP_BENCH_CPUPROFILE=DIR it also writes DIR/install-<form>.pprof,
// a CPU profile of one install run in-process (runMain, as `piship install`
// runs it, without the process start), for `go tool pprof`.
func BenchmarkInstallPi(b *testing.B) {
	piship := realBinaries(b)
	cache := filepath.Join(b.TempDir(), "cache")
	for _, form := range []string{"bundled", "unbundled", "unstripped"} {
		b.Run(form, func(b *testing.B) {
			dir := copyDist(b, "pi-0.73")
			if form == "unstripped" {
				// The whole runtime as npm installs it (~19.6k files): the
				// size the figures name.
				p := filepath.Join(dir, "distribution.hcl")
				hcl, _ := os.ReadFile(p)
				os.WriteFile(p, regexp.MustCompile(`strip\s*=\s*true`).ReplaceAll(hcl, []byte("strip = false")), 0o644)
			}
			if form != "bundled" {
				setBundle(b, map[string]string{"PISHIP_CACHE_HOME": cache, "PISHIP_PROGRESS": "0"}, dir, false)
			}
			ibRun(b, piship, ibEnv(map[string]string{"PISHIP_CACHE_HOME": cache}), "release", dir)
			arc := ibArchive(b, dir)
			tree := ibLoadTree(b, arc)
			sums := ibChecksumList(b, tree)
			fi, _ := os.Stat(arc)
			b.Logf("%s: %s, %d bytes; %d files, %d directories, %d content bytes; %d payload files checked by sha256sum",
				form, filepath.Base(arc), fi.Size(), len(tree.files), len(tree.dirs), tree.bytes, tree.payloadFiles)

			work := b.TempDir()
			homes := func(root string) map[string]string { return ibHomes(cache, root) }
			// One untimed install with the stage timings, also a warm-up of
			// the page cache for the archive and the binaries.
			warm := filepath.Join(work, "warm")
			out := ibRun(b, piship, ibEnv(homes(warm), "PISHIP_DEBUG_TIMING", "1"), "install", arc)
			b.Logf("%s: piship install with PISHIP_DEBUG_TIMING=1:\n%s", form, strings.TrimSpace(out))
			if settle, err := time.ParseDuration(os.Getenv("PISHIP_BENCH_SETTLE")); err == nil && settle > 0 {
				syscall.Sync()
				time.Sleep(settle)
			}

			// The store kept by the untimed install above: what a second
			// installation of the same release, or an update that keeps
			// these files, links from.
			warmStore := filepath.Join(cache, "store")
			ibRun(b, piship, ibEnv(homes(filepath.Join(work, "fill")), "PISHIP_STORE", "hardlink", "PISHIP_STORE_HOME", warmStore), "install", arc)
			methods := []struct {
				name string
				run  func(dest string) time.Duration
			}{
				{"piship", func(dest string) time.Duration {
					return ibTime(b, piship, ibEnv(homes(dest), "PISHIP_STORE", "off"), "", true, "install", arc)
				}},
				{"store-fresh", func(dest string) time.Duration {
					return ibTime(b, piship, ibEnv(homes(dest), "PISHIP_STORE", "hardlink", "PISHIP_STORE_HOME", filepath.Join(dest, "store")), "", true, "install", arc)
				}},
				{"store-warm", func(dest string) time.Duration {
					return ibTime(b, piship, ibEnv(homes(dest), "PISHIP_STORE", "hardlink", "PISHIP_STORE_HOME", warmStore), "", true, "install", arc)
				}},
				{"tar+sha256sum", func(dest string) time.Duration {
					if err := os.Mkdir(dest, 0o755); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					ibTime(b, "tar", nil, "", true, "-xzf", arc, "-C", dest)
					ibTime(b, "sha256sum", nil, dest, true, "-c", "--quiet", "--strict", sums)
					return time.Since(start)
				}},
				{"floor", func(dest string) time.Duration { return ibFloor(b, tree, dest) }},
				{"piship-dir", func(dest string) time.Duration {
					return ibTime(b, piship, ibEnv(homes(dest), "PISHIP_STORE", "off"), "", true, "install", strings.TrimSuffix(arc, ".tar.zst"))
				}},
			}
			samples := make([][]float64, len(methods))
			n := 0
			for b.Loop() {
				for k := range methods {
					m := (n + k) % len(methods)
					b.StopTimer()
					dest := filepath.Join(work, fmt.Sprintf("%d-%d", n, m))
					syscall.Sync() // start each from settled writeback
					b.StartTimer()
					d := methods[m].run(dest)
					samples[m] = append(samples[m], float64(d.Microseconds())/1000)
				}
				n++
			}
			for m, ms := range samples {
				b.Logf("%s: %s ms: %v", form, methods[m].name, ms)
			}
			const direct, fresh, warmed, tarSum, floor, fromDir = 0, 1, 2, 3, 4, 5
			for m, name := range []string{"piship", "store-fresh", "store-warm", "tar+sha256sum", "floor", "piship-dir"} {
				b.ReportMetric(ibMedian(samples[m]), name+"-ms")
			}
			// The file system's state drifts between iterations (see
			// above); the methods of one iteration run back to back, so
			// the median of per-iteration ratios is the steadier figure.
			paired := func(a, over int, metric string) {
				var r []float64
				for i := range samples[a] {
					r = append(r, samples[a][i]/samples[over][i])
				}
				b.Logf("%s: per-iteration %s %.2f", form, metric, r)
				b.ReportMetric(ibMedian(r), "paired-"+metric)
			}
			paired(direct, floor, "piship/floor")
			paired(direct, tarSum, "piship/tar+sha256sum")
			paired(warmed, floor, "store-warm/floor")
			paired(warmed, tarSum, "store-warm/tar+sha256sum")
			paired(warmed, direct, "store-warm/piship") // budget <= 0.70
			paired(fresh, direct, "store-fresh/piship") // budget <= 1.15
			paired(fresh, floor, "store-fresh/floor")
			paired(fromDir, floor, "piship-dir/floor")
			paired(fromDir, tarSum, "piship-dir/tar+sha256sum")

			if pdir := os.Getenv("PISHIP_BENCH_CPUPROFILE"); pdir != "" {
				ibProfileInstall(b, filepath.Join(pdir, "install-"+form+".pprof"), homes(filepath.Join(work, "profile")), arc)
			}
		})
	}
}

// BenchmarkLaunchOverhead installs hello and times, interleaved, 30 rounds
// of:
//
//   - direct: `node <payload entry> --version`;
//   - shim: `<bin-home>/hello --version` (sh -> piship-launch -> node);
//   - launcher: `piship-launch hello -- --version` (the shim without sh);
//   - bogus: `piship-launch no-such-app` (fails at the receipt: the
//     launcher's own process start).
//
// It reports the medians and the median of the per-round differences
// shim - direct (target: under 5 ms). PISHIP_BENCH_LAUNCH_ROUNDS=N runs N
// rounds instead of 30. It loops itself; run it once:
//
//	go test -run '^$' -bench LaunchOverhead -benchtime 1x ./cmd/piship/
func BenchmarkLaunchOverhead(b *testing.B) { launchOverhead(b, false) }

// BenchmarkLaunchOverheadPinnedNode is BenchmarkLaunchOverhead for a
// release that ships its Node (a node block): hello pinning a stand-in,
// the Node 22 fixture (PISHIP_NODE22, ~120 MB; else the node on PATH)
// seeded into the cache. direct runs the payload's node on the entry;
// the shim's starts check it by fingerprint (the first start hashed it).
// Its shim - direct against BenchmarkLaunchOverhead's is what the pinned
// Node adds to a start:
//
//	go test -run '^$' -bench 'LaunchOverhead' -benchtime 1x ./cmd/piship/
func BenchmarkLaunchOverheadPinnedNode(b *testing.B) { launchOverhead(b, true) }

func launchOverhead(b *testing.B, pinned bool) {
	piship := realBinaries(b)
	launcher := filepath.Join(filepath.Dir(piship), "piship-launch")
	root := b.TempDir()
	vars := ibHomes(filepath.Join(root, "cache"), root)
	env := ibEnv(vars)
	dir := copyDist(b, "hello")
	if pinned {
		standIn := os.Getenv("PISHIP_NODE22")
		if standIn == "" {
			var err error
			if standIn, err = exec.LookPath("node"); err != nil {
				b.Fatal(err)
			}
		}
		if err := fixture.SetNode(dir, vars["PISHIP_CACHE_HOME"], standIn); err != nil {
			b.Fatal(err)
		}
		ibRun(b, piship, env, "lock", dir)
	}
	ibRun(b, piship, env, "release", dir)
	ibRun(b, piship, env, "install", ibArchive(b, dir))
	rc, err := receipt.Read(vars["PISHIP_INSTALL_HOME"], "hello")
	if err != nil {
		b.Fatal(err)
	}
	rel := rc.Find(rc.Active)
	if rel == nil {
		b.Fatalf("no active release in the receipt: %+v", rc)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		b.Fatal(err)
	}
	if pinned {
		if rel.Node == nil {
			b.Fatalf("the release ships no Node: %+v", rel)
		}
		node = filepath.Join(rel.Payload, filepath.FromSlash(rel.Node.Path))
	}
	entry := filepath.Join(rel.Payload, filepath.FromSlash(rel.Entry))
	shim := filepath.Join(vars["PISHIP_BIN_HOME"], rel.Command)

	type way struct {
		name string
		exe  string
		args []string
		ok   bool
	}
	ways := []way{
		{"direct", node, []string{entry, "--version"}, true},
		{"shim", shim, []string{"--version"}, true},
		{"launcher", launcher, []string{"hello", "--", "--version"}, true},
		{"bogus", launcher, []string{"no-such-app", "--version"}, false},
	}
	// The same answer both ways, and warm caches.
	want := strings.TrimSpace(ibRun(b, node, env, entry, "--version"))
	if got := strings.TrimSpace(ibRun(b, shim, env, "--version")); got != want || want == "" {
		b.Fatalf("shim says %q, node directly %q", got, want)
	}
	out := ibRun(b, shim, ibEnv(vars, "PISHIP_DEBUG_TIMING", "1"), "--version")
	b.Logf("hello --version through the shim with PISHIP_DEBUG_TIMING=1:\n%s", strings.TrimSpace(out))

	rounds := 30
	if v, err := strconv.Atoi(os.Getenv("PISHIP_BENCH_LAUNCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	samples := make([][]float64, len(ways))
	var diffs []float64
	for b.Loop() {
		for r := range rounds {
			var round [4]float64
			for k := range ways {
				i := (r + k) % len(ways)
				w := ways[i]
				round[i] = float64(ibTime(b, w.exe, env, "", w.ok, w.args...).Microseconds()) / 1000
				samples[i] = append(samples[i], round[i])
			}
			diffs = append(diffs, round[1]-round[0])
		}
	}
	for i, w := range ways {
		b.Logf("%-8s min %6.1f  p25 %6.1f  median %6.1f  p75 %6.1f ms (%d runs)", w.name,
			slices.Min(samples[i]), ibQuantile(samples[i], 0.25), ibMedian(samples[i]), ibQuantile(samples[i], 0.75), len(samples[i]))
		b.ReportMetric(ibMedian(samples[i]), w.name+"-ms")
	}
	b.Logf("shim - direct, per round: p25 %.1f  median %.1f  p75 %.1f ms", ibQuantile(diffs, 0.25), ibMedian(diffs), ibQuantile(diffs, 0.75))
	b.ReportMetric(ibMedian(diffs), "shim-overhead-ms")
}

// ibEnv is a clean child environment: the test process's own, without any
// PISHIP_* variable, plus vars and the extra key-value pairs.
func ibEnv(vars map[string]string, kv ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PISHIP_") {
			env = append(env, e)
		}
	}
	env = append(env, "PISHIP_PROGRESS=0")
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env = append(env, kv[i]+"="+kv[i+1])
	}
	return env
}

// ibRun runs exe and fails the benchmark if it fails; it returns the
// combined output.
// ibHomes is the environment of an installation under root: install, bin
// and state homes, and the given cache home.
func ibHomes(cache, root string) map[string]string {
	return map[string]string{
		"PISHIP_CACHE_HOME":   cache,
		"PISHIP_INSTALL_HOME": filepath.Join(root, "install"),
		"PISHIP_BIN_HOME":     filepath.Join(root, "bin"),
		"PISHIP_STATE_HOME":   filepath.Join(root, "state"),
	}
}

func ibRun(b *testing.B, exe string, env []string, args ...string) string {
	b.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(exe), args, err, out)
	}
	return string(out)
}

// ibTime runs exe (in dir, when set) with its output discarded and returns
// its wall time; mustSucceed fails the benchmark on a non-zero exit.
func ibTime(b *testing.B, exe string, env []string, dir string, mustSucceed bool, args ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Dir = env, dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if mustSucceed && err != nil {
		b.Fatalf("%s %v: %v\n%s", filepath.Base(exe), args, err, stderr.String())
	}
	if !mustSucceed && err == nil {
		b.Fatalf("%s %v succeeded; it should fail", filepath.Base(exe), args)
	}
	return d
}

// ibArchive returns the single release archive under dir/dist/releases.
func ibArchive(b *testing.B, dir string) string {
	b.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "dist", "releases", "*.tar.zst"))
	if len(m) != 1 {
		b.Fatalf("expected one release archive in %s, found %v", dir, m)
	}
	return m[0]
}

type ibFile struct {
	rel  string
	data []byte
	perm os.FileMode
}

// ibTree is a release archive's content held in memory.
type ibTree struct {
	root         string   // an untimed extraction of the archive
	dirs         []string // slash paths, parents before children
	files        []ibFile
	bytes        int64
	payloadFiles int
}

// ibLoadTree extracts arc once (untimed) and reads every directory and
// file of it into memory.
func ibLoadTree(b *testing.B, arc string) *ibTree {
	b.Helper()
	f, err := os.Open(arc)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	t := &ibTree{root: filepath.Join(b.TempDir(), "x")}
	if _, err := archive.Extract(context.Background(), f, t.root, archive.Limits{}); err != nil {
		b.Fatal(err)
	}
	err = filepath.WalkDir(t.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == t.root {
			return err
		}
		rel, _ := filepath.Rel(t.root, p)
		if d.IsDir() {
			t.dirs = append(t.dirs, filepath.ToSlash(rel))
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t.files = append(t.files, ibFile{filepath.ToSlash(rel), data, info.Mode().Perm()})
		t.bytes += int64(len(data))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return t
}

// ibChecksumList writes, once, a sha256sum list of every payload file from
// payload/metadata/inventory.json, paths relative to the extraction
// directory.
func ibChecksumList(b *testing.B, t *ibTree) string {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(t.root, "payload", "metadata", "inventory.json"))
	if err != nil {
		b.Fatal(err)
	}
	var inv map[string]string
	if err := json.Unmarshal(raw, &inv); err != nil {
		b.Fatal(err)
	}
	lines := make([]string, 0, len(inv))
	for p, sum := range inv {
		lines = append(lines, sum+"  payload/"+p+"\n")
	}
	sort.Strings(lines)
	t.payloadFiles = len(lines)
	list := filepath.Join(b.TempDir(), "payload.sha256")
	if err := os.WriteFile(list, []byte(strings.Join(lines, "")), 0o644); err != nil {
		b.Fatal(err)
	}
	return list
}

// ibFloor writes t's directories (in order) and then its files from memory
// with 8 goroutines into dest, which must not exist; no hashing, no flush.
func ibFloor(b *testing.B, t *ibTree, dest string) time.Duration {
	b.Helper()
	start := time.Now()
	if err := os.Mkdir(dest, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, d := range t.dirs {
		if err := os.Mkdir(filepath.Join(dest, filepath.FromSlash(d)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// Batches as the extractor makes them: the files of one directory
	// that follow each other, up to 64 files or 256 KiB, on one writer.
	jobs := make(chan []ibFile, 8)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
	)
	for range 8 {
		wg.Go(func() {
			for batch := range jobs {
				for _, f := range batch {
					if err := ibWriteFile(filepath.Join(dest, filepath.FromSlash(f.rel)), f.data, f.perm); err != nil {
						mu.Lock()
						ferr = err
						mu.Unlock()
					}
				}
			}
		})
	}
	for i := 0; i < len(t.files); {
		j, n := i, 0
		dir := path.Dir(t.files[i].rel)
		for j < len(t.files) && j-i < 64 && path.Dir(t.files[j].rel) == dir && (j == i || n+len(t.files[j].data) <= 256<<10) {
			n += len(t.files[j].data)
			j++
		}
		jobs <- t.files[i:j]
		i = j
	}
	close(jobs)
	wg.Wait()
	d := time.Since(start)
	if ferr != nil {
		b.Fatal(ferr)
	}
	return d
}

// ibWriteFile creates and writes one file with the three system calls it
// takes (open, write, close): os.OpenFile adds four fcntl calls and an
// epoll_ctl trying to make a regular file pollable, which an extractor
// can skip too, so the floor skips them.
func ibWriteFile(path string, data []byte, perm os.FileMode) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, uint32(perm))
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err != nil {
			syscall.Close(fd)
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		data = data[n:]
	}
	return syscall.Close(fd)
}

// ibProfileInstall runs one install in-process under a CPU profile, with
// the GC setting main uses.
func ibProfileInstall(b *testing.B, out string, vars map[string]string, arc string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	old := debug.SetGCPercent(400)
	defer debug.SetGCPercent(old)
	syscall.Sync()
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	code, _, stderr := piship(b, mergeEnv(vars, "PISHIP_PROGRESS", "0"), "install", arc)
	d := time.Since(start)
	pprof.StopCPUProfile()
	if code != exitOK {
		b.Fatalf("install: exit %d\n%s", code, stderr)
	}
	b.Logf("CPU profile of one in-process install (%v) written to %s", d.Round(time.Millisecond), out)
}

// ibMedian returns the median of xs (0 for none).
func ibMedian(xs []float64) float64 { return ibQuantile(xs, 0.5) }

// ibQuantile returns the q-quantile of xs, interpolating between the
// nearest ranks (0 for none).
func ibQuantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
