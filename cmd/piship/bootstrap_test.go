package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/platform"
)

// install.sh beside the archives installs the host's archive, checked
// against the sha256 it carries, with the installer the release directory
// carries and the root the lock pins, on a fresh home: run with sh from the
// releases directory and piped from a loopback URL. A tampered archive is
// refused by the script before the installer runs.
func TestBootstrapInstallSh(t *testing.T) {
	root := t.TempDir()
	// The release ships the end-user installer beside the running piship
	// (release_publish): the binaries make build makes, built once per
	// test process with the test binaries' flags (fixture.Binaries), so
	// this costs three links, not a second compile of the tree.
	tools, err := fixture.Binaries()
	if err != nil {
		t.Fatalf("cannot build the binaries: %v", err)
	}
	env := buildEnv(t)

	key := filepath.Join(root, "root.pem")
	if code, _, stderr := piship(t, env, "keygen", key); code != exitOK {
		t.Fatalf("keygen: %s", stderr)
	}
	repoDir := filepath.Join(root, "repo")
	code, out, stderr := piship(t, env, "repo", "init", repoDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	pin := regexp.MustCompile(`(?m)^  root_sha256 = "(sha256:[0-9a-f]{64})"$`).FindStringSubmatch(out)
	if code != exitOK || pin == nil {
		t.Fatalf("repo init: %d\n%s%s", code, out, stderr)
	}
	dir := copyDist(t, "hello")
	hcl, _ := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
	writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), "1.0.0", repoDir, pin[1]))
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %s", stderr)
	}
	if code, stderr := releaseShipping(t, env, filepath.Join(tools, "piship"), dir); code != exitOK {
		t.Fatalf("release: %s", stderr)
	}
	releases := filepath.Join(dir, "dist", "releases")
	name := "hello-1.0.0-" + platform.HostTarget()
	script, err := os.ReadFile(filepath.Join(releases, "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	side, _ := os.ReadFile(filepath.Join(releases, name+".tar.zst.sha256"))
	sum := strings.Fields(string(side))[0]
	for _, want := range []string{"archive='" + name + ".tar.zst'; sum='" + sum + "'", "installer='" + name + "/piship'", "launcher='" + name + "/piship-launch'", "root_pin='" + pin[1] + "'"} {
		if !bytes.Contains(script, []byte(want)) {
			t.Fatalf("install.sh lacks %q:\n%s", want, script)
		}
	}
	if _, err := os.Stat(filepath.Join(releases, "install.ps1")); !os.IsNotExist(err) {
		t.Fatalf("install.ps1 beside a release with no win32-x64 archive: %v", err)
	}

	// homeEnv is a fresh home: nothing of piship's on PATH.
	homeEnv := func(h string) []string {
		return []string{"HOME=" + h, "PATH=/usr/bin:/bin", "PISHIP_INSTALL_HOME=" + filepath.Join(h, "install"),
			"PISHIP_BIN_HOME=" + filepath.Join(h, "bin"), "PISHIP_STATE_HOME=" + filepath.Join(h, "state"),
			"PISHIP_CACHE_HOME=" + filepath.Join(h, "cache"), "PISHIP_PROGRESS=0"}
	}
	launch := func(h string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(h, "bin", "hello"), "--version")
		cmd.Env = homeEnv(h)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("hello --version after install.sh: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	t.Run("local", func(t *testing.T) {
		h := t.TempDir()
		cmd := exec.Command("sh", filepath.Join(releases, "install.sh"))
		cmd.Dir, cmd.Env = h, homeEnv(h)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "installed hello 1.0.0") {
			t.Fatalf("sh install.sh: %v\n%s", err, out)
		}
		if got := launch(h); got != "1.0.0" {
			t.Fatalf("launch: %q", got)
		}
	})

	t.Run("url", func(t *testing.T) {
		srv := httptest.NewServer(http.FileServer(http.Dir(releases)))
		defer srv.Close()
		h := t.TempDir()
		cmd := exec.Command("sh", "-c", `curl -fsSL "$URL/install.sh" | PISHIP_RELEASE_BASE="$URL" sh`)
		cmd.Dir, cmd.Env = h, append(homeEnv(h), "URL="+srv.URL)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "installed hello 1.0.0") {
			t.Fatalf("curl | sh: %v\n%s", err, out)
		}
		if got := launch(h); got != "1.0.0" {
			t.Fatalf("launch: %q", got)
		}
		// Piped without a base, it cannot know where the archive is.
		cmd = exec.Command("sh", "-c", `curl -fsSL "$URL/install.sh" | sh`)
		cmd.Dir, cmd.Env = h, append(homeEnv(h), "URL="+srv.URL)
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "set PISHIP_RELEASE_BASE") {
			t.Fatalf("curl | sh without a base: %v\n%s", err, out)
		}
	})

	t.Run("other-target", func(t *testing.T) {
		// A host of another target (uname answers for it) is refused,
		// naming the host's target, before anything is read.
		fake, sys, mach := "darwin-x64", "Darwin", "x86_64"
		if platform.HostTarget() == fake {
			fake, sys, mach = "linux-arm64", "Linux", "aarch64"
		}
		h := t.TempDir()
		writeFile(t, filepath.Join(h, "fakebin"), "uname", "#!/bin/sh\ncase $1 in -s) echo "+sys+" ;; -m) echo "+mach+" ;; esac\n")
		os.Chmod(filepath.Join(h, "fakebin", "uname"), 0o755)
		cmd := exec.Command("sh", filepath.Join(releases, "install.sh"))
		cmd.Dir, cmd.Env = h, append(homeEnv(h), "PATH="+filepath.Join(h, "fakebin")+":/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		if want := "install.sh: this host is " + fake + "; hello 1.0.0 was released for " + platform.HostTarget() + " only"; err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("install.sh on %s: %v\n%s", fake, err, out)
		}
		if _, err := os.Stat(filepath.Join(h, "install")); !os.IsNotExist(err) {
			t.Fatalf("the installer ran for another target: %v", err)
		}
	})

	t.Run("tampered", func(t *testing.T) {
		// A copy of the releases directory whose archive lost a byte.
		bad := filepath.Join(t.TempDir(), "releases")
		if err := os.CopyFS(bad, os.DirFS(releases)); err != nil {
			t.Fatal(err)
		}
		arc := filepath.Join(bad, name+".tar.zst")
		data, _ := os.ReadFile(arc)
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(arc, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h := t.TempDir()
		cmd := exec.Command("sh", filepath.Join(bad, "install.sh"))
		cmd.Dir, cmd.Env = h, homeEnv(h)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "expected "+sum+": it is not the archive this script was written for; nothing was installed") {
			t.Fatalf("install.sh of a tampered archive: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(h, "install")); !os.IsNotExist(err) {
			t.Fatalf("the installer ran on a tampered archive: the install home exists (%v)", err)
		}
	})
}

// releaseShipping runs piship release as the piship binary self would:
// release_publish ships the installer beside self (piship-install) in the
// host's release directory, as it does for the real command.
func releaseShipping(t *testing.T, vars map[string]string, self, dir string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		if k == "HOME" || k == "PATH" {
			return os.Getenv(k)
		}
		return ""
	}
	code := cli.Dispatch(&env{Ctx: context.Background(), Stdout: &out, Stderr: &errb, Getenv: getenv, Self: self, Program: program}, []string{"release", dir})
	return code, errb.String()
}
