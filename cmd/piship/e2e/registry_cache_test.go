package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"piship.dev/piship/cmd/piship/internal/fixture"
)

// readTrace reads the OTLP/JSON trace file at path.
func readTrace(t *testing.T, path string) []fixture.Span {
	t.Helper()
	spans, err := fixture.ReadTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

// stageHit is the piship.cache.hit of the stage span of kind.
func stageHit(t *testing.T, spans []fixture.Span, kind string) string {
	t.Helper()
	for _, s := range spans {
		if s.Attrs["piship.stage.kind"] == kind {
			return s.Attrs["piship.cache.hit"]
		}
	}
	t.Fatalf("no %s stage span in the trace", kind)
	return ""
}

// remoteOf is the piship.cache.remote of the cache lookup in cache.
func remoteOf(t *testing.T, spans []fixture.Span, cache string) string {
	t.Helper()
	for _, s := range spans {
		if s.Name == "cache lookup" && s.Attrs["piship.cache.name"] == cache {
			return s.Attrs["piship.cache.remote"]
		}
	}
	t.Fatalf("no %s cache lookup span in the trace", cache)
	return ""
}

// treeHash hashes every path and file content under dir.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + d.Type().String() + "\x00"))
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func keygen(t *testing.T, path string) string {
	t.Helper()
	code, out, stderr := cli(t, nil, "keygen", path)
	m := regexp.MustCompile(`public key: (\S+)`).FindStringSubmatch(out + stderr)
	if code != exitOK || m == nil {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, stderr)
	}
	return m[1]
}

// layers are the digests (hex) of the content layers of the entry at tag
// (its packs and larger files: every layer but the first, the listing).
func layers(t *testing.T, reg *fixture.Registry, tag string) map[string]bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+reg.Addr+"/v2/piship/cache/manifests/"+tag, nil)
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m struct {
		Layers []struct {
			Digest string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for i, l := range m.Layers {
		if i > 0 {
			out[strings.TrimPrefix(l.Digest, "sha256:")] = true
		}
	}
	return out
}

func tags(t *testing.T, reg *fixture.Registry) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + reg.Addr + "/v2/piship/cache/tags/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	byPrefix := map[string]string{}
	for _, tag := range l.Tags {
		byPrefix[tag[:2]] = tag
	}
	return byPrefix
}

// The remote cache on the CNCF registry: a trusted branch's release
// pushes its runtime and bundle entries; a second clone at another path,
// on an empty cache home, read-only, pulls them and runs neither npm ci nor
// the bundler, writes nothing to the registry, and makes byte-identical
// archives. An entry signed by a key the reader does not pin, a blob
// tampered with in the registry's storage and a blob evicted from it are
// misses: the stages run and the release succeeds. A registry that is down
// costs at most the budget, after one warning.
func TestRegistryRemoteCache(t *testing.T) {
	reg, err := fixture.StartRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Stop()
	keys := t.TempDir()
	pub := keygen(t, filepath.Join(keys, "cache.pem"))
	otherPub := keygen(t, filepath.Join(keys, "other.pem"))
	url := reg.Ref("piship/cache")

	release := func(name string, args ...string) (traceFile, out, stderr string) {
		t.Helper()
		dist := copyDist(t, "hello")
		out = filepath.Join(t.TempDir(), "out")
		traceFile = filepath.Join(t.TempDir(), "trace.json")
		env := buildEnv(t) // an empty cache home of its own
		env["PISHIP_REMOTE_CACHE"] = url
		stderr = mustRelease(t, env, append([]string{dist, "--out", out, "--trace-file", traceFile}, args...)...)
		t.Logf("%s:\n%s", name, stderr)
		return traceFile, out, stderr
	}
	archive := func(out string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(out, "releases", "hello-1.0.0-linux-x64.tar.zst"))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}

	// The trusted branch: builds everything, pushes both entries.
	trace1, out1, stderr := release("writer", "--remote-cache-mode", "readwrite", "--remote-cache-key", filepath.Join(keys, "cache.pem"))
	if !strings.Contains(stderr, "remote cache: pushed 2 entries to "+url) {
		t.Fatalf("the writer's release did not say it pushed 2 entries")
	}
	spans := readTrace(t, trace1)
	if stageHit(t, spans, "npm_install") != "false" || stageHit(t, spans, "bundle") != "false" {
		t.Fatal("the writer's release was served from a cache: the test proves nothing")
	}
	tg := tags(t, reg)
	if tg["i-"] == "" || tg["b-"] == "" {
		t.Fatalf("the registry holds tags %v, want an i- and a b- entry", tg)
	}

	// A second clone at another path, empty cache home, read only.
	before := treeHash(t, reg.Root)
	trace2, out2, _ := release("reader", "--remote-cache-trust", pub)
	spans = readTrace(t, trace2)
	if stageHit(t, spans, "npm_install") != "true" || stageHit(t, spans, "bundle") != "true" {
		t.Fatal("the reader ran npm ci or the bundler")
	}
	if r, b := remoteOf(t, spans, "runtime"), remoteOf(t, spans, "bundle"); r != "remote hit" || b != "remote hit" {
		t.Fatalf("remote outcomes: runtime %q, bundle %q", r, b)
	}
	if !bytes.Equal(archive(out1), archive(out2)) {
		t.Fatal("the reader's archive differs from the writer's")
	}
	if treeHash(t, reg.Root) != before {
		t.Fatal("a read-only run changed the registry's storage")
	}

	// A reader that pins another key takes nothing.
	trace3, _, _ := release("untrusting reader", "--remote-cache-trust", otherPub)
	spans = readTrace(t, trace3)
	if stageHit(t, spans, "npm_install") != "false" || !strings.Contains(remoteOf(t, spans, "runtime"), "which is not pinned") {
		t.Fatalf("an entry signed by an unpinned key was taken: runtime %q", remoteOf(t, spans, "runtime"))
	}

	// Eviction: a blob only the i- entry names is gone.
	iLayers, bLayers := layers(t, reg, tg["i-"]), layers(t, reg, tg["b-"])
	only := func(a, b map[string]bool) string {
		for d := range a {
			if !b[d] {
				return d
			}
		}
		t.Fatal("no layer of its own")
		return ""
	}
	if err := os.RemoveAll(filepath.Dir(reg.BlobPath(only(iLayers, bLayers)))); err != nil {
		t.Fatal(err)
	}
	trace4, _, _ := release("after an eviction", "--remote-cache-trust", pub)
	spans = readTrace(t, trace4)
	if stageHit(t, spans, "npm_install") != "false" || !strings.Contains(remoteOf(t, spans, "runtime"), "evicted") {
		t.Fatalf("an evicted blob: runtime %q", remoteOf(t, spans, "runtime"))
	}

	// Tampering: a blob of the b- entry changed in the storage.
	bp := reg.BlobPath(only(bLayers, iLayers))
	data, err := os.ReadFile(bp)
	if err != nil {
		t.Fatal(err)
	}
	data[0] ^= 0xff
	if err := os.WriteFile(bp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	trace5, _, _ := release("after tampering", "--remote-cache-trust", pub)
	spans = readTrace(t, trace5)
	if stageHit(t, spans, "bundle") != "false" || !strings.Contains(remoteOf(t, spans, "bundle"), "damaged") {
		t.Fatalf("a tampered blob: bundle %q", remoteOf(t, spans, "bundle"))
	}

	// The registry stopped mid-run: a reader's release resolves an entry,
	// then the registry goes away as it starts on the entry's blobs (the
	// connection dropped, every later one refused). One warning, the
	// stages run, the release succeeds within the budget.
	var stopped atomic.Bool
	target, _ := neturl.Parse("http://" + reg.Addr)
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/blobs/") && stopped.CompareAndSwap(false, true) {
			reg.Stop()
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		forward.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	url = "oci://" + strings.TrimPrefix(proxy.URL, "http://") + "/piship/cache"
	start := time.Now()
	trace6, _, stderr := release("registry stopped mid-run", "--remote-cache-trust", pub)
	if took := time.Since(start); took > 90*time.Second {
		t.Fatalf("a release whose registry stopped mid-run took %s", took)
	}
	if !stopped.Load() {
		t.Fatal("the run fetched no blob: the registry was not stopped mid-run")
	}
	if n := strings.Count(stderr, "REGISTRY_UNAVAILABLE"); n != 1 {
		t.Fatalf("%d registry warnings, want 1", n)
	}
	spans = readTrace(t, trace6)
	if stageHit(t, spans, "npm_install") != "false" || stageHit(t, spans, "bundle") != "false" {
		t.Fatal("a stage was served from an entry whose pull was cut off")
	}

	// The registry down from the start, in readwrite: one warning, no
	// push, the release goes on within budget.
	url = reg.Ref("piship/cache")
	start = time.Now()
	_, _, stderr = release("registry down", "--remote-cache-mode", "readwrite", "--remote-cache-key", filepath.Join(keys, "cache.pem"))
	if took := time.Since(start); took > 90*time.Second {
		t.Fatalf("a release with the registry down took %s", took)
	}
	if n := strings.Count(stderr, "REGISTRY_UNAVAILABLE"); n != 1 {
		t.Fatalf("%d registry warnings, want 1", n)
	}
	if !strings.Contains(stderr, "remote cache: pushed 0 entries") {
		t.Fatal("the release with the registry down did not report its pushes")
	}
}
