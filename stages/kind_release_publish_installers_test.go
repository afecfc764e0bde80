package stages

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// foreignTarget is a target that is not this host's.
func foreignTarget() string {
	if platform.HostTarget() == "win32-x64" {
		return "linux-arm64"
	}
	return "win32-x64"
}

// stagedRelease opens a staging directory holding a release of target
// whose payload's lock is l, with an archive and its sidecar, as
// release_publish finds it after the archive stage. It returns the
// configuration to publish it with.
func stagedRelease(t *testing.T, target string, l *distribution.Lock) ReleasePublishConfig {
	t.Helper()
	out := t.TempDir()
	name := "hello-1.0.0-" + target
	s, err := payload.Begin(context.Background(), out, "release-"+name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir := filepath.Join(s.Dir, name)
	if err := os.MkdirAll(filepath.Join(dir, "payload"), 0o755); err != nil {
		t.Fatal(err)
	}
	l.Schema = distribution.LockSchema
	mustWrite(t, filepath.Join(dir, "payload", distribution.LockFileName), l.Marshal())
	archive := []byte("not really a V2 archive: release_publish only moves it")
	mustWrite(t, filepath.Join(s.Dir, name+".tar.zst"), archive)
	mustWrite(t, filepath.Join(s.Dir, name+".tar.zst.sha256"), []byte(canon.SHA256Hex(archive)+"  "+name+".tar.zst\n"))
	return ReleasePublishConfig{Staging: s.Dir, Name: name, Releases: filepath.Join(out, "releases"), ShipTools: true, Target: target, CacheHome: t.TempDir()}
}

func mustWrite(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pinnedInstallers writes stand-in binaries for target under
// dist/installers/<target>/ as make installers lays them out and returns
// the installers block pinning them.
func pinnedInstallers(t *testing.T, dist, target string) (*distribution.Installers, [2][]byte) {
	inst, launch := distribution.InstallerSourceFiles(target)
	bins := [2][]byte{[]byte("stand-in installer for " + target), []byte("stand-in launcher for " + target)}
	mustWrite(t, filepath.Join(dist, "installers", target, inst), bins[0])
	mustWrite(t, filepath.Join(dist, "installers", target, launch), bins[1])
	return &distribution.Installers{Source: "installers", SHA256: map[string]distribution.InstallerPins{
		target: {Installer: canon.SHA256Hex(bins[0]), Launcher: canon.SHA256Hex(bins[1])},
	}}, bins
}

func publish(t *testing.T, cfg ReleasePublishConfig) (ReleasePublishOutputs, string, error) {
	t.Helper()
	var log bytes.Buffer
	inv := &stage.Invocation{Pipeline: "release", Name: "publish", Dir: t.TempDir(), Log: &log, Getenv: func(string) string { return "" }}
	out, err := ReleasePublish{}.Run(context.Background(), inv, cfg)
	return out, log.String(), err
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A release of another target than the host's ships exactly the two
// binaries the installers block pins for that target, under the names
// install.sh (and install.ps1) expect, and the bootstrap rows name them
// with their digests.
func TestReleasePublishShipsPinnedInstallersOfForeignTarget(t *testing.T) {
	target := foreignTarget()
	dist := t.TempDir()
	pins, bins := pinnedInstallers(t, dist, target)
	// Another target's pins are in the block too: not shipped here.
	other, _ := pinnedInstallers(t, dist, "darwin-arm64")
	pins.SHA256["darwin-arm64"] = other.SHA256["darwin-arm64"]
	cfg := stagedRelease(t, target, &distribution.Lock{Installers: pins})
	cfg.Distribution = dist
	out, log, err := publish(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{release.InstallerName(target), release.LauncherName(target)}
	got := dirNames(t, out.Path)
	if want := append([]string{"payload"}, names...); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("release directory holds %v, want %v", got, want)
	}
	for i, n := range names {
		data, err := os.ReadFile(filepath.Join(out.Path, n))
		if err != nil || !bytes.Equal(data, bins[i]) {
			t.Fatalf("%s = %q (%v), want the pinned %q", n, data, err, bins[i])
		}
		if fi, _ := os.Stat(filepath.Join(out.Path, n)); fi.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s is not executable: %v", n, fi.Mode())
		}
	}
	wantTools := []release.ToolDigest{
		{Name: names[0], SHA256: canon.SHA256Hex(bins[0]), Bytes: int64(len(bins[0]))},
		{Name: names[1], SHA256: canon.SHA256Hex(bins[1]), Bytes: int64(len(bins[1]))},
	}
	if !slices.Equal(out.Tools, wantTools) {
		t.Fatalf("tools = %+v, want %+v", out.Tools, wantTools)
	}
	if strings.Contains(log, "no installer") {
		t.Errorf("log says no installer although one was shipped:\n%s", log)
	}
	b, err := release.ScanBootstrap(cfg.Releases, "hello", "1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Archives) != 1 || b.Archives[0].InstallerSHA256 != wantTools[0].SHA256 || b.Archives[0].LauncherSHA256 != wantTools[1].SHA256 {
		t.Fatalf("install.sh rows = %+v", b.Archives)
	}
}

// A pinned binary whose bytes are not the pin fails the publication with
// INTEGRITY_FAILED naming the file and what to do; neither binary ships.
func TestReleasePublishRefusesInstallerDigestMismatch(t *testing.T) {
	target := foreignTarget()
	dist := t.TempDir()
	pins, _ := pinnedInstallers(t, dist, target)
	_, launch := distribution.InstallerSourceFiles(target)
	tampered := filepath.Join(dist, "installers", target, launch)
	mustWrite(t, tampered, []byte("not the launcher that was pinned"))
	cfg := stagedRelease(t, target, &distribution.Lock{Installers: pins})
	cfg.Distribution = dist
	_, _, err := publish(t, cfg)
	if errcode.Of(err) != errcode.IntegrityFailed {
		t.Fatalf("err = %v, want %s", err, errcode.IntegrityFailed)
	}
	for _, want := range []string{tampered, canon.SHA256Hex([]byte("not the launcher that was pinned")), pins.SHA256[target].Launcher, "make installers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if names := dirNames(t, filepath.Join(cfg.Staging, cfg.Name)); !slices.Equal(names, []string{"payload"}) {
		t.Fatalf("the release directory holds %v after a mismatch, want only payload", names)
	}
	if _, err := os.Stat(filepath.Join(cfg.Releases, cfg.Name)); err == nil {
		t.Fatal("the release was published although its installer does not match its pin")
	}
}

// A directory source needs the distribution directory; without it the
// stage says what to set instead of guessing.
func TestReleasePublishInstallersNeedDistribution(t *testing.T) {
	target := foreignTarget()
	pins, _ := pinnedInstallers(t, t.TempDir(), target)
	cfg := stagedRelease(t, target, &distribution.Lock{Installers: pins})
	_, _, err := publish(t, cfg)
	if errcode.Of(err) != errcode.ConfigInvalid || !strings.Contains(err.Error(), "set distribution") {
		t.Fatalf("err = %v, want %s saying to set distribution", err, errcode.ConfigInvalid)
	}
}

// A release of another target without pins ships no binary, says so in
// the log, and its install.sh row has no installer (the script then needs a
// piship on PATH, and says that).
func TestReleasePublishForeignTargetWithoutPinsShipsNone(t *testing.T) {
	target := foreignTarget()
	dist := t.TempDir()
	// Pins for another target only.
	pins, _ := pinnedInstallers(t, dist, "darwin-arm64")
	cfg := stagedRelease(t, target, &distribution.Lock{Installers: pins})
	cfg.Distribution = dist
	out, log, err := publish(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 0 {
		t.Fatalf("tools = %+v, want none", out.Tools)
	}
	if names := dirNames(t, out.Path); !slices.Equal(names, []string{"payload"}) {
		t.Fatalf("release directory holds %v, want only payload", names)
	}
	if want := fmt.Sprintf("no installer for %s", target); !strings.Contains(log, want) || !strings.Contains(log, "make installers") {
		t.Fatalf("log does not say %q and how to pin them:\n%s", want, log)
	}
	// The release's last stage writes the set and install.sh.
	sum, err := cache.HashFile(out.Archive)
	if err != nil {
		t.Fatal(err)
	}
	inv := &stage.Invocation{Pipeline: "release", Name: "set", Dir: t.TempDir(), Log: io.Discard, Getenv: func(string) string { return "" }}
	if _, err := (ReleaseSet{}).Run(context.Background(), inv, ReleaseSetConfig{Releases: cfg.Releases, ID: "hello", Version: "1.0.0", Archives: map[string]string{out.Archive: sum}}); err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile(filepath.Join(cfg.Releases, release.BootstrapShName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sh), target+") archive='"+cfg.Name+".tar.zst'") || !strings.Contains(string(sh), "installer=''") {
		t.Fatalf("install.sh's row for %s has an installer:\n%s", target, sh)
	}
}

// Publishing a release over one of the same name in the other format (an
// earlier piship's .tar.gz) replaces it: the releases directory then
// holds one archive of the release, the one just written, with its
// sidecar.
func TestReleasePublishReplacesTheOtherFormat(t *testing.T) {
	target := foreignTarget()
	cfg := stagedRelease(t, target, &distribution.Lock{})
	cfg.ShipTools = false
	old := filepath.Join(cfg.Releases, cfg.Name+".tar.gz")
	mustWrite(t, old, []byte("an earlier release"))
	mustWrite(t, old+".sha256", []byte(canon.SHA256Hex([]byte("an earlier release"))+"  "+cfg.Name+".tar.gz\n"))
	out, _, err := publish(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out.Archive != filepath.Join(cfg.Releases, cfg.Name+".tar.zst") {
		t.Fatalf("archive %s", out.Archive)
	}
	var files []string
	for _, n := range dirNames(t, cfg.Releases) {
		if strings.HasPrefix(n, cfg.Name+".") {
			files = append(files, n)
		}
	}
	if want := []string{cfg.Name + ".tar.zst", cfg.Name + ".tar.zst.sha256"}; !slices.Equal(files, want) {
		t.Fatalf("releases holds %v, want %v", files, want)
	}
}
