package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/tuf"
)

// releaseArchive writes <id>-<version>-linux-x64.tar.gz holding a
// release.json install's rules accept and a payload file: what repo add
// reads (a full release is TestJSONMatchesDocs's, and costs a build).
func releaseArchive(t *testing.T, dir, version string) string {
	t.Helper()
	rj := `{"schema":"piship-release/v1","distribution":{"id":"hello","version":"` + version + `","command":"hello"},"lockSha256":"` +
		strings.Repeat("c", 64) + `","target":"linux-x64","created":"2026-01-01T00:00:00Z","qualification":"qualified",` +
		`"payload":{"path":"payload/","inventorySha256":"` + strings.Repeat("d", 64) + `","files":1},` +
		`"packageAudits":{"verdict":"not-applicable","locks":0,"reason":"no package locks"}}`
	p := filepath.Join(dir, "hello-"+version+"-linux-x64.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, nf := range [][2]string{{"release.json", rj}, {"payload/hello.js", "console.log('hello " + version + "')\n"}} {
		if err := tw.WriteHeader(&tar.Header{Name: nf[0], Mode: 0o644, Size: int64(len(nf[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(nf[1])); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{tw.Close(), zw.Close(), f.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A release engineer's whole round through the CLI: keys from keygen,
// init, two releases, the scheduled refresh, a root rotation to a new
// root key and a new targets key, status --json; then an installation
// that trusts only root 1 (stages/tuf's client against the directory)
// walks to root 2 and sees the newest release. Mistakes on the way are
// refused with their code, the file, and what to do.
func TestRepoCommandsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	key := func(name string) string {
		t.Helper()
		p := filepath.Join(dir, name+".pem")
		if code, _, stderr := piship(t, nil, "keygen", p, "--id", name); code != exitOK {
			t.Fatalf("keygen %s: exit %d\n%s", name, code, stderr)
		}
		return p
	}
	root1, release1, online, root2, release2 := key("root-1"), key("release-1"), key("online"), key("root-2"), key("release-2")
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := piship(t, nil, args...)
		if code != want {
			t.Fatalf("piship %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	refused := func(want int, code string, wants []string, args ...string) {
		t.Helper()
		_, stderr := run(want, args...)
		for _, w := range append([]string{code + ": "}, wants...) {
			if !strings.Contains(stderr, w) {
				t.Errorf("piship %s: stderr lacks %q:\n%s", strings.Join(args, " "), w, stderr)
			}
		}
	}

	refused(exitUsage, "USAGE_INVALID", []string{"none for snapshot, timestamp", "--key snapshot=FILE"},
		"repo", "init", repo, "--key", "root="+root1, "--key", "targets="+release1)
	refused(exitUsage, "USAGE_INVALID", []string{`"tragets" is not a role`}, "repo", "init", repo, "--key", "tragets="+release1)
	refused(exitUsage, "USAGE_INVALID", []string{"--threshold root=two"}, "repo", "init", repo, "--key", "root="+root1, "--key", "targets="+release1,
		"--key", "snapshot="+online, "--key", "timestamp="+online, "--threshold", "root=two")
	refused(exitUsage, "CONFIG_INVALID", []string{"the root role has 1 key and threshold 2"}, "repo", "init", repo, "--key", "root="+root1,
		"--key", "targets="+release1, "--key", "snapshot="+online, "--key", "timestamp="+online, "--threshold", "root=2")
	out, _ := run(exitOK, "repo", "init", repo, "--key", "root="+root1, "--key", "targets="+release1, "--key", "snapshot="+online, "--key", "timestamp="+online)
	if !strings.Contains(out, "root 1, targets 1, snapshot 1, timestamp 1") || !strings.Contains(out, "--expect-root sha256:") {
		t.Errorf("repo init printed:\n%s", out)
	}
	refused(exitUsage, "CONFIG_INVALID", []string{"already holds a TUF repository"}, "repo", "init", repo, "--key", "root="+root1,
		"--key", "targets="+release1, "--key", "snapshot="+online, "--key", "timestamp="+online)
	initialRoot, err := os.ReadFile(filepath.Join(repo, "metadata", "1.root.json"))
	if err != nil {
		t.Fatal(err)
	}

	a1, a2 := releaseArchive(t, dir, "1.0.0"), releaseArchive(t, dir, "1.1.0")
	// Without the targets key nothing is published.
	refused(exitUsage, "CONFIG_INVALID", []string{"signing targets (root 1) needs 1 of its 1 keys", "give the targets keys' files"},
		"repo", "add", repo, a1, "--key", online)
	run(exitOK, "repo", "add", repo, a1, "--key", release1, "--key", online)
	out, _ = run(exitOK, "repo", "add", repo, a2, "--key", release1, "--key", online)
	if !strings.Contains(out, "published stable/hello-1.1.0-linux-x64.tar.gz 1.1.0 for linux-x64 on stable") {
		t.Errorf("repo add printed:\n%s", out)
	}
	refused(exitUsage, "CONFIG_INVALID", []string{filepath.Join(dir, "no.tar.gz")}, "repo", "add", repo, filepath.Join(dir, "no.tar.gz"), "--key", release1, "--key", online)
	out, _ = run(exitOK, "repo", "refresh", repo, "--key", online)
	if !strings.Contains(out, "root 1, targets 3, snapshot 4, timestamp 4") {
		t.Errorf("repo refresh printed:\n%s", out)
	}
	// Root 2 signed by root 1's key alone is refused: the new root key
	// must sign it too (and nothing is written).
	refused(exitUsage, "CONFIG_INVALID", []string{"root 2 is not signed by a threshold (1) of root 1's root keys"},
		"repo", "rotate-root", repo, "--key", root2, "--new-key", "targets="+release2, "--key", online)
	out, _ = run(exitOK, "repo", "rotate-root", repo, "--key", root1, "--key", online, "--new-key", "root="+root2, "--new-key", "targets="+release2)
	if !strings.Contains(out, "root 1 -> 2; root 2, targets 4, snapshot 5, timestamp 5") {
		t.Errorf("repo rotate-root printed:\n%s", out)
	}

	code, stdout, stderr := piship(t, nil, "repo", "status", repo, "--json")
	var st struct {
		Schema, InitialRootSHA256 string
		Roles                     []struct {
			Role      string
			Version   int64
			Threshold int
			KeyIDs    []string `json:"keyIds"`
		}
		Releases []struct{ Path, Version string }
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
		t.Fatalf("repo status --json: exit %d\n%s%s", code, stdout, stderr)
	}
	k2, _ := tuf.ReadKey(release2)
	id2, _ := k2.TUFKeyID()
	if st.Schema != "piship-repo-status/v1" || st.InitialRootSHA256 != tuf.RootSHA256(initialRoot) || len(st.Roles) != 4 ||
		st.Roles[0].Version != 2 || st.Roles[1].Role != "targets" || st.Roles[1].Version != 4 || len(st.Roles[1].KeyIDs) != 1 || st.Roles[1].KeyIDs[0] != id2 ||
		len(st.Releases) != 2 || st.Releases[1].Version != "1.1.0" {
		t.Fatalf("repo status --json:\n%s", stdout)
	}

	// The old targets key is out of every role: revoking it again is
	// refused by name, revoking the online key would leave snapshot
	// keyless.
	k1, _ := tuf.ReadKey(release1)
	id1, _ := k1.TUFKeyID()
	refused(exitUsage, "CONFIG_INVALID", []string{"key " + id1 + " is in no role of root 2"}, "repo", "revoke", repo, "--key-id", id1, "--key", root2)
	ko, _ := tuf.ReadKey(online)
	ido, _ := ko.TUFKeyID()
	refused(exitUsage, "CONFIG_INVALID", []string{"with 0 keys for threshold 1"}, "repo", "revoke", repo, "--key-id", ido, "--key", root2)
	refused(exitUsage, "USAGE_INVALID", []string{`--role "target"`}, "repo", "rotate-key", repo, "--role", "target", "--new-key", release1, "--key", root2)

	// An installation that trusts root 1 only, by its digest.
	res, err := tuf.Update(context.Background(), tuf.UpdateOptions{Repository: repo, TrustDir: filepath.Join(dir, "trust"),
		ExpectRootSHA256: "sha256:" + tuf.RootSHA256(initialRoot), Channel: "stable", Target: "linux-x64", Active: "1.0.0",
		DownloadDir: filepath.Join(dir, "downloads")})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(a2)
	got, _ := os.ReadFile(res.Archive)
	if res.Release.Version != "1.1.0" || res.RootVersion != 2 || res.TargetsVersion != 4 || string(got) != string(want) {
		t.Fatalf("update after the rotation: %+v", res)
	}

	// rotate-key: a new timestamp key, by the current root key; the
	// installation follows again without a release.
	online2 := key("online-2")
	out, _ = run(exitOK, "repo", "rotate-key", repo, "--role", "timestamp", "--new-key", online2, "--key", root2, "--key", online)
	if !strings.Contains(out, "root 2 -> 3") {
		t.Errorf("repo rotate-key printed:\n%s", out)
	}
	refused(exitUsage, "CONFIG_INVALID", []string{"signing timestamp (root 3) needs 1 of its 1 keys"}, "repo", "refresh", repo, "--key", online)
	run(exitOK, "repo", "refresh", repo, "--key", online, "--key", online2)
	res, err = tuf.Update(context.Background(), tuf.UpdateOptions{Repository: repo, TrustDir: filepath.Join(dir, "trust"),
		Channel: "stable", Target: "linux-x64", Active: "1.1.0", Check: true})
	if err != nil || !res.UpToDate || res.RootVersion != 3 {
		t.Fatalf("update after rotate-key: %+v %v", res, err)
	}
	out, _ = run(exitOK, "repo", "status", repo)
	if !strings.Contains(out, "root 1 sha256:"+tuf.RootSHA256(initialRoot)) || !strings.Contains(out, "timestamp version 7") {
		t.Errorf("repo status printed:\n%s", out)
	}
}
