package tuf

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// tufjsDir is the npm project of the tuf-js client (testdata/tufjs at the
// repository root): package.json, package-lock.json and client.mjs.
const tufjsDir = "../../testdata/tufjs"

// TestTufJSAgrees has tuf-js, an independent implementation of the TUF
// client workflow, verify a repository stages/tuf wrote: the root chain
// walk from root 1 to root 2 (new root and targets keys), timestamp,
// snapshot, targets, and a release archive under its consistent-snapshot
// name. go-tuf is on both sides of every other test here, so a layout or
// encoding that only go-tuf accepts (target naming, canonical JSON, key
// ids, custom fields) would pass them all; this one would fail. The
// tampered archive (same length, other bytes) and a root 3 signed only by
// a new key show tuf-js checks rather than accepting whatever the server
// sends.
func TestTufJSAgrees(t *testing.T) {
	node, modules := tufjsClient(t)

	k1, k2 := newKeySet(t, "one"), newKeySet(t, "two")
	r := initRepo(t, k1)
	archive := writeTarGz(t, "hello-1.0.0-linux-x64.tar.gz")
	lock := strings.Repeat("cd", 32)
	if err := r.AddReleases([]Release{{Archive: archive, Version: "1.0.0", Target: "linux-x64", LockSHA256: lock, Channel: "stable"}},
		[]Key{k1.targets}, []Key{k1.snapshot}, []Key{k1.timestamp}); err != nil {
		t.Fatal(err)
	}
	// Root 2: new root and targets keys, signed by both root keys; targets,
	// snapshot and timestamp re-signed, so tuf-js must walk to root 2 to
	// verify targets at all.
	if err := r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleRoot: {pub(k2.root)}, RoleTargets: {pub(k2.targets)}}},
		[]Key{k1.root, k2.root, k2.targets, k1.snapshot, k1.timestamp}); err != nil {
		t.Fatal(err)
	}
	trusted := filepath.Join(t.TempDir(), "root.json")
	root1, err := r.RootBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trusted, root1, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(r.Dir))) // 127.0.0.1
	defer srv.Close()

	want, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(want)
	target := TargetPath("stable", archive)
	run := func(out string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join(modules, "client.mjs"), srv.URL+"/metadata", srv.URL+"/targets", trusted, target, out)
		// tuf-js's fetcher honours http_proxy and friends: without them it
		// talks to the loopback server itself on a machine that has a proxy.
		for _, kv := range os.Environ() {
			if name, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(name), "_proxy") && strings.ToLower(name) != "proxy" {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return stderr.String(), err
		}
		return stdout.String(), nil
	}

	out := filepath.Join(t.TempDir(), "download.tar.gz")
	stdout, err := run(out)
	if err != nil {
		t.Fatalf("tuf-js refused the repository piship wrote: %v\n%s", err, stdout)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("tuf-js downloaded %d bytes (%v), want the archive's %d", len(got), err, len(want))
	}
	var info struct {
		RootVersion int64             `json:"rootVersion"`
		Path        string            `json:"path"`
		Length      int64             `json:"length"`
		Hashes      map[string]string `json:"hashes"`
		Custom      Custom            `json:"custom"`
	}
	if err := json.Unmarshal([]byte(stdout), &info); err != nil {
		t.Fatalf("client.mjs printed %q: %v", stdout, err)
	}
	wantCustom := Custom{Version: "1.0.0", Target: "linux-x64", LockSHA256: lock, Channel: "stable"}
	if info.RootVersion != 2 || info.Path != target || info.Length != int64(len(want)) ||
		info.Hashes["sha256"] != hex.EncodeToString(sum[:]) || info.Custom != wantCustom {
		t.Fatalf("tuf-js read %+v; want root 2, %s, %d bytes, sha256 %x, %+v", info, target, len(want), sum, wantCustom)
	}

	// The server's archive tampered: same length, one byte flipped.
	served := filepath.Join(r.Dir, "targets", "stable", hex.EncodeToString(sum[:])+"."+filepath.Base(archive))
	bad := bytes.Clone(want)
	bad[len(bad)/2] ^= 0xff
	if err := os.WriteFile(served, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(t.TempDir(), "tampered.tar.gz")
	stderr, err := run(out2)
	if err == nil {
		t.Fatalf("tuf-js accepted a tampered archive: %s", stderr)
	}
	// tuf-js's words for a length-preserving change: the signed sha256,
	// then the one it computed.
	if !strings.Contains(stderr, "Expected hash "+hex.EncodeToString(sum[:])+" but got") {
		t.Fatalf("tuf-js refused the tampered archive for another reason: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(out2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tuf-js wrote the tampered archive to %s (%v)", out2, err)
	}

	// Root 3 signed only by a new key, not by root 2's: tuf-js must stop
	// the chain walk there, as go-tuf does (TestRootRotationWithNewKeySetsNeedsNoRelease).
	k3 := newKeySet(t, "three")
	next, err := metadata.Root().FromBytes(mustBytes(r.Root))
	if err != nil {
		t.Fatal(err)
	}
	next.Signed.Version = 3
	for _, id := range append([]string(nil), next.Signed.Roles[RoleRoot].KeyIDs...) {
		if err := next.Signed.RevokeKey(id, RoleRoot); err != nil {
			t.Fatal(err)
		}
	}
	pk, err := metadata.KeyFromPublicKey(pub(k3.root))
	if err != nil {
		t.Fatal(err)
	}
	if err := next.Signed.AddKey(pk, RoleRoot); err != nil {
		t.Fatal(err)
	}
	next.ClearSignatures()
	if err := signWith(next, k3.root); err != nil {
		t.Fatal(err)
	}
	data, err := next.ToBytes(true)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(r.metaPath("3.root.json"), data); err != nil {
		t.Fatal(err)
	}
	stderr, err = run(filepath.Join(t.TempDir(), "unrooted.tar.gz"))
	if err == nil || !strings.Contains(stderr, "root was signed by 0/1 keys") {
		t.Fatalf("tuf-js on root 3 signed only by a new key: %v\n%s", err, stderr)
	}
}

// writeTarGz makes a small real release archive: a gzipped tar holding a
// package.json and an index.js, as a Node application distribution has.
func writeTarGz(t *testing.T, name string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"hello/package.json", `{"name":"hello","version":"1.0.0","main":"index.js"}` + "\n"},
		{"hello/index.js", "console.log('hello from 1.0.0');\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tufjsClient returns node and a directory holding client.mjs beside the
// node_modules of testdata/tufjs's lock. The modules are installed once
// per lock (`npm ci`, ~10 s cold) into the dev cache, where make test
// keeps Jaeger, as tufjs-<first 12 hex of the lock's sha256>: into a
// temporary sibling first, renamed into place when complete, so a killed
// or failed install is never taken for a good one, and two runs that
// race each keep a whole copy. client.mjs is copied per test beside a
// symlink to the cached node_modules (Node resolves imports from the
// script's own directory), so editing the script needs no new install.
func tufjsClient(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("TestTufJSAgrees needs Node.js 20 (node and npm on PATH) to run tuf-js: %v; install Node.js 20 (e.g. apt-get install nodejs npm)", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("TestTufJSAgrees needs npm on PATH to install tuf-js from %s: %v; install npm with Node.js 20", tufjsDir, err)
	}
	lock, err := os.ReadFile(filepath.Join(tufjsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	cached := filepath.Join(devCache(t), "tufjs-"+hex.EncodeToString(sum[:])[:12])
	if _, err := os.Stat(filepath.Join(cached, "node_modules", "tuf-js", "package.json")); err != nil {
		npmCI(t, npm, cached)
	}

	dir = t.TempDir()
	script, err := os.ReadFile(filepath.Join(tufjsDir, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cached, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return node, dir
}

// npmCI installs testdata/tufjs's lock into dst through a temporary
// sibling and a rename.
func npmCI(t *testing.T, npm, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(tufjsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	// --ignore-scripts: nothing of tuf-js's tree needs an install script,
	// and none should run on a developer's machine from a test.
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci of %s (into %s) failed: %v\n%s\nthe registry must be reachable once; later runs reuse %s", tufjsDir, tmp, err, out, dst)
	}
	t.Logf("npm ci of tuf-js into %s: %s", dst, time.Since(start).Round(time.Millisecond))
	if err := os.Rename(tmp, dst); err != nil {
		// Another run renamed its copy first: use it if it is whole.
		if _, serr := os.Stat(filepath.Join(dst, "node_modules", "tuf-js", "package.json")); serr != nil {
			t.Fatalf("cannot put the tuf-js install at %s: %v; remove %s and run again", dst, err, dst)
		}
	}
}

// devCache is the directory make test keeps its downloads in: the
// Makefile's PISHIP_DEV_CACHE, by default $XDG_CACHE_HOME/piship-dev or
// ~/.cache/piship-dev (as jaegerBinary in cmd/piship reads it).
func devCache(t *testing.T) string {
	t.Helper()
	if c := os.Getenv("PISHIP_DEV_CACHE"); c != "" {
		return c
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatalf("locating the dev cache for tuf-js: %v; set PISHIP_DEV_CACHE", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "piship-dev")
}
