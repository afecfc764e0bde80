package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/piship/internal/fixture"
)

// Exit codes of the piship command (README: 0 ok, 1 failed, 2 usage).
const exitOK = 0

func TestMain(m *testing.M) {
	code := m.Run()
	// The binaries and the cache the tests of this run shared.
	fixture.Cleanup()
	if cacheDir != "" {
		os.RemoveAll(cacheDir)
	}
	os.Exit(code)
}

// realBinaries is the piship binary of this run (piship-launch beside it).
func realBinaries(t testing.TB) string {
	t.Helper()
	dir, err := fixture.Binaries()
	if err != nil {
		t.Fatalf("cannot build the binaries: %v", err)
	}
	return filepath.Join(dir, "piship")
}

var (
	cacheOnce sync.Once
	cacheDir  string
)

// sharedCache is one PISHIP_CACHE_HOME for the consumer tests of this run:
// their releases share runtime and bundle cache entries, as a release
// engineer's machine would.
func sharedCache(t testing.TB) string {
	cacheOnce.Do(func() {
		cacheDir, _ = os.MkdirTemp("", "piship-test-cache-*")
	})
	return cacheDir
}

// consumerCommands are the commands the end-user installer has: cli runs
// them with piship-install, as an end user runs them with the piship a
// release directory carries; PISHIP_E2E_CONSUMER_BINARY=piship runs them
// with the full piship instead (the same code, the other binary).
var consumerCommands = map[string]bool{"install": true, "update": true, "rollback": true, "doctor": true,
	"uninstall": true, "purge": true, "repair": true, "launch": true}

// binaryFor is the binary cli runs for args.
func binaryFor(t testing.TB, args []string) string {
	bin := realBinaries(t)
	if len(args) > 0 && consumerCommands[args[0]] && os.Getenv("PISHIP_E2E_CONSUMER_BINARY") != "piship" {
		return filepath.Join(filepath.Dir(bin), "piship-install")
	}
	return bin
}

// cli runs piship (piship-install for a consumer command: binaryFor) with
// a clean environment (PATH and HOME, so npm keeps one download cache for
// the run) plus env.
func cli(t testing.TB, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(binaryFor(t, args), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if _, ok := env["PISHIP_CACHE_HOME"]; !ok {
		cmd.Env = append(cmd.Env, "PISHIP_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"))
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("piship %v: %v", args, err)
	}
	return code, out.String(), errb.String()
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
	if code, _, stderr := cli(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
}

func buildEnv(t *testing.T) map[string]string {
	return map[string]string{"PISHIP_CACHE_HOME": filepath.Join(t.TempDir(), "cache"), "PISHIP_PROGRESS": "0"}
}

func mustBuild(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	code, _, stderr := cli(t, env, append([]string{"build"}, args...)...)
	if code != exitOK {
		t.Fatalf("build %v: exit %d\n%s", args, code, stderr)
	}
	return lastLine(stderr)
}

func mustRelease(t testing.TB, env map[string]string, args ...string) string {
	t.Helper()
	code, _, stderr := cli(t, env, append([]string{"release"}, args...)...)
	if code != exitOK {
		t.Fatalf("release %v: exit %d\n%s", args, code, stderr)
	}
	return stderr
}

func runPayload(t *testing.T, payloadDir, command string, args ...string) string {
	t.Helper()
	out, err := fixture.RunPayload(payloadDir, command, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readJSONFile(path string, v any) error { return canon.ReadJSON(path, v) }

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
