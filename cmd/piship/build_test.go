package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/tracing"
)

// TestMain lets a test re-run this binary as the piship command
// (PISHIP_TEST_MAIN=1), so a release runs as a real child process with its
// own environment.
func TestMain(m *testing.M) {
	if os.Getenv("PISHIP_TEST_MAIN") == "1" {
		os.Exit(cli.Main(program, "")) // a test binary: its releases ship no piship
	}
	code := m.Run()
	fixture.Cleanup() // the binaries the benchmarks built
	os.Exit(code)
}

// realBinaries is the piship binary of this run (piship-launch beside it),
// for the benchmarks that time it as a separate process.
func realBinaries(t testing.TB) string {
	t.Helper()
	dir, err := fixture.Binaries()
	if err != nil {
		t.Fatalf("cannot build the binaries: %v", err)
	}
	return filepath.Join(dir, "piship")
}

// copyDist copies an example distribution into a temp dir (so tests can
// change and relock it) and returns the copy.
func copyDist(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := fixture.CopyDist(name, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// setBundle rewrites a distribution's release.bundle and relocks it.
func setBundle(t testing.TB, env map[string]string, dir string, bundle bool) {
	t.Helper()
	if err := fixture.SetBundle(dir, bundle); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
}

func buildEnv(t *testing.T) map[string]string {
	return map[string]string{"PISHIP_CACHE_HOME": filepath.Join(t.TempDir(), "cache"), "PISHIP_PROGRESS": "0"}
}

func mustBuild(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	return mustBuildTraced(t, nil, env, args...)
}

// mustBuildTraced is mustBuild whose run also gives its spans to spans.
func mustBuildTraced(t *testing.T, spans []sdktrace.SpanProcessor, env map[string]string, args ...string) string {
	t.Helper()
	code, _, stderr := cliTraced(t, spans, env, append([]string{"build"}, args...)...)
	if code != exitOK {
		t.Fatalf("build %v: exit %d\n%s", args, code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

func runPayload(t *testing.T, payloadDir, command string, args ...string) string {
	t.Helper()
	out, err := fixture.RunPayload(payloadDir, command, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuildHelloBundledAndUnbundled(t *testing.T) {
	env := buildEnv(t)
	var helps []string
	for _, bundled := range []bool{true, false} {
		dir := copyDist(t, "hello")
		setBundle(t, env, dir, bundled)
		summary := mustBuild(t, env, dir)
		if !regexp.MustCompile(`^hello 1\.0\.0: .* \((un)?bundled, stripped\): \d+ files, [\d.]+ (B|KiB|MiB); .*; [\d.]+ s$`).MatchString(summary) {
			t.Fatalf("summary line %q", summary)
		}
		final := filepath.Join(dir, "dist", "hello")
		if err := payload.Verify(context.Background(), final); err != nil {
			t.Fatal(err)
		}
		if v := strings.TrimSpace(runPayload(t, final, "hello", "--version")); v != "1.0.0" {
			t.Fatalf("--version printed %q", v)
		}
		helps = append(helps, runPayload(t, final, "hello", "--help"))
		_, err := os.Stat(filepath.Join(final, "metadata", "bundle.json"))
		if bundled != (err == nil) {
			t.Fatalf("bundled=%v but metadata/bundle.json exists=%v", bundled, err == nil)
		}
		for _, f := range []string{"metadata/target.json", "piship.lock", "package-lock.json", "resources/motd.txt", "tools/hello-info"} {
			if _, err := os.Stat(filepath.Join(final, f)); err != nil {
				t.Errorf("payload lacks %s", f)
			}
		}
		files, _ := payload.Walk(final)
		for _, f := range files {
			if strings.HasSuffix(f.Path, ".map") || strings.HasSuffix(f.Path, ".d.ts") {
				t.Errorf("strip left %s", f.Path)
			}
		}
		var q map[string]any
		if err := canon.ReadJSON(filepath.Join(dir, "dist", "hello.piship-qualification.json"), &q); err != nil || q["qualification"] != "unqualified-local" {
			t.Fatalf("qualification marker %v %v", q, err)
		}
	}
	if helps[0] != helps[1] {
		t.Fatalf("--help differs between bundled and unbundled:\n%s\n---\n%s", helps[0], helps[1])
	}
}

// ranSpans are the names of the recorded spans but those of stages that
// did not run, which have a zero-length span saying why (verdict skipped
// or not started).
func ranSpans(rec *tracetest.SpanRecorder) []string {
	var names []string
	for _, s := range rec.Ended() {
		ran := true
		for _, kv := range s.Attributes() {
			if kv.Key == tracing.AttrVerdict && (kv.Value.AsString() == tracing.VerdictSkipped || kv.Value.AsString() == tracing.VerdictNotStarted) {
				ran = false
			}
		}
		if ran {
			names = append(names, s.Name())
		}
	}
	return names
}

func TestUnchangedRebuildRunsNoHeavyStage(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustBuild(t, env, dir)

	rec := tracetest.NewSpanRecorder()
	summary := mustBuildTraced(t, []sdktrace.SpanProcessor{rec}, env, dir)
	if !strings.Contains(summary, "unchanged: payload reused") {
		t.Fatalf("summary %q", summary)
	}
	names := ranSpans(rec)
	for _, heavy := range []string{"module.payload.stage.runtime", "module.payload.stage.prune", "module.payload.stage.strip", "module.payload.stage.bundle", "module.payload.stage.inventory", "publish publish"} {
		for _, n := range names {
			if n == heavy {
				t.Fatalf("unchanged rebuild ran %s (spans of stages that ran: %v)", heavy, names)
			}
		}
	}
	if !strings.Contains(strings.Join(names, ","), "dist_inputs inputs") {
		t.Fatalf("spans %v", names)
	}

	// A changed resource with the same runtime key refreshes only the
	// resources, the lock and the inventory.
	if err := os.WriteFile(filepath.Join(dir, "resources", "motd.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := piship(t, env, "build", dir); code != exitUsage || !strings.Contains(stderr, "LOCK_INVALID") ||
		!strings.Contains(stderr, "resources/motd.txt") || !strings.Contains(stderr, "run piship lock") {
		t.Fatalf("stale lock: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatal(stderr)
	}
	rec2 := tracetest.NewSpanRecorder()
	summary = mustBuildTraced(t, []sdktrace.SpanProcessor{rec2}, env, dir)
	if !strings.Contains(summary, "runtime reused, resources refreshed") {
		t.Fatalf("summary %q", summary)
	}
	for _, n := range ranSpans(rec2) {
		switch n {
		case "module.payload.stage.runtime", "module.payload.stage.prune", "module.payload.stage.strip", "module.payload.stage.bundle":
			t.Fatalf("resource refresh ran %s", n)
		}
	}
	final := filepath.Join(dir, "dist", "hello")
	if b, _ := os.ReadFile(filepath.Join(final, "resources", "motd.txt")); string(b) != "changed\n" {
		t.Fatalf("resource not refreshed: %q", b)
	}
	if err := payload.Verify(context.Background(), final); err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(runPayload(t, final, "hello", "--version")); v != "1.0.0" {
		t.Fatalf("--version %q", v)
	}
}

// A damaged runtime cache entry is detected, removed and rebuilt: its
// content never reaches a payload.
func TestCorruptedRuntimeCacheEntryIsRebuilt(t *testing.T) {
	for _, damage := range []string{"changed", "removed", "added"} {
		t.Run(damage, func(t *testing.T) {
			env := buildEnv(t)
			dir := copyDist(t, "hello")
			setBundle(t, env, dir, false)
			mustBuild(t, env, dir)
			entries, _ := filepath.Glob(filepath.Join(env["PISHIP_CACHE_HOME"], "runtime", "i-*", "tree"))
			if len(entries) != 1 {
				t.Fatalf("runtime entries %v", entries)
			}
			victim := filepath.Join(entries[0], "node_modules", "hello-format", "index.js")
			switch damage {
			case "changed":
				// Replace (not write through): the payload's hardlink keeps
				// the good bytes, the entry gets bad ones of another size.
				os.Remove(victim)
				os.WriteFile(victim, []byte("module.exports = () => 'evil'\n"), 0o644)
			case "removed":
				os.Remove(victim)
			case "added":
				os.WriteFile(filepath.Join(entries[0], "node_modules", "hello-format", "extra.js"), []byte("x"), 0o644)
			}
			out := filepath.Join(t.TempDir(), "out")
			code, _, stderr := piship(t, env, "build", dir, "--out", out)
			if code != exitOK {
				t.Fatalf("build: %s", stderr)
			}
			if !strings.Contains(stderr, "damaged") || !strings.Contains(stderr, "runtime cache miss") {
				t.Fatalf("damage not reported or entry not rebuilt:\n%s", stderr)
			}
			final := filepath.Join(out, "hello")
			if err := payload.Verify(context.Background(), final); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(final, "node_modules", "hello-format", "index.js"))
			if err != nil || strings.Contains(string(b), "evil") {
				t.Fatalf("payload took the damaged file: %q %v", b, err)
			}
			if _, err := os.Stat(filepath.Join(final, "node_modules", "hello-format", "extra.js")); err == nil {
				t.Fatal("payload took the added file")
			}
		})
	}
}

// TestStaleLockCleanupDoesNotFail is issue 29 point 1 as a user meets it:
// build and release of a distribution whose lock is stale print the
// LOCK_INVALID and nothing else failing. The staging_cleanup stage (always)
// refers to outputs of the inputs stage, which failed; it still runs (its
// eviction with the default budget) instead of failing with a null-argument
// CONFIG_INVALID pointing into an embedded pipeline file.
func TestStaleLockCleanupDoesNotFail(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	if err := os.WriteFile(filepath.Join(dir, "resources", "motd.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"build", "release"} {
		code, _, stderr := piship(t, env, cmd, dir, "--progress", "plain")
		if code != exitUsage || !strings.Contains(stderr, "LOCK_INVALID") {
			t.Fatalf("%s with a stale lock: exit %d, want %d with LOCK_INVALID:\n%s", cmd, code, exitUsage, stderr)
		}
		if first := firstLine(stderr); first != cmd+": embedded:pipelines/"+cmd+".hcl" {
			t.Errorf("%s: first line %q", cmd, first)
		}
		// The first line names the file that runs (embedded:pipelines/...);
		// no line after it may point into it.
		for _, line := range strings.Split(stderr, "\n")[1:] {
			if strings.Contains(line, "FAILED") && !strings.Contains(line, "_inputs inputs: FAILED") {
				t.Errorf("%s: a stage other than inputs failed: %s", cmd, line)
			}
			if strings.Contains(line, "embedded:") || strings.Contains(line, "CONFIG_INVALID") {
				t.Errorf("%s: points into an embedded file: %s", cmd, line)
			}
		}
		// The build's cleanup stage runs; a release's inputs stage fails
		// before its targets' modules exist and removes what it opened.
		if cmd == "build" && !strings.Contains(stderr, "build: staging_cleanup cleanup: DONE") {
			t.Errorf("%s: the cleanup did not run to the end:\n%s", cmd, stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "dist", ".staging-*")); len(left) > 0 {
			t.Errorf("%s: staging directories left behind: %v", cmd, left)
		}
	}
}
