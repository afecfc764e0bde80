package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// install hello 1.0.0 -> publish 1.1.0 to a real registry (the CNCF
// distribution registry on loopback) -> repo add --registry -> update with
// the end-user installer (piship-install) downloads 1.1.0 from the
// registry: the TUF repository's own copy is removed first, a registry
// that is down or serves other bytes fails the update with nothing
// installed, and then the update installs 1.1.0, which runs. An
// independent client, the oras CLI, lists and pulls what piship pushed,
// byte for byte.
func TestRegistryPublishAndUpdate(t *testing.T) {
	oras, err := fixture.OrasBinary()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := fixture.StartRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()

	root := t.TempDir()
	env := map[string]string{"PISHIP_PROGRESS": "0", "PISHIP_CACHE_HOME": sharedCache(t),
		"PISHIP_INSTALL_HOME": filepath.Join(root, "install"), "PISHIP_BIN_HOME": filepath.Join(root, "bin"),
		"PISHIP_STATE_HOME": filepath.Join(root, "state"), "DOCKER_CONFIG": filepath.Join(root, "docker")}
	run := func(args ...string) string {
		t.Helper()
		code, out, stderr := cli(t, env, args...)
		if code != exitOK {
			t.Fatalf("piship %v: exit %d\n%s%s", args, code, out, stderr)
		}
		return out + stderr
	}
	key := filepath.Join(root, "k.pem")
	run("keygen", key, "--id", "rel-1")
	tufDir := filepath.Join(root, "tuf")
	out := run("repo", "init", tufDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	pin := "sha256:" + regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)[1]
	releases := map[string]string{} // version -> its releases directory
	for _, v := range []string{"1.0.0", "1.1.0"} {
		dir := copyDist(t, "hello")
		p := filepath.Join(dir, "distribution.hcl")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(fixture.WithUpdates(string(b), v, "https://updates.example.invalid/hello/", pin)), 0o644)
		os.WriteFile(filepath.Join(dir, "resources", "motd.txt"), []byte("motd "+v+"\n"), 0o644)
		run("lock", dir)
		run("release", dir)
		releases[v] = filepath.Join(dir, "dist", "releases")
	}
	arc := func(v string) string { return filepath.Join(releases[v], "hello-"+v+"-linux-x64.tar.zst") }
	run("repo", "add", tufDir, arc("1.0.0"), "--key", key)
	run("install", arc("1.0.0"), "--expect-root", pin)

	// publish 1.1.0: the releases directory, --json.
	ref := reg.Ref("acme/hello")
	code, jout, stderr := cli(t, env, "publish", releases["1.1.0"], "--to", ref, "--json")
	var doc struct {
		Schema, Version string
		Index           struct{ Tag, Digest string }
		Targets         []struct {
			Target, Tag, Digest, LockSHA256, ArchiveBlob string
			Files                                        []struct {
				Name, Digest string
				Bytes        int64
			}
		}
	}
	if code != exitOK || json.Unmarshal([]byte(jout), &doc) != nil || doc.Schema != "piship-publish/v1" || len(doc.Targets) != 1 || doc.Index.Tag != "1.1.0" {
		t.Fatalf("publish --json: exit %d %+v\n%s%s", code, doc, jout, stderr)
	}
	tgt := doc.Targets[0]
	sha, _ := os.ReadFile(arc("1.1.0") + ".sha256")
	archiveSHA := strings.Fields(string(sha))[0]
	wantBlob := "http://" + reg.Addr + "/v2/acme/hello/blobs/sha256:" + archiveSHA
	if tgt.Tag != "1.1.0-linux-x64" || tgt.ArchiveBlob != wantBlob || len(tgt.LockSHA256) != 64 || tgt.Files[0].Name != "hello-1.1.0-linux-x64.tar.zst" {
		t.Fatalf("publish --json target: %+v (want the archive blob %s)", tgt, wantBlob)
	}

	// An independent client lists and pulls what piship pushed.
	orasRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(oras, append(args, "--plain-http")...)
		cmd.Env = []string{"HOME=" + root, "DOCKER_CONFIG=" + env["DOCKER_CONFIG"], "PATH=" + os.Getenv("PATH")}
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("oras %v: %v\n%s%s", args, err, o.String(), e.String())
		}
		return o.String()
	}
	repo := reg.Addr + "/acme/hello"
	if tags := strings.Fields(orasRun("repo", "tags", repo)); strings.Join(tags, " ") != "1.1.0 1.1.0-linux-x64" {
		t.Fatalf("oras repo tags: %v", tags)
	}
	var m struct {
		ArtifactType string            `json:"artifactType"`
		Annotations  map[string]string `json:"annotations"`
		Layers       []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"layers"`
	}
	if err := json.Unmarshal([]byte(orasRun("manifest", "fetch", repo+":1.1.0-linux-x64")), &m); err != nil ||
		m.ArtifactType != "application/vnd.piship.release.v1" || m.Annotations["dev.piship.release.lockSha256"] != tgt.LockSHA256 ||
		m.Annotations["org.opencontainers.image.version"] != "1.1.0" || m.Annotations["dev.piship.release.target"] != "linux-x64" ||
		m.Annotations["dev.piship.release.id"] != "hello" || m.Layers[0].Digest != "sha256:"+archiveSHA {
		t.Fatalf("oras manifest fetch: %+v %v", m, err)
	}
	var ix struct {
		MediaType string `json:"mediaType"`
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal([]byte(orasRun("manifest", "fetch", repo+":1.1.0")), &ix); err != nil ||
		ix.MediaType != "application/vnd.oci.image.index.v1+json" || len(ix.Manifests) != 1 || ix.Manifests[0].Digest != tgt.Digest {
		t.Fatalf("oras manifest fetch of the index: %+v %v", ix, err)
	}
	pulled := filepath.Join(root, "pulled")
	orasRun("pull", repo+":1.1.0-linux-x64", "-o", pulled)
	var names []string
	for _, f := range tgt.Files {
		names = append(names, f.Name)
		got, err := os.ReadFile(filepath.Join(pulled, filepath.FromSlash(f.Name)))
		want, _ := os.ReadFile(filepath.Join(releases["1.1.0"], filepath.FromSlash(f.Name)))
		if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
			t.Fatalf("oras pull: %s is not the released file (%v)", f.Name, err)
		}
	}
	if strings.Join(names, ",") != "hello-1.1.0-linux-x64.tar.zst,hello-1.1.0-linux-x64.tar.zst.sha256,hello-1.1.0-linux-x64.build-info.json,hello-1.1.0-linux-x64/release.json,hello-1.1.0-linux-x64/piship,hello-1.1.0-linux-x64/piship-launch" {
		t.Fatalf("the artifact's files: %v", names)
	}

	// repo add --registry names the blob; no delta, and the repository's
	// copy removed: only the registry can serve 1.1.0.
	set := filepath.Join(releases["1.1.0"], "hello-1.1.0.SHA256SUMS")
	if out := run("repo", "add", tufDir, set, "--registry", ref, "--deltas", "0", "--key", key); !strings.Contains(out, "served from the registry: "+wantBlob) {
		t.Fatalf("repo add --registry:\n%s", out)
	}
	if out := run("repo", "status", tufDir); !strings.Contains(out, "served from the registry: "+wantBlob) {
		t.Fatalf("repo status:\n%s", out)
	}
	copies, _ := filepath.Glob(filepath.Join(tufDir, "targets", "stable", archiveSHA+".*"))
	if len(copies) != 1 {
		t.Fatalf("the repository's copy of 1.1.0: %v", copies)
	}
	os.Remove(copies[0])
	active := func() string {
		var r struct{ Active string }
		if err := readJSONFile(filepath.Join(env["PISHIP_INSTALL_HOME"], "receipts", "hello.json"), &r); err != nil {
			t.Fatal(err)
		}
		return r.Active
	}

	// The registry down: the update fails naming the blob, nothing changes.
	reg.Stop()
	code, out, stderr = cli(t, env, "update", "hello", "--from", tufDir)
	if code == exitOK || !strings.Contains(out+stderr, wantBlob) || active() != "1.0.0" {
		t.Fatalf("update with the registry down: exit %d, active %s\n%s%s", code, active(), out, stderr)
	}
	t.Logf("update with the registry down: %s%s", out, stderr)
	if err := reg.Start(); err != nil {
		t.Fatal(err)
	}
	// Other bytes in the registry's storage: refused against the signed sha256.
	blobFile := reg.BlobPath(archiveSHA)
	good, err := os.ReadFile(blobFile)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(good)
	bad[len(bad)/2] ^= 0xff
	os.WriteFile(blobFile, bad, 0o644)
	code, out, stderr = cli(t, env, "update", "hello", "--from", tufDir)
	if code == exitOK || !strings.Contains(out+stderr, "hash verification failed") || !strings.Contains(out+stderr, "the registry serves other bytes") || active() != "1.0.0" {
		t.Fatalf("update from a tampered registry blob: exit %d, active %s\n%s%s", code, active(), out, stderr)
	}
	t.Logf("update from a tampered registry blob: %s%s", out, stderr)
	os.WriteFile(blobFile, good, 0o644)

	// Now from the registry, by the end-user installer: --check says so,
	// and the update's --json names the blob it downloaded.
	if out := run("update", "hello", "--from", tufDir, "--check"); !strings.Contains(out, "archive from the registry "+reg.Addr+"/acme/hello") {
		t.Fatalf("update --check does not say the archive comes from the registry:\n%s", out)
	}
	code, jout, stderr = cli(t, env, "update", "hello", "--from", tufDir, "--json")
	var up struct {
		Updated  bool
		Version  string
		Download struct{ Kind, Registry string }
	}
	if code != exitOK || json.Unmarshal([]byte(jout), &up) != nil || !up.Updated || up.Version != "1.1.0" || up.Download.Kind != "archive" || up.Download.Registry != wantBlob {
		t.Fatalf("update --json: exit %d %+v\n%s%s", code, up, jout, stderr)
	}
	if active() != "1.1.0" {
		t.Fatalf("active after the update: %s", active())
	}
	motd, _ := os.ReadFile(filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.1.0", "payload", "resources", "motd.txt"))
	cmd := exec.Command(filepath.Join(env["PISHIP_BIN_HOME"], "hello"), "piship")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "PISHIP_INSTALL_HOME=" + env["PISHIP_INSTALL_HOME"], "PISHIP_STATE_HOME=" + env["PISHIP_STATE_HOME"]}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "Hello, piship!") || string(motd) != "motd 1.1.0\n" {
		t.Fatalf("hello 1.1.0 after the update: %v %q, motd %q", err, got, motd)
	}
}
