package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// publish refuses, pushing nothing, a set whose archive is not the one
// it lists, and a directory that holds no set or two; repo add
// --registry refuses a registry that lacks the archive's blob, publishing
// nothing; publishing the same release twice gives the same digests.
func TestRegistryPublishRefusals(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustRelease(t, env, dir)
	releases := filepath.Join(dir, "dist", "releases")
	var writes atomic.Int32
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writes.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	to := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/acme/hello"

	// A copy of the releases with the archive changed after the set was
	// written: verified first, nothing pushed.
	bad := filepath.Join(t.TempDir(), "releases")
	if err := copyTree(releases, bad); err != nil {
		t.Fatal(err)
	}
	arc := filepath.Join(bad, "hello-1.0.0-linux-x64.tar.zst")
	b, _ := os.ReadFile(arc)
	b[len(b)/2] ^= 0xff
	os.WriteFile(arc, b, 0o644)
	code, out, stderr := piship(t, env, "publish", bad, "--to", to)
	if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED: hello-1.0.0-linux-x64.tar.zst is not a release that installs (verify-release: check archive-extract failed") || !strings.Contains(stderr, "nothing was pushed") || writes.Load() != 0 {
		t.Fatalf("publish of a changed archive: exit %d, %d writes\n%s%s", code, writes.Load(), out, stderr)
	}
	// No set, or two.
	if code, _, stderr := piship(t, env, "publish", t.TempDir(), "--to", to); code != exitUsage || !strings.Contains(stderr, "holds no release set") {
		t.Fatalf("publish of an empty directory: exit %d\n%s", code, stderr)
	}
	os.WriteFile(filepath.Join(bad, "hello-0.9.0.SHA256SUMS"), []byte(""), 0o644)
	if code, _, stderr := piship(t, env, "publish", bad, "--to", to); code != exitUsage || !strings.Contains(stderr, "holds 2 release sets (hello-0.9.0.SHA256SUMS, hello-1.0.0.SHA256SUMS): give the one to publish") {
		t.Fatalf("publish of a directory with two sets: exit %d\n%s", code, stderr)
	}

	// repo add --registry before publish: refused, nothing published.
	key := filepath.Join(t.TempDir(), "k.pem")
	if code, out, stderr := piship(t, env, "keygen", key, "--id", "k1"); code != exitOK {
		t.Fatalf("keygen: %s%s", out, stderr)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	if code, out, stderr := piship(t, env, "repo", "init", repo, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key); code != exitOK {
		t.Fatalf("repo init: %s%s", out, stderr)
	}
	set := filepath.Join(releases, "hello-1.0.0.SHA256SUMS")
	code, out, stderr = piship(t, env, "repo", "add", repo, set, "--registry", to, "--key", key)
	if code != exitUsage || !strings.Contains(stderr, "holds no blob sha256:") || !strings.Contains(stderr, "piship publish RELEASE_DIR --to "+to) {
		t.Fatalf("repo add --registry before publish: exit %d\n%s%s", code, out, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(repo, "targets", "stable", "*")); len(m) != 0 {
		t.Fatalf("a refused repo add published %v", m)
	}

	// Published twice: the same tags and digests, the second uploads no
	// blob (the registry has them all).
	code, first, stderr := piship(t, env, "publish", set, "--to", to)
	if code != exitOK || !strings.Contains(first, "pushed hello 1.0.0 linux-x64: "+to+":1.0.0-linux-x64 (sha256:") || !strings.Contains(first, "pushed the index "+to+":1.0.0 (sha256:") {
		t.Fatalf("publish: exit %d\n%s%s", code, first, stderr)
	}
	before := writes.Load()
	code, second, stderr := piship(t, env, "publish", dir, "--to", to)
	if code != exitOK || second != first {
		t.Fatalf("publish again: exit %d\n%s%s\nfirst:\n%s", code, second, stderr, first)
	}
	if n := writes.Load() - before; n != 2 { // the manifest and the index, tagged again
		t.Fatalf("publishing again wrote %d times, want 2 (the two tags)", n)
	}
	if code, out, stderr := piship(t, env, "repo", "add", repo, set, "--registry", to, "--key", key); code != exitOK || !strings.Contains(out, "served from the registry: "+srv.URL+"/v2/acme/hello/blobs/sha256:") {
		t.Fatalf("repo add --registry after publish: exit %d\n%s%s", code, out, stderr)
	}
}
