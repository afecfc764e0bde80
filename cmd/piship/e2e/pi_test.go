package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/footprint/report"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release/releasejson"
)

// The real Pi of the 0.73 series (@mariozechner/pi-coding-agent@0.73.1,
// from the npm registry, on Node 20)
// builds bundled and unbundled, both payloads answer --version and --help
// exactly alike, and its release verifies.
func TestPiBuildAndRelease(t *testing.T) {
	// The run's shared cache: the npm ci of Pi's runtime happens once per
	// run, here or in TestPiInstallUpdateRollback, whichever runs first.
	env := map[string]string{"PISHIP_CACHE_HOME": sharedCache(t), "PISHIP_PROGRESS": "0"}
	type form struct {
		name        string
		files       int
		version     string
		help        string
		summaryLine string
	}
	var forms []form
	for _, bundled := range []bool{false, true} {
		dir := copyDist(t, "pi-0.73")
		setBundle(t, env, dir, bundled)
		summary := mustBuild(t, env, dir)
		final := filepath.Join(dir, "dist", "pi")
		if err := payload.Verify(context.Background(), final); err != nil {
			t.Fatal(err)
		}
		files, err := payload.Walk(final)
		if err != nil {
			t.Fatal(err)
		}
		f := form{name: map[bool]string{true: "bundled", false: "unbundled"}[bundled], files: len(files), summaryLine: summary}
		f.version = strings.TrimSpace(runPayload(t, final, "pi", "--version"))
		f.help = runPayload(t, final, "pi", "--help")
		t.Logf("%s: %s", f.name, summary)
		forms = append(forms, f)
	}
	for _, f := range forms {
		if f.version != "0.73.1" {
			t.Errorf("%s pi --version printed %q, want 0.73.1", f.name, f.version)
		}
	}
	if forms[0].help != forms[1].help {
		t.Errorf("pi --help differs:\n--- unbundled\n%s\n--- bundled\n%s", forms[0].help, forms[1].help)
	}
	if forms[1].files >= 100 {
		t.Errorf("bundled, stripped Pi payload has %d files, want under 100", forms[1].files)
	}
	if forms[0].files <= forms[1].files*10 {
		t.Errorf("unbundled payload has %d files, bundled %d: bundling did not reduce the file count", forms[0].files, forms[1].files)
	}

	// The release of the example (bundled) with the same runtime cache:
	// qualified with this machine's registry verdicts recorded as
	// unavailable, and accepted by verify-release.
	dir := copyDist(t, "pi-0.73")
	stderr := mustRelease(t, env, dir)
	t.Log(lastLine(stderr))
	archive := filepath.Join(dir, "dist", "releases", "pi-0.73.1-linux-x64.tar.zst")
	code, stdout, vstderr := cli(t, env, "verify-release", archive)
	if code != exitOK {
		t.Fatalf("verify-release: %d\n%s%s", code, stdout, vstderr)
	}
	// The release holds to the example's checked-in budgets.hcl.
	if code, stdout, berr := cli(t, env, "budgets", "check", dir); code != exitOK || !strings.Contains(stdout+berr, "linux-x64") {
		t.Fatalf("budgets check of the example: exit %d\n%s%s", code, stdout, berr)
	}
	var rel struct {
		Signatures struct{ Verdict string }
		Tests      []struct{ Name, Result string }
	}
	if err := readJSONFile(filepath.Join(dir, "dist", "releases", "pi-0.73.1-linux-x64", "release.json"), &rel); err != nil {
		t.Fatal(err)
	}
	if len(rel.Tests) != 2 || rel.Signatures.Verdict == "" {
		t.Fatalf("release.json %+v", rel)
	}
}

// node22 returns the Node 22 that Pi 1.6 needs (PISHIP_NODE22, set by the
// Makefile after `make node22-bin`); without it the test fails, saying so.
func node22(t *testing.T) string {
	t.Helper()
	node := os.Getenv("PISHIP_NODE22")
	if node == "" {
		t.Fatal("PISHIP_NODE22 is not set: run `make node22-bin` and set PISHIP_NODE22 to the node it prints (make test-e2e does both)")
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "v22.") {
		t.Fatalf("PISHIP_NODE22=%s is not a Node 22 (%q, %v): run `make node22-bin`", node, out, err)
	}
	return node
}

// The current Pi (@earendil-works/pi-coding-agent@1.6.0, Node >= 22.19)
// ships its own esbuild bundle, which loads sibling files at run time: with
// bundle = true and strip the bundler keeps that bundle as upstream built
// it (and says so in metadata/bundle.json), and the release -> install ->
// launch through the command shim, with neither node nor npm on PATH (the
// payload ships its Node: here a stand-in for the node block's pin, the
// Node 22 fixture seeded into the cache), prints the version from a
// payload of under 150 files.
func TestPiUpstreamBundleOnNode22(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	env := node22Env(t, root)
	dir, hits := piWithTestSearchTools(t, env)
	t0 := time.Now()
	t.Log(lastLine(mustRelease(t, env, dir)))
	built := time.Since(t0)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the release fetched %d search tool archives; the seeded cache holds both", n)
	}
	rel := filepath.Join(dir, "dist", "releases", "pi-1.6.0-linux-x64")
	var m bundle.Manifest
	if err := readJSONFile(filepath.Join(rel, "payload", "metadata", "bundle.json"), &m); err != nil {
		// The layout of a release directory: find the payload's report.
		matches, _ := filepath.Glob(filepath.Join(dir, "dist", "*", "metadata", "bundle.json"))
		if len(matches) == 0 || readJSONFile(matches[0], &m) != nil {
			t.Fatalf("no bundle report: %v", err)
		}
	}
	if m.Upstream == nil || !strings.Contains(m.Upstream.Reason, "cli-runtime.js") || len(m.Chunks) != 0 {
		t.Fatalf("bundle report: upstream %+v, %d chunks; want the upstream bundle kept (cli.js loads cli-runtime.js)", m.Upstream, len(m.Chunks))
	}
	code, stdout, stderr := cli(t, env, "install", rel+".tar.zst")
	if code != exitOK {
		t.Fatalf("install: %d\n%s%s", code, stdout, stderr)
	}
	payloadDir := filepath.Join(root, "install", "apps", "pi", "1.6.0", "payload")
	files, err := payload.Walk(payloadDir)
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for _, f := range files {
		if info, err := os.Lstat(filepath.Join(payloadDir, filepath.FromSlash(f.Path))); err == nil {
			bytes += info.Size()
		}
	}
	// The release ships its Node (the stand-in the node block pins): the
	// shim runs with PATH holding neither node nor npm.
	cmd := exec.Command(filepath.Join(bin, "pi"), "--version")
	cmd.Env = []string{"PATH=" + bin, "HOME=" + root, "PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
	t1 := time.Now()
	out, err := cmd.CombinedOutput()
	started := time.Since(t1)
	if err != nil || strings.TrimSpace(string(out)) != "1.6.0" {
		t.Fatalf("pi --version through the shim: %v\n%s", err, out)
	}
	t.Logf("pi 1.6.0, upstream bundle: %d payload files, %d bytes; release %s; --version through the shim %s (%s)",
		len(files), bytes, built.Round(time.Millisecond), started.Round(time.Millisecond), m.Upstream.Reason)
	checkSearchToolsAtLaunch(t, env, root, filepath.Join(bin, "pi"))
	if len(files) >= 150 {
		t.Errorf("the bundled, stripped Pi 1.6 payload has %d files, want under 150", len(files))
	}
}

// node22Env is the environment of a Pi 1.6 test: the shared cache, the
// Node 22 fixture first on PATH, and install, bin and state homes under
// root (bin is root/bin).
func node22Env(t *testing.T, root string) map[string]string {
	node := node22(t)
	return map[string]string{
		"PISHIP_CACHE_HOME": sharedCache(t), "PISHIP_PROGRESS": "0",
		"PATH": filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH"),
		// npm run by this Node takes its global npmrc from beside it (the
		// fixture has none), so the machine's cafile in npm's own npmrc is
		// not read, and nodejs.org's Node trusts its bundled roots only:
		// behind a TLS-intercepting registry mirror every tarball fetch is
		// SELF_SIGNED_CERT_IN_CHAIN. --use-system-ca makes it trust what
		// the system's Node (Debian's, built to use the system store) does.
		"NODE_OPTIONS":        strings.TrimSpace(os.Getenv("NODE_OPTIONS") + " --use-system-ca"),
		"PISHIP_INSTALL_HOME": filepath.Join(root, "install"), "PISHIP_BIN_HOME": filepath.Join(root, "bin"),
		"PISHIP_STATE_HOME": filepath.Join(root, "state"),
	}
}

// releasePiDev releases a copy of the developer Pi and returns the copy
// and its lock. Its search tools are stand-ins in the upstream layout,
// seeded into the cache (the pinned GitHub assets are out of reach here):
// the release fetches nothing for them.
func releasePiDev(t *testing.T, env map[string]string) (string, distribution.Lock) {
	t.Helper()
	dir := copyDist(t, "pi-dev")
	if err := fixture.SetSearchTools(dir, env["PISHIP_CACHE_HOME"], "https://127.0.0.1:9/unreachable", fixture.FlagshipSearchTools()); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	t.Log(lastLine(mustRelease(t, env, dir)))
	var lock distribution.Lock
	if err := readJSONFile(filepath.Join(dir, "piship.lock"), &lock); err != nil {
		t.Fatal(err)
	}
	return dir, lock
}

// The developer Pi (testdata/distributions/pi-dev): Pi 1.6 with five real
// Pi packages from npm vendored under pi-packages/. The release holds
// them, the lock pins each package's package.json and extension entries,
// the release's pi-packages smoke test proves Pi loads every one (its RPC
// command list has commands from each package's directory), and through
// the command shim the launcher hands each package to Pi with -e. An
// extension file changed after the install stops the start with
// INTEGRITY_FAILED naming the package, before node runs.
func TestPiDevPackagesLoadThroughTheShim(t *testing.T) {
	root := t.TempDir()
	env := node22Env(t, root)
	dir, lock := releasePiDev(t, env)
	if len(lock.Packages) != 5 {
		t.Fatalf("pi-dev's lock pins %d Pi packages, want 5", len(lock.Packages))
	}
	// release.json names each package's lock and its audit verdict (this
	// machine's registry mirror has no advisory endpoint: unavailable,
	// with the reason, never passed).
	var rel struct {
		PackageAudits releasejson.PackageAudits
		Tests         []releasejson.TestResult
	}
	if err := readJSONFile(filepath.Join(dir, "dist", "releases", "pi-dev-1.6.0-linux-x64", "release.json"), &rel); err != nil {
		t.Fatal(err)
	}
	if pa := rel.PackageAudits; pa.Locks != 5 || len(pa.Packages) != 5 || releasejson.CheckPackageAudits(pa) != nil {
		t.Fatalf("release.json packageAudits: %+v", pa)
	}
	for i, p := range lock.Packages {
		a := rel.PackageAudits.Packages[i]
		if a.Name != p.Name || a.Lock != p.Dir+"/package-lock.json" || a.LockSHA256 != p.PackageLockSHA256 || a.Verdict == "" {
			t.Errorf("release.json's audit of %s: %+v", p.Name, a)
		}
	}
	t.Logf("package audits: %s (%s)", rel.PackageAudits.Verdict, rel.PackageAudits.Reason)
	// verify-release holds the SBOM and notices to the payload's locks,
	// the vendored packages' included.
	archive := filepath.Join(dir, "dist", "releases", "pi-dev-1.6.0-linux-x64.tar.zst")
	if code, stdout, stderr := cli(t, env, "verify-release", archive); code != exitOK {
		t.Fatalf("verify-release: %d\n%s%s", code, stdout, stderr)
	}
	var sb struct {
		Packages []struct{ Name, PackageFileName string }
	}
	if err := readJSONFile(filepath.Join(dir, "dist", "releases", "pi-dev-1.6.0-linux-x64", "sbom.spdx.json"), &sb); err != nil {
		t.Fatal(err)
	}
	inSBOM := map[string]bool{}
	for _, p := range sb.Packages {
		inSBOM[p.PackageFileName] = true
	}
	for _, p := range lock.Packages {
		if !inSBOM[p.Root] {
			t.Errorf("the SBOM does not list Pi package %s at %s", p.Name, p.Root)
		}
	}
	// The release's own proof that every package loaded.
	if !slices.Contains(rel.Tests, releasejson.TestResult{Name: "pi-packages", Result: "passed"}) {
		t.Errorf("release.json tests %+v: want pi-packages passed", rel.Tests)
	}
	if code, stdout, stderr := cli(t, env, "install", archive); code != exitOK {
		t.Fatalf("install: %d\n%s%s", code, stdout, stderr)
	}
	payloadDir := filepath.Join(root, "install", "apps", "pi-dev", "1.6.0", "payload")
	// The developer Pi bundles the search tools too: no download at its
	// first prompt.
	for name, want := range fixture.FlagshipSearchTools() {
		if got, err := os.ReadFile(filepath.Join(payloadDir, "tools", name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("pi-dev's payload tools/%s: %v", name, err)
		}
	}
	// The footprint report: each closure's decision with the tests it
	// failed (every package ships TypeScript extensions).
	var fp report.Report
	if err := readJSONFile(filepath.Join(payloadDir, "metadata", "pi-package-footprint.json"), &fp); err != nil {
		t.Fatal(err)
	}
	if len(fp.Closures) != 5 || !fp.Sharing {
		t.Fatalf("footprint report: %+v", fp)
	}
	for _, c := range fp.Closures {
		if c.Decision != "vendored" || !slices.Contains(c.Findings, "typescript-closure") {
			t.Errorf("closure of %s: %+v", c.Package, c)
		}
	}
	// At least one dependency shared: typebox 1.1.38 (pi-web-access's
	// project aligns it with the version pi-subagents pins), its real
	// files once under pi-packages/.shared, each place forwarding there.
	if len(fp.Shared) == 0 || fp.FilesSaved <= 0 {
		t.Errorf("footprint report shares nothing: %+v", fp)
	}
	for _, s := range fp.Shared {
		if len(s.Places) < 2 || s.Saved <= 0 {
			t.Errorf("shared %s@%s: %+v", s.Name, s.Version, s)
		}
		if _, err := os.Stat(filepath.Join(payloadDir, filepath.FromSlash(s.Dir), "package.json")); err != nil {
			t.Errorf("shared %s@%s: %v", s.Name, s.Version, err)
		}
	}
	t.Logf("%s", strings.Join(fp.Lines(), "\n"))
	// Doctor shows the same two lines for the installed release.
	if code, stdout, stderr := cli(t, env, "doctor", "pi-dev"); code != exitOK || !strings.Contains(stdout, fp.Lines()[0]) || !strings.Contains(stdout, fp.Lines()[1]) {
		t.Errorf("doctor pi-dev: exit %d, want the footprint lines:\n%s%s", code, stdout, stderr)
	}
	// Through the command shim the launcher hands every package to Pi
	// with -e <its directory> (the release's pi-packages smoke test
	// proved those load in Pi). A stand-in node first on PATH records the
	// arguments: Pi's own start with the five packages compiles their
	// TypeScript (~18 s cold), which the smoke test already paid.
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "node"), []byte("#!/bin/sh\nfor a in \"$@\"; do echo \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := func(path string) (string, string, error) {
		cmd := exec.Command(filepath.Join(root, "bin", "pi-dev"), "--mode", "rpc", "--no-session")
		cmd.Env = []string{"PATH=" + path, "HOME=" + root, "TMPDIR=" + t.TempDir(), "PI_OFFLINE=1",
			"PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, stderr, err := shim(fake + string(os.PathListSeparator) + env["PATH"])
	if err != nil {
		t.Fatalf("pi-dev through the shim: %v\n%s\n%s", err, out, stderr)
	}
	args := strings.Split(strings.TrimSpace(out), "\n")
	var want []string
	want = append(want, filepath.Join(payloadDir, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "bundle", "cli.js"))
	for _, p := range lock.Packages {
		want = append(want, "-e", filepath.Join(payloadDir, filepath.FromSlash(p.Root)))
	}
	want = append(want, "--mode", "rpc", "--no-session")
	if !slices.Equal(args, want) {
		t.Fatalf("the launcher ran node with\n  %q\nwant\n  %q", args, want)
	}

	// A changed extension entry: refused before Pi starts.
	p := lock.Packages[0]
	entry := filepath.Join(payloadDir, filepath.FromSlash(p.Root), filepath.FromSlash(p.Extensions[0].Path))
	os.Chmod(entry, 0o644)
	f, err := os.OpenFile(entry, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n// changed\n")
	f.Close()
	out, stderr, err = shim(fake + string(os.PathListSeparator) + env["PATH"])
	if err == nil || !strings.Contains(stderr, "INTEGRITY_FAILED") || !strings.Contains(stderr, "Pi package "+p.Name) || out != "" {
		t.Fatalf("a changed extension of %s: %v\nstdout: %s\nstderr: %s", p.Name, err, out, stderr)
	}
}

// The footprint example (testdata/distributions/pi-footprint): three small
// Pi packages on the Pi 1.6 flagship, each showing one closure decision.
// The release bundles pi-fp-bundled's closure behind a forwarding module
// and shares the fp-words copies of the other two; Pi loads all three
// extensions (the release's pi-packages smoke test). A release with the
// footprint work off (--no-footprint) has the same piship.lock, SBOM
// package set and notices, and differs only in its payload's files; every
// packageFileName the SBOM names is in the payload either way (a package
// Pi's own bundle carries names that bundle's entry).
func TestPiFootprintKeepsLockSBOMAndNotices(t *testing.T) {
	root := t.TempDir()
	env := node22Env(t, root)
	dir := copyDist(t, "pi-footprint")
	on, off := filepath.Join(root, "on"), filepath.Join(root, "off")
	t.Log(lastLine(mustRelease(t, env, dir, "--out", on)))
	t.Log(lastLine(mustRelease(t, env, dir, "--out", off, "--no-footprint")))
	rel := func(out string) string { return filepath.Join(out, "releases", "pi-footprint-1.6.0-linux-x64") }
	read := func(out, name string) []byte {
		b, err := os.ReadFile(filepath.Join(rel(out), filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range []string{"payload/piship.lock", "licenses/THIRD_PARTY_NOTICES.txt", "licenses/index.json"} {
		if !bytes.Equal(read(on, name), read(off, name)) {
			t.Errorf("%s differs between the release with the footprint work and the one without", name)
		}
	}
	sbomSet := func(out string) []string {
		var sb struct {
			Packages []struct{ Name, VersionInfo, PackageFileName string }
		}
		if err := json.Unmarshal(read(out, "sbom.spdx.json"), &sb); err != nil {
			t.Fatal(err)
		}
		var set []string
		for _, p := range sb.Packages {
			set = append(set, p.Name+"@"+p.VersionInfo+" "+p.PackageFileName)
			if p.PackageFileName == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(rel(out), "payload", filepath.FromSlash(p.PackageFileName))); err != nil {
				t.Errorf("the SBOM names %s, which the payload does not hold: %v", p.PackageFileName, err)
			}
		}
		slices.Sort(set)
		return set
	}
	if a, b := sbomSet(on), sbomSet(off); !slices.Equal(a, b) || len(a) < 100 {
		t.Errorf("SBOM package sets differ (or are short): %d vs %d", len(a), len(b))
	}
	var rep, repOff report.Report
	if err := json.Unmarshal(read(on, "payload/"+report.Name), &rep); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(read(off, "payload/"+report.Name), &repOff); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", strings.Join(rep.Lines(), "\n"))
	want := map[string]string{"pi-fp-bundled": "bundled ", "pi-fp-files": "vendored locates-own-files", "pi-fp-typed": "vendored typescript-closure"}
	for _, c := range rep.Closures {
		if got := c.Decision + " " + strings.Join(c.Findings, ","); got != want[c.Package] {
			t.Errorf("closure of %s: %q, want %q", c.Package, got, want[c.Package])
		}
	}
	if len(rep.Shared) != 1 || rep.Shared[0].Name != "fp-words" || len(rep.Shared[0].Places) != 2 || rep.Shared[0].Saved <= 0 {
		t.Errorf("shared: %+v", rep.Shared)
	}
	if repOff.Sharing || len(repOff.Shared) != 0 || repOff.Closures[0].Decision != "vendored" {
		t.Errorf("footprint off: %+v", repOff)
	}
	// pi-fp-typed's pretranspile: the modules its extension imports are
	// JavaScript beside them too (with the footprint work only).
	typed := "payload/pi-packages/pi-fp-typed/node_modules/pi-fp-typed/lib/"
	if c := rep.Closures[2]; c.Package != "pi-fp-typed" || c.Pretranspiled != 2 || !strings.Contains(string(read(on, typed+"describe.js")), `from "./prefix.js"`) {
		t.Errorf("pretranspile: %+v", c)
	}
	if _, err := os.Stat(filepath.Join(rel(off), filepath.FromSlash(typed), "describe.js")); err == nil {
		t.Error("the release without the footprint work pretranspiled")
	}
	// The bundled extension's entry is the locked bytes; what it imports
	// forwards into .bundle. Pi loaded every extension in both releases.
	for _, out := range []string{on, off} {
		var rj struct{ Tests []releasejson.TestResult }
		if err := json.Unmarshal(read(out, "release.json"), &rj); err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(rj.Tests, releasejson.TestResult{Name: "pi-packages", Result: "passed"}) {
			t.Errorf("%s: release.json tests %+v, want pi-packages passed", out, rj.Tests)
		}
	}
	src, _ := os.ReadFile(filepath.Join(dir, "packages-src", "pi-fp-bundled", "index.js"))
	if got := read(on, "payload/pi-packages/pi-fp-bundled/node_modules/pi-fp-bundled/index.js"); !bytes.Equal(got, src) {
		t.Errorf("the bundled package's entry changed:\n%s", got)
	}
	if fwd := string(read(on, "payload/pi-packages/pi-fp-bundled/node_modules/pi-fp-bundled/lib/commands.js")); !strings.HasPrefix(fwd, `export * from "../../../.bundle/`) {
		t.Errorf("lib/commands.js is not a forwarding module: %s", fwd)
	}
	var invOn, invOff map[string]json.RawMessage
	json.Unmarshal(read(on, "payload/metadata/inventory.json"), &invOn)
	json.Unmarshal(read(off, "payload/metadata/inventory.json"), &invOff)
	if len(invOn) == 0 || len(invOn) >= len(invOff) {
		t.Errorf("payload files: %d with the footprint work, %d without", len(invOn), len(invOff))
	}
}

// make test-pi only (PI_HEAVY_TESTS in the Makefile): the developer Pi
// released, installed and started for real through its command shim on
// the Node 22 fixture, offline, in RPC mode: Pi loads the five vendored
// packages the launcher hands it (typebox shared between two of them),
// answers get_commands with a command from each package's directory, and
// reports no extension that failed to load. The first start compiles
// every extension (jiti, ~18 s); make test's TestPiDevPackagesLoadThroughTheShim
// checks the launcher's arguments with a stand-in node instead, and the
// release's pi-packages smoke test runs the payload's own bin script.
func TestPiDevStartsWithItsPackages(t *testing.T) {
	root := t.TempDir()
	env := node22Env(t, root)
	dir, lock := releasePiDev(t, env)
	if code, stdout, stderr := cli(t, env, "install", filepath.Join(dir, "dist", "releases", "pi-dev-1.6.0-linux-x64.tar.zst")); code != exitOK {
		t.Fatalf("install: %d\n%s%s", code, stdout, stderr)
	}
	cmd := exec.Command(filepath.Join(root, "bin", "pi-dev"), "--mode", "rpc", "--no-session")
	cmd.Env = []string{"PATH=" + env["PATH"], "HOME=" + root, "TMPDIR=" + t.TempDir(), "PI_OFFLINE=1",
		"PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
	cmd.Dir = root
	cmd.Stdin = strings.NewReader(`{"id":"t","type":"get_commands"}` + "\n")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi-dev --mode rpc: %v\n%s\n%s", err, out.String(), errb.String())
	}
	t.Logf("first start with five packages: %.1f s", time.Since(start).Seconds())
	if strings.Contains(errb.String(), "Failed to load extension") {
		t.Fatalf("an extension failed to load:\n%s", errb.String())
	}
	var resp struct {
		Success bool
		Data    struct {
			Commands []struct {
				Name       string
				SourceInfo struct{ Path string }
			}
		}
	}
	line := out.String()[strings.Index(out.String(), `{"id":"t"`):]
	if err := json.NewDecoder(strings.NewReader(line)).Decode(&resp); err != nil || !resp.Success {
		t.Fatalf("get_commands: %v\n%s", err, out.String())
	}
	payloadDir := filepath.Join(root, "install", "apps", "pi-dev", "1.6.0", "payload")
	for _, p := range lock.Packages {
		dirOf := filepath.Join(payloadDir, filepath.FromSlash(p.Root)) + string(filepath.Separator)
		found := ""
		for _, c := range resp.Data.Commands {
			if strings.HasPrefix(c.SourceInfo.Path, dirOf) {
				found = c.Name
				break
			}
		}
		if found == "" {
			t.Errorf("no command from %s (%s) in Pi's list", p.Name, dirOf)
		} else {
			t.Logf("%s: /%s", p.Name, found)
		}
	}
}
