package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/installers"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release"
)

// The block make installers writes (bin/installers/installers.hcl), pasted
// into hello with the binaries copied beside it, locks; a copied binary
// that is not its pin fails piship lock with INTEGRITY_FAILED naming it.
// (Stand-in bytes: piship lock and release only hash and copy them.)
func TestLockChecksPinnedInstallers(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	writeFile(t, filepath.Join(dir, "installers", "win32-x64"), "piship-install.exe", "stand-in installer")
	launch := writeFile(t, filepath.Join(dir, "installers", "win32-x64"), "piship-launch.exe", "stand-in launcher")
	block := `  installers {
    source = "installers"
    sha256 = {
      "win32-x64" = { installer = "` + canon.SHA256Hex([]byte("stand-in installer")) + `", launcher = "` + canon.SHA256Hex([]byte("stand-in launcher")) + `" }
    }
  }
`
	withInstallers(t, dir, block)
	code, out, stderr := piship(t, env, "lock", dir)
	if code != exitOK || !strings.Contains(out, ", installers for 1 target)") {
		t.Fatalf("lock: %d\n%s%s", code, out, stderr)
	}
	if lock, _ := os.ReadFile(filepath.Join(dir, "piship.lock")); !strings.Contains(string(lock), canon.SHA256Hex([]byte("stand-in launcher"))) {
		t.Fatalf("piship.lock does not pin the launcher:\n%s", lock)
	}
	writeFile(t, filepath.Dir(launch), "piship-launch.exe", "another launcher")
	code, out, stderr = piship(t, env, "lock", dir)
	if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED") || !strings.Contains(stderr, launch) || !strings.Contains(stderr, "make installers") {
		t.Fatalf("lock with a launcher that is not its pin: %d\n%s%s", code, out, stderr)
	}
}

// withInstallers adds block to dir's distribution.hcl.
func withInstallers(t *testing.T, dir, block string) {
	t.Helper()
	hcl, err := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	end := strings.LastIndex(string(hcl), "}")
	writeFile(t, dir, "distribution.hcl", string(hcl[:end])+block+string(hcl[end:]))
}

// piship release of hello through the built-in pipeline with its host's
// target pinned from an https source: the release directory carries the
// pinned stand-ins (not the binaries beside this piship), fetched once
// into the cache; install.sh's row names them with their digests; the
// archive and checksums.txt do not. (Stand-in bytes: release_publish only
// hashes and copies them.)
func TestReleaseShipsInstallersPinnedByURL(t *testing.T) {
	target := platform.HostTarget()
	inst, launch := "stand-in installer for "+target, "stand-in launcher for "+target
	files := map[string]string{"/v1/" + target + "/piship-install": inst, "/v1/" + target + "/piship-launch": launch,
		"/v1/" + target + "/piship-install.exe": inst, "/v1/" + target + "/piship-launch.exe": launch}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(body))
	}))
	defer srv.Close()
	old := installers.Client
	installers.Client = srv.Client()
	t.Cleanup(func() { installers.Client = old })

	env := buildEnv(t)
	dir := copyDist(t, "hello")
	withInstallers(t, dir, `  installers {
    source = "`+srv.URL+`/v1"
    sha256 = { "`+target+`" = { installer = "`+canon.SHA256Hex([]byte(inst))+`", launcher = "`+canon.SHA256Hex([]byte(launch))+`" } }
  }
`)
	if code, out, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := piship(t, env, "release", dir); code != exitOK {
		t.Fatalf("release: %d\n%s%s", code, out, stderr)
	}
	releases := filepath.Join(dir, "dist", "releases")
	name := "hello-1.0.0-" + target
	for n, want := range map[string]string{release.InstallerName(target): inst, release.LauncherName(target): launch} {
		got, err := os.ReadFile(filepath.Join(releases, name, n))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want the pinned %q", n, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(env["PISHIP_CACHE_HOME"], installers.DirName, canon.SHA256Hex([]byte(inst)))); err != nil {
		t.Errorf("the installer is not in the cache: %v", err)
	}
	sh, err := os.ReadFile(filepath.Join(releases, release.BootstrapShName))
	if err != nil || !strings.Contains(string(sh), "installer_sum='"+canon.SHA256Hex([]byte(inst))+"'") || !strings.Contains(string(sh), "launcher_sum='"+canon.SHA256Hex([]byte(launch))+"'") {
		t.Errorf("install.sh does not pin the shipped binaries (%v):\n%s", err, sh)
	}
	if sums, _ := os.ReadFile(filepath.Join(releases, name, "checksums.txt")); strings.Contains(string(sums), "piship-launch") {
		t.Errorf("checksums.txt lists the launcher:\n%s", sums)
	}
	// verify-release checks them against build-info.json; the names of a
	// win32 release's binaries are shipped binaries on any host too, held
	// to build-info.json, not taken for files of the release.
	if code, out, stderr := piship(t, env, "verify-release", filepath.Join(releases, name)); code != exitOK {
		t.Fatalf("verify-release: %d\n%s%s", code, out, stderr)
	}
	other := release.LauncherName("win32-x64")
	if other == release.LauncherName(target) {
		other = release.LauncherName("linux-x64")
	}
	writeFile(t, filepath.Join(releases, name), other, "stray")
	if code, out, stderr := piship(t, env, "verify-release", filepath.Join(releases, name)); code == exitOK || !strings.Contains(out+stderr, "not in build-info.json: "+other) {
		t.Fatalf("verify-release with a stray %s: %d\n%s%s", other, code, out, stderr)
	}
}
