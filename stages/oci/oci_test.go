package oci

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testRepo serves an in-process registry (go-containerregistry's) through
// wrap, and opens repository "piship/test" in it.
func testRepo(t *testing.T, wrap func(http.Handler) http.Handler, b *Budget) *Repo {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ref, err := ParseRef("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/piship/test")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(ref, Options{Budget: b, DockerConfig: filepath.Join(t.TempDir(), "config.json")})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRef(t *testing.T) {
	r, err := ParseRef("oci://127.0.0.1:5000/acme/cache")
	if err != nil || r.Host != "127.0.0.1:5000" || r.Repository != "acme/cache" || r.String() != "oci://127.0.0.1:5000/acme/cache" {
		t.Fatalf("ParseRef = %+v, %v", r, err)
	}
	for _, bad := range []string{"127.0.0.1:5000/acme", "oci://host", "oci:///repo", "oci://host/Repo", "oci://host/repo:tag", "oci://host/repo@sha256:00"} {
		if _, err := ParseRef(bad); err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: ") {
			t.Errorf("ParseRef(%q) = %v, want CONFIG_INVALID", bad, err)
		}
	}
	if !loopback("127.0.0.1:5000") || !loopback("localhost") || !loopback("[::1]:5000") || loopback("ghcr.io") {
		t.Error("loopback: wrong")
	}
}

func TestPushAndFetch(t *testing.T) {
	r := testRepo(t, nil, nil)
	ctx := context.Background()
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	os.WriteFile(a, []byte("alpha"), 0o644)
	fa, err := FileBlob(a, "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	fb := BytesBlob([]byte("beta"), "application/octet-stream")
	n, err := r.PushBlobs(ctx, []Blob{fa, fb, fa}, 4)
	if err != nil || n != 2 {
		t.Fatalf("PushBlobs = %d, %v; want 2 uploaded", n, err)
	}
	if n, err := r.PushBlobs(ctx, []Blob{fa, fb}, 4); err != nil || n != 0 {
		t.Fatalf("second PushBlobs = %d, %v; want nothing uploaded", n, err)
	}
	m := Manifest{ArtifactType: "application/vnd.piship.test.v1", Layers: []ocispec.Descriptor{fa.Desc, fb.Desc}, Annotations: map[string]string{"k": "v"}}
	d1, err := r.PushManifest(ctx, m, "t1")
	if err != nil {
		t.Fatal(err)
	}
	d2, err := r.PushManifest(ctx, m, "t2")
	if err != nil || d1.Digest != d2.Digest {
		t.Fatalf("the same manifest twice: %s and %s (%v)", d1.Digest, d2.Digest, err)
	}
	got, desc, err := r.FetchManifest(ctx, "t1")
	if err != nil || desc.Digest != d1.Digest || got.ArtifactType != m.ArtifactType || len(got.Layers) != 2 || got.Annotations["k"] != "v" {
		t.Fatalf("FetchManifest = %+v %v", got, err)
	}
	out := filepath.Join(dir, "out")
	if err := r.FetchTo(ctx, got.Layers[0], out, 0o755); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(out); string(data) != "alpha" {
		t.Fatalf("fetched %q", data)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, _, err := r.FetchManifest(ctx, "absent"); !IsNotFound(err) {
		t.Fatalf("an absent tag: %v, want not found", err)
	}
	if r.Budget.Down() != nil {
		t.Fatalf("a miss gave the registry up: %v", r.Budget.Down())
	}
	tags, err := r.Tags(ctx)
	if err != nil || strings.Join(tags, ",") != "t1,t2" {
		t.Fatalf("Tags = %v %v", tags, err)
	}
}

// A registry that serves other bytes than the digest names is an
// integrity failure, not a registry outage, and leaves no file behind.
func TestFetchRefusesOtherBytes(t *testing.T) {
	var corrupt atomic.Bool
	r := testRepo(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if corrupt.Load() && req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
				w.Header().Set("Content-Length", "5")
				w.Write([]byte("alphA"))
				return
			}
			h.ServeHTTP(w, req)
		})
	}, nil)
	ctx := context.Background()
	b := BytesBlob([]byte("alpha"), "application/octet-stream")
	if _, err := r.PushBlobs(ctx, []Blob{b}, 1); err != nil {
		t.Fatal(err)
	}
	corrupt.Store(true)
	out := filepath.Join(t.TempDir(), "out")
	err := r.FetchTo(ctx, b.Desc, out, 0o644)
	var ie *IntegrityError
	if !errors.As(err, &ie) {
		t.Fatalf("FetchTo of altered bytes = %v, want an IntegrityError", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("the altered blob was written")
	}
	if _, err := r.FetchBytes(ctx, b.Desc, 10); !errors.As(err, &ie) {
		t.Fatalf("FetchBytes of altered bytes = %v", err)
	}
	if r.Budget.Down() != nil {
		t.Fatalf("altered bytes gave the registry up: %v", r.Budget.Down())
	}
}

// A registry that is down costs one refused connection and one warning;
// every later call fails at once.
func TestBudgetGivesUpOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var warnings []string
	b := &Budget{Warn: func(m string) { warnings = append(warnings, m) }}
	ref, _ := ParseRef("oci://" + addr + "/piship/test")
	r, err := Open(ref, Options{Budget: b, DockerConfig: filepath.Join(t.TempDir(), "config.json")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := r.FetchManifest(ctx, "k1"); err == nil || IsNotFound(err) {
		t.Fatalf("a registry that is down: %v", err)
	}
	start := time.Now()
	for i := 0; i < 5; i++ {
		if _, _, err := r.FetchManifest(ctx, "k2"); !errors.Is(err, ErrDown) {
			t.Fatalf("after giving up: %v, want ErrDown", err)
		}
	}
	if time.Since(start) > time.Second {
		t.Fatalf("calls after giving up took %s", time.Since(start))
	}
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "REGISTRY_UNAVAILABLE: ") {
		t.Fatalf("warnings = %q, want one REGISTRY_UNAVAILABLE", warnings)
	}
}

// A registry that does not answer is cut at the request limit, and the
// run's budget bounds the sum.
func TestBudgetCutsASlowRegistry(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	b := &Budget{Request: 300 * time.Millisecond, Total: 500 * time.Millisecond, Warn: func(string) {}}
	r := testRepo(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			select {
			case <-release:
			case <-req.Context().Done():
			}
		})
	}, b)
	start := time.Now()
	_, _, err := r.FetchManifest(context.Background(), "k")
	took := time.Since(start)
	if err == nil || b.Down() == nil {
		t.Fatalf("a registry that never answers: err %v, down %v", err, b.Down())
	}
	if took > 2*time.Second {
		t.Fatalf("the call took %s, over the request limit of 300ms", took)
	}
	if !bytes.Contains([]byte(b.Down().Error()), []byte("300ms")) {
		t.Fatalf("why: %v", b.Down())
	}
}

// Credentials come from the Docker config file, as docker login writes
// them: a registry that demands them gets them; without them the registry
// is given up on, with the code that says to log in.
func TestCredentialsFromDockerConfig(t *testing.T) {
	wrap := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if u, p, ok := req.BasicAuth(); !ok || u != "ci" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="piship-test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, req)
		})
	}
	srv := httptest.NewServer(wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ref, _ := ParseRef("oci://" + host + "/piship/test")
	ctx := context.Background()
	blob := BytesBlob([]byte("alpha"), "application/octet-stream")

	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("ci:s3cret"))
	os.WriteFile(cfg, []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600)
	r, err := Open(ref, Options{DockerConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PushBlobs(ctx, []Blob{blob}, 1); err != nil {
		t.Fatalf("with the Docker config's credentials: %v", err)
	}

	var warned string
	anon, err := Open(ref, Options{DockerConfig: filepath.Join(t.TempDir(), "none.json"), Budget: &Budget{Warn: func(m string) { warned = m }}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.FetchBytes(ctx, blob.Desc, 10); err == nil {
		t.Fatal("read without credentials")
	}
	if anon.Budget.Down() == nil || !strings.HasPrefix(warned, "REGISTRY_UNAVAILABLE: ") || !strings.Contains(warned, "401") {
		t.Fatalf("refused credentials: down %v, warning %q", anon.Budget.Down(), warned)
	}
}
