package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release/releasejson"
)

// A release split over two runners and merged equals one run over both
// targets on the same host: hello released for linux-x64 and win32-x64 in
// one run (A); in copies of the checkout, `--target linux-x64` (B, runner
// named by --runner) and `--target win32-x64` (C, runner from
// RUNNER_NAME) each push their target to a real registry; `--merge` in a
// third copy (D) writes the release set, and the set file, every archive
// and sidecar are A's byte for byte, release.json names the runner of
// each target, and `repo add` of either set into a fresh TUF repository
// (the same key) gives the same targets. A merge before C pushed fails
// with TARGET_NOT_PUSHED naming win32-x64 and writes nothing; targets
// built from another piship.lock, a release directory changed after its
// archive and an artifact holding a file of no release are refused.
func TestRegistrySplitMerge(t *testing.T) {
	reg, err := fixture.StartRegistry(t.TempDir())
	if err != nil {
		t.Fatalf("the registry: %v", err)
	}
	t.Cleanup(func() { reg.Stop() })
	ref := reg.Ref("acme/hello")
	env := buildEnv(t)

	// One checkout, four clones of it at different paths.
	src := copyDist(t, "hello")
	setTargets(t, env, src, "linux-x64", "win32-x64")
	clone := func(name string) string {
		dst := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	a, b, c, d, e := clone("a"), clone("b"), clone("c"), clone("d"), clone("e")

	if code, _, stderr := piship(t, env, "release", a, "--runner", "ci-host"); code != exitOK {
		t.Fatalf("release A: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := piship(t, env, "release", b, "--target", "linux-x64", "--runner", "ci-host", "--to", ref, "--json")
	if code != exitOK || !strings.Contains(stderr, "linux-x64: pushed to "+ref+":1.0.0-linux-x64 (sha256:") {
		t.Fatalf("release B: exit %d\n%s", code, stderr)
	}
	var doc ReleaseDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Targets) != 1 || doc.Targets[0].Target != "linux-x64" ||
		doc.Targets[0].Runner != "ci-host" || !strings.HasPrefix(doc.Targets[0].Registry, ref+"@sha256:") {
		t.Fatalf("release B --json: %v\n%s", err, stdout)
	}
	if _, err := os.Stat(filepath.Join(b, "dist", "releases", "hello-1.0.0-win32-x64.tar.zst")); !os.IsNotExist(err) {
		t.Fatalf("--target linux-x64 released win32-x64 too: %v", err)
	}

	// C has not pushed yet: the merge names the missing target and writes nothing.
	code, _, stderr = piship(t, env, "release", d, "--merge", "--from", ref)
	if code != exitFailed || !strings.Contains(stderr, "TARGET_NOT_PUSHED") || !strings.Contains(stderr, "1 of 2 targets (win32-x64)") ||
		!strings.Contains(stderr, "--target win32-x64 --to "+ref) || strings.Contains(stderr, "(linux-x64") {
		t.Fatalf("merge before win32-x64 was pushed: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(d, "dist", "releases", "hello-1.0.0.SHA256SUMS")); !os.IsNotExist(err) {
		t.Fatalf("a failed merge wrote the set: %v", err)
	}

	envC := map[string]string{"RUNNER_NAME": "ci-host"}
	for k, v := range env {
		envC[k] = v
	}
	if code, _, stderr := piship(t, envC, "release", c, "--target", "win32-x64", "--to", ref); code != exitOK {
		t.Fatalf("release C: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr = piship(t, env, "release", d, "--merge", "--from", ref, "--json")
	if code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	var merged ReleaseDoc
	if err := json.Unmarshal([]byte(stdout), &merged); err != nil || len(merged.Targets) != 2 {
		t.Fatalf("merge --json: %v\n%s", err, stdout)
	}
	for _, mt := range merged.Targets {
		if mt.Runner != "ci-host" || !strings.HasPrefix(mt.Registry, ref+"@sha256:") {
			t.Errorf("merge --json %s: runner %q, registry %q", mt.Target, mt.Runner, mt.Registry)
		}
	}

	ra, rd := filepath.Join(a, "dist", "releases"), filepath.Join(d, "dist", "releases")
	same := []string{"hello-1.0.0.SHA256SUMS", "install.sh", "install.ps1"}
	for _, tg := range []string{"linux-x64", "win32-x64"} {
		n := "hello-1.0.0-" + tg
		same = append(same, n+".tar.zst", n+".tar.zst.sha256", n+"/release.json", n+"/checksums.txt", n+"/payload/bin/hello")
		var rel releasejson.Metadata
		if err := readJSONFile(filepath.Join(rd, n, "release.json"), &rel); err != nil || rel.Runner != "ci-host" || rel.Target != tg {
			t.Errorf("merged %s release.json: runner %q, target %s (%v)", n, rel.Runner, rel.Target, err)
		}
	}
	for _, f := range same {
		x, errA := os.ReadFile(filepath.Join(ra, f))
		y, errD := os.ReadFile(filepath.Join(rd, f))
		if errA != nil || errD != nil || string(x) != string(y) {
			t.Errorf("%s: the merge's is not the single run's (%v, %v)", f, errA, errD)
		}
	}
	// The pulled release directory keeps its executables.
	if fi, err := os.Stat(filepath.Join(rd, "hello-1.0.0-linux-x64", "payload", "bin", "hello")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("merged payload/bin/hello: %v %v", fi, err)
	}
	if code, _, stderr := piship(t, env, "verify-release", filepath.Join(rd, "hello-1.0.0.SHA256SUMS")); code != exitOK || !strings.Contains(stderr, "2 archives") {
		t.Errorf("verify-release of the merged set: exit %d\n%s", code, stderr)
	}

	// Targets released from another lock (E's distribution.hcl changed
	// and relocked) are refused by D's merge, naming both digests.
	hcl, _ := os.ReadFile(filepath.Join(e, "distribution.hcl"))
	writeFile(t, e, "distribution.hcl", strings.Replace(string(hcl), `name    = "Hello"`, `name    = "Hello, again"`, 1))
	if code, _, stderr := piship(t, env, "lock", e); code != exitOK {
		t.Fatalf("lock E: %s", stderr)
	}
	other := reg.Ref("acme/other-lock")
	if code, _, stderr := piship(t, env, "release", e, "--target", "linux-x64", "--target", "win32-x64", "--to", other); code != exitOK {
		t.Fatalf("release E: exit %d\n%s", code, stderr)
	}
	code, _, stderr = piship(t, env, "release", d, "--merge", "--from", other, "--out", filepath.Join(t.TempDir(), "out"))
	if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED") || !strings.Contains(stderr, "built from a piship.lock with sha256") {
		t.Errorf("merge of targets built from another lock: exit %d\n%s", code, stderr)
	}

	// A pulled target is held to its sidecar and to what a release holds
	// beside its archive: a sidecar that is not the archive's, a payload
	// file beside the archive (the directory is the archive's, extracted),
	// a file of no release, or a damaged archive is refused, naming the
	// target.
	for _, tc := range []struct {
		name, want string
		tamper     func(dir string)
	}{
		{"another sidecar", "its sidecar says", func(dir string) {
			writeFile(t, dir, "hello-1.0.0-linux-x64.tar.zst.sha256", strings.Repeat("0", 64)+"  hello-1.0.0-linux-x64.tar.zst\n")
		}},
		{"a payload file beside the archive", "hello-1.0.0-linux-x64/payload/resources/motd.txt, which is no part of the target's release beside its archive", func(dir string) {
			writeFile(t, filepath.Join(dir, "hello-1.0.0-linux-x64", "payload", "resources"), "motd.txt", "not the archive's\n")
		}},
		{"a file of no release", "evil.sh, which is no part of the target's release", func(dir string) {
			writeFile(t, dir, "evil.sh", "#!/bin/sh\n")
		}},
		{"a damaged archive", "the archive: ", func(dir string) {
			p := filepath.Join(dir, "hello-1.0.0-linux-x64.tar.zst")
			b, _ := os.ReadFile(p)
			b[len(b)/2] ^= 0xff
			writeFile(t, dir, "hello-1.0.0-linux-x64.tar.zst", string(b))
			writeFile(t, dir, "hello-1.0.0-linux-x64.tar.zst.sha256", canon.SHA256Hex(b)+"  hello-1.0.0-linux-x64.tar.zst\n")
		}},
	} {
		to := reg.Ref("acme/" + strings.ReplaceAll(tc.name, " ", "-"))
		copyTarget(t, ref, to, "linux-x64", tc.tamper)
		copyTarget(t, ref, to, "win32-x64", func(string) {})
		code, _, stderr := piship(t, env, "release", d, "--merge", "--from", to, "--out", filepath.Join(t.TempDir(), "out"))
		if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED: release --merge: hello-1.0.0-linux-x64: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("merge of %s: exit %d\n%s", tc.name, code, stderr)
		}
	}
	// The untouched copy merges: the copying is not what was refused.
	control := reg.Ref("acme/control")
	copyTarget(t, ref, control, "linux-x64", func(string) {})
	copyTarget(t, ref, control, "win32-x64", func(string) {})
	if code, _, stderr := piship(t, env, "release", d, "--merge", "--from", control, "--out", filepath.Join(t.TempDir(), "out")); code != exitOK {
		t.Errorf("merge of an untouched copy: exit %d\n%s", code, stderr)
	}

	// The TUF targets: each set added to a fresh repository of one key.
	key := filepath.Join(t.TempDir(), "key.pem")
	if code, _, stderr := piship(t, env, "keygen", key); code != exitOK {
		t.Fatalf("keygen: %s", stderr)
	}
	targetsOf := func(set string) string {
		t.Helper()
		repo := filepath.Join(t.TempDir(), "repo")
		if code, _, stderr := piship(t, env, "repo", "init", repo, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key); code != exitOK {
			t.Fatalf("repo init: %s", stderr)
		}
		if code, _, stderr := piship(t, env, "repo", "add", repo, set, "--key", key); code != exitOK {
			t.Fatalf("repo add %s: %s", set, stderr)
		}
		return tufTargets(t, filepath.Join(repo, "metadata"))
	}
	ta, td := targetsOf(filepath.Join(ra, "hello-1.0.0.SHA256SUMS")), targetsOf(filepath.Join(rd, "hello-1.0.0.SHA256SUMS"))
	if ta != td || !strings.Contains(ta, "hello-1.0.0-win32-x64") {
		t.Errorf("TUF targets of the single run:\n%s\nof the merge:\n%s", ta, td)
	}
}

// tufTargets is the signed targets (names, lengths, hashes, custom
// fields) of the newest N.targets.json in a repository's metadata, as
// indented JSON.
func tufTargets(t *testing.T, metadata string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(metadata, "*.targets.json"))
	slices.SortFunc(files, func(x, y string) int { return len(x) - len(y) })
	if len(files) == 0 {
		t.Fatalf("no targets.json in %s", metadata)
	}
	newest := files[len(files)-1]
	for _, f := range files {
		if len(f) == len(newest) && f > newest {
			newest = f
		}
	}
	var md struct {
		Signed struct {
			Targets map[string]any `json:"targets"`
		} `json:"signed"`
	}
	if err := readJSONFile(newest, &md); err != nil || len(md.Signed.Targets) == 0 {
		t.Fatalf("%s: %v (%d targets)", newest, err, len(md.Signed.Targets))
	}
	out, _ := json.MarshalIndent(md.Signed.Targets, "", "  ")
	return string(out)
}

// copyTarget copies the artifact of hello 1.0.0's target from the
// registry repository from to to, with tamper applied to its files first
// (as someone with write access to the registry could).
func copyTarget(t *testing.T, from, to, target string, tamper func(dir string)) {
	t.Helper()
	ctx := context.Background()
	open := func(s string) *oci.Repo {
		ref, err := oci.ParseRef(s)
		if err != nil {
			t.Fatal(err)
		}
		r, err := oci.Open(ref, oci.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	src, dst := open(from), open(to)
	a, err := src.FetchTarget(ctx, "1.0.0", target)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := src.PullTarget(ctx, a, dir); err != nil {
		t.Fatal(err)
	}
	tamper(dir)
	var files []oci.File
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		rel, _ := filepath.Rel(dir, p)
		files = append(files, oci.File{Name: filepath.ToSlash(rel), Path: p, Exec: err == nil && info.Mode().Perm()&0o100 != 0})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.PushTarget(ctx, files, a.Manifest.Annotations); err != nil {
		t.Fatal(err)
	}
}

// The flags of a split release that cannot go together are refused
// before anything runs, each saying what to do; a --target the
// distribution does not declare is refused naming the declared ones.
func TestReleaseSplitFlags(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--merge"}, "USAGE_INVALID: --merge needs --from oci://host[:port]/repository"},
		{[]string{"--from", "oci://127.0.0.1:1/r"}, "USAGE_INVALID: --from names the registry a --merge reads"},
		{[]string{"--merge", "--from", "oci://127.0.0.1:1/r", "--target", "linux-x64"}, "USAGE_INVALID: --merge builds nothing"},
		{[]string{"--merge", "--from", "ghcr.io/acme/r"}, `CONFIG_INVALID: --from: "ghcr.io/acme/r" is not a registry reference`},
		{[]string{"--target", "darwin-x64"}, "CONFIG_INVALID: release_inputs: --target darwin-x64 is not one of distribution.hcl's release.targets (linux-x64)"},
	} {
		code, _, stderr := piship(t, env, append([]string{"release", dir}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("release %s: exit %d, want 2 and %q\n%s", strings.Join(tc.args, " "), code, tc.want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dist", "releases")); !os.IsNotExist(err) {
		t.Errorf("a refused release wrote %s: %v", filepath.Join(dir, "dist", "releases"), err)
	}
}
