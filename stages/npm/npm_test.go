package npm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/runtimecache"
)

func needNpm(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the tests need Node.js and npm (see README)", tool)
		}
	}
}

// isolate points npm at an empty cache and configuration and forbids the
// network.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("npm_config_cache", filepath.Join(dir, "cache"))
	t.Setenv("npm_config_userconfig", filepath.Join(dir, "user.npmrc"))
	t.Setenv("npm_config_globalconfig", filepath.Join(dir, "global.npmrc"))
	t.Setenv("npm_config_offline", "true")
	t.Setenv("npm_config_registry", "")
}

func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestMajorMinor(t *testing.T) {
	for in, want := range map[string]string{
		"v20.20.2\n": "20.20", "11.19.1": "11.19", " v22.1.0-nightly\r\n": "22.1", "10.9": "10.9",
	} {
		if got, err := majorMinor("x", in); err != nil || got != want {
			t.Errorf("majorMinor(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "v", "20", "vX.1.2", "1.-2.3", "command not found"} {
		if got, err := majorMinor("x", in); err == nil {
			t.Errorf("majorMinor(%q) = %q, want an error", in, got)
		}
	}
}

func TestVersions(t *testing.T) {
	needNpm(t)
	node, npm, err := Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^\d+\.\d+$`)
	if !re.MatchString(node) || !re.MatchString(npm) {
		t.Fatalf("Versions = %q, %q; want major.minor", node, npm)
	}
	// They agree with what the tools print.
	wantNode, _ := majorMinor("node", run(t, "", "node", "--version"))
	wantNpm, _ := majorMinor("npm", run(t, "", "npm", "--version"))
	if node != wantNode || npm != wantNpm {
		t.Fatalf("Versions = %q, %q; node --version and npm --version say %q, %q", node, npm, wantNode, wantNpm)
	}
	// Memoised: a second call starts nothing, even with a dead context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if n2, m2, err := Versions(ctx); err != nil || n2 != node || m2 != npm {
		t.Fatalf("second Versions = %q, %q, %v", n2, m2, err)
	}
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("memoised Versions took %v", d)
	}
	if v, ok := npmVersionFromPackage(); ok {
		t.Logf("npm version read from its package.json: %s", v)
	} else {
		t.Logf("npm's layout is not the standard one: its version comes from npm --version")
	}
}

// project writes a package that depends on a local tarball (made with npm
// pack) of a package with a bin, and locks it, all offline.
func project(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dep := filepath.Join(root, "dep")
	proj := filepath.Join(root, "proj")
	for p, content := range map[string]string{
		"dep/package.json":  `{"name":"dep","version":"1.0.0","bin":{"dep":"cli.js"}}`,
		"dep/index.js":      "module.exports = 42\n",
		"dep/cli.js":        "#!/usr/bin/env node\nconsole.log(require('./index.js'))\n",
		"proj/package.json": `{"name":"proj","version":"0.0.0","private":true,"dependencies":{"dep":"file:vendor/dep-1.0.0.tgz"}}`,
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(proj, "vendor"), 0o755)
	run(t, dep, "npm", "pack", "--pack-destination", filepath.Join(proj, "vendor"))
	run(t, proj, "npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund")
	return proj
}

// TestCi installs a project with a `file:` tarball dependency the way the
// runtime cache does: into a fresh entry directory holding copies of
// package.json, the lock and the tarball (at the same relative path), which
// is deleted again afterwards; then the entry is placed and run.
func TestCi(t *testing.T) {
	needNpm(t)
	isolate(t)
	proj := project(t)

	var log bytes.Buffer
	rt := runtimecache.Open(t.TempDir())
	e, err := rt.Create(runtimecache.InstallKey{Lock: []byte("test")}.Key(), func(dir string) error {
		for _, f := range []string{"package.json", "package-lock.json", "vendor/dep-1.0.0.tgz"} {
			data, err := os.ReadFile(filepath.Join(proj, filepath.FromSlash(f)))
			if err != nil {
				return err
			}
			os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), data, 0o644); err != nil {
				return err
			}
		}
		if err := Ci(context.Background(), dir, &log); err != nil {
			return err
		}
		return os.RemoveAll(filepath.Join(dir, "vendor"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "added 1 package") {
		t.Errorf("npm's output did not reach the log: %q", log.String())
	}
	if data, err := os.ReadFile(filepath.Join(e.Dir, "node_modules", "dep", "index.js")); err != nil || string(data) != "module.exports = 42\n" {
		t.Fatalf("node_modules/dep/index.js = %q, %v", data, err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	if target, err := os.Readlink(filepath.Join(e.Dir, "node_modules", ".bin", "dep")); err != nil || target != "../dep/cli.js" {
		t.Fatalf("node_modules/.bin/dep -> %q, %v", target, err)
	}
	dst := filepath.Join(t.TempDir(), "payload")
	if _, err := e.Place(dst); err != nil {
		t.Fatal(err)
	}
	if out := run(t, dst, filepath.Join(dst, "node_modules", ".bin", "dep")); out != "42\n" {
		t.Fatalf("the placed bin printed %q", out)
	}
}

func TestCiFailure(t *testing.T) {
	needNpm(t)
	isolate(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"x","version":"1.0.0"}`), 0o644)
	err := Ci(context.Background(), dir, nil)
	if err == nil {
		t.Fatal("npm ci without a lock succeeded")
	}
	// The error carries the end of npm's output.
	if !strings.Contains(err.Error(), "npm error code") || !strings.Contains(err.Error(), "package-lock.json") {
		t.Fatalf("error lacks npm's report: %v", err)
	}
	if strings.Contains(err.Error(), "--install-links") {
		t.Fatalf("error carries npm's usage text: %v", err)
	}
	t.Log(err)
}

func TestCiCancel(t *testing.T) {
	needNpm(t)
	isolate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := Ci(ctx, t.TempDir(), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ci with an expiring context = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancelled Ci took %v", d)
	}
}

func TestTail(t *testing.T) {
	tb := &tailBuffer{limit: 10}
	for range 100 {
		tb.Write([]byte("abcdefg\n"))
	}
	if got := string(tb.Bytes()); len(got) != 10 || !strings.HasSuffix(got, "abcdefg\n") {
		t.Fatalf("tail = %q", got)
	}
	var long strings.Builder
	for i := range 100 {
		long.WriteString(strings.Repeat("x", i) + "\n")
	}
	note := tailNote([]byte(long.String()))
	if lines := strings.Count(note, "\n"); lines != 30 || !strings.HasSuffix(note, strings.Repeat("x", 99)) {
		t.Fatalf("tailNote kept %d lines: %q", lines, note)
	}
	if tailNote([]byte("\n \n")) != "" {
		t.Fatal("tailNote of blank output is not empty")
	}
	old := "npm WARN x\nnpm ERR! code E404\nnpm ERR! 404 Not Found - GET https://r/x\nnpm ERR!\nnpm ERR! more\nnpm ERR! A complete log of this run can be found in: /l.log\n"
	if got, want := npmErrorNote([]byte(old)), "\nnpm ERR! code E404\nnpm ERR! 404 Not Found - GET https://r/x\nnpm ERR! A complete log of this run can be found in: /l.log"; got != want {
		t.Fatalf("npmErrorNote = %q, want %q", got, want)
	}
	if got := npmErrorNote([]byte("no report\nhere\n")); got != "\nno report\nhere" {
		t.Fatalf("npmErrorNote without a report = %q", got)
	}
}

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	cfg := t.TempDir()
	t.Setenv("npm_config_registry", "")
	t.Setenv("NPM_CONFIG_REGISTRY", "")
	t.Setenv("npm_config_userconfig", filepath.Join(cfg, "user.npmrc"))
	t.Setenv("npm_config_globalconfig", filepath.Join(cfg, "global.npmrc"))
	t.Setenv("PISHIP_TEST_HOST", "npm.example.test")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// npm's built-in npmrc may set a registry on some hosts; start from
	// whatever this host says with no files of ours.
	base := Registry(dir)
	if !strings.HasSuffix(base, "/") {
		t.Fatalf("Registry() = %q, want a trailing slash", base)
	}

	write(filepath.Join(cfg, "global.npmrc"), "registry=https://global.example.test/\n")
	if got := Registry(dir); got != "https://global.example.test/" {
		t.Fatalf("with a global npmrc: %q", got)
	}
	write(filepath.Join(cfg, "user.npmrc"), "; comment\n# comment\n//user.example.test/:_authToken=secret\nregistry = \"https://user.example.test/npm\"\n")
	if got := Registry(dir); got != "https://user.example.test/npm/" {
		t.Fatalf("with a user npmrc: %q", got)
	}
	write(filepath.Join(dir, ".npmrc"), "registry=https://${PISHIP_TEST_HOST}/a/\n@scope:registry=https://scoped.example.test/\n[section]\nregistry=https://ignored.example.test/\n")
	if got := Registry(dir); got != "https://npm.example.test/a/" {
		t.Fatalf("with a project npmrc: %q", got)
	}
	t.Setenv("NPM_CONFIG_REGISTRY", "https://env.example.test")
	if got := Registry(dir); got != "https://env.example.test/" {
		t.Fatalf("with the environment: %q", got)
	}

	for in, want := range map[string]string{
		"${PISHIP_TEST_HOST}":        "npm.example.test",
		"${PISHIP_TEST_UNSET_VAR}":   "${PISHIP_TEST_UNSET_VAR}",
		"${PISHIP_TEST_UNSET_VAR?}":  "",
		`\${PISHIP_TEST_HOST}`:       "${PISHIP_TEST_HOST}",
		`\\${PISHIP_TEST_HOST}`:      `\npm.example.test`,
		"a${PISHIP_TEST_HOST}b${x?}": "anpm.example.testb",
	} {
		if got := expandEnv(in); got != want {
			t.Errorf("expandEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
