package updatesource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// tokenRegistry is a registry that serves one blob only with a bearer
// token from its realm (as GHCR does for anonymous pulls), through a
// redirect to its storage, as distribution's redirecting storage does.
type tokenRegistry struct {
	srv      *httptest.Server
	blob     []byte // what the storage serves
	sum      string // the blob's digest (of the bytes published)
	realm    string // the realm the challenge names ("": this server's /token)
	tokens   atomic.Int32
	denied   bool   // the realm refuses
	storage  string // where the blob redirects ("": this server's /storage/)
	authSeen atomic.Value
}

func newTokenRegistry(t *testing.T, content string) *tokenRegistry {
	t.Helper()
	r := &tokenRegistry{blob: []byte(content)}
	s := sha256.Sum256(r.blob)
	r.sum = hex.EncodeToString(s[:])
	mux := http.NewServeMux()
	mux.HandleFunc("/token", func(w http.ResponseWriter, req *http.Request) {
		r.tokens.Add(1)
		if r.denied || req.URL.Query().Get("service") != "test-registry" || req.URL.Query().Get("scope") != "repository:acme/hello:pull" {
			http.Error(w, `{"errors":[{"code":"DENIED"}]}`, http.StatusForbidden)
			return
		}
		w.Write([]byte(`{"token":"t0k","expires_in":300}`))
	})
	mux.HandleFunc("/v2/acme/hello/blobs/", func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer t0k" {
			realm := r.realm
			if realm == "" {
				realm = r.srv.URL + "/token"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`",service="test-registry",scope="repository:acme/hello:pull"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		to := r.storage
		if to == "" {
			to = "/storage/" + r.sum
		}
		http.Redirect(w, req, to, http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/storage/", func(w http.ResponseWriter, req *http.Request) {
		r.authSeen.Store(req.Header.Get("Authorization"))
		w.Write(r.blob)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *tokenRegistry) url() string { return r.srv.URL + "/v2/acme/hello/blobs/sha256:" + r.sum }

// A blob behind the anonymous token step downloads with one token request
// and is checked against the size and digest the caller signs.
func TestRegistryBlobTokenStep(t *testing.T) {
	r := newTokenRegistry(t, "the archive bytes")
	src, name, err := OpenBlob(r.url(), SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if src.String() != r.url() || name != "sha256:"+r.sum {
		t.Fatalf("OpenBlob = %s, %s", src, name)
	}
	dst := filepath.Join(t.TempDir(), "a.tar.zst")
	if err := src.Download(context.Background(), name, dst, int64(len(r.blob)), r.sum); err != nil {
		t.Fatal(err)
	}
	if got := string(readTestFile(t, dst)); got != "the archive bytes" || r.tokens.Load() != 1 {
		t.Fatalf("downloaded %q after %d token requests", got, r.tokens.Load())
	}
	if a, _ := r.authSeen.Load().(string); a != "Bearer t0k" {
		t.Fatalf("the storage on the registry's own origin saw Authorization %q", a)
	}

	// Other bytes than the signed ones: nothing is written.
	r.blob = []byte("the archive bytez")
	dst2 := filepath.Join(t.TempDir(), "b.tar.zst")
	err = src.Download(context.Background(), name, dst2, int64(len(r.blob)), r.sum)
	wantErr(t, err, CodeIntegrityFailed, ReasonDigest, r.url())
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(dst2), "*")); len(m) != 0 {
		t.Fatalf("a refused blob left %v", m)
	}
}

func TestRegistryBlobRefusals(t *testing.T) {
	ctx := context.Background()
	dst := filepath.Join(t.TempDir(), "a.tar.zst")

	t.Run("realm-denied", func(t *testing.T) {
		r := newTokenRegistry(t, "x")
		r.denied = true
		src, name, _ := OpenBlob(r.url(), SourceOptions{})
		wantErr(t, src.Download(ctx, name, dst, 1, r.sum), CodeUpdateFailed, ReasonFetch, "answered 403 Forbidden", "not served anonymously")
	})
	t.Run("realm-plain-http-elsewhere", func(t *testing.T) {
		r := newTokenRegistry(t, "x")
		r.realm = "http://auth.example.invalid/token"
		src, name, _ := OpenBlob(r.url(), SourceOptions{})
		wantErr(t, src.Download(ctx, name, dst, 1, r.sum), CodeNetworkDenied, ReasonPolicy, "token realm http://auth.example.invalid/token is not https")
		if r.tokens.Load() != 0 {
			t.Fatal("the realm was asked")
		}
	})
	t.Run("storage-plain-http-elsewhere", func(t *testing.T) {
		r := newTokenRegistry(t, "x")
		r.storage = "http://storage.example.invalid/blob"
		src, name, _ := OpenBlob(r.url(), SourceOptions{})
		wantErr(t, src.Download(ctx, name, dst, 1, r.sum), CodeNetworkDenied, ReasonPolicy, "over https only")
	})
	t.Run("no-challenge", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "no", http.StatusUnauthorized)
		}))
		defer srv.Close()
		src, name, err := OpenBlob(srv.URL+"/v2/acme/hello/blobs/sha256:"+strings.Repeat("a", 64), SourceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, src.Download(ctx, name, dst, 1, strings.Repeat("a", 64)), CodeUpdateFailed, ReasonFetch, "without a Bearer challenge")
	})
}

func TestParseBlobURL(t *testing.T) {
	h := strings.Repeat("0f", 32)
	if got, err := ParseBlobURL("https://ghcr.io/v2/acme/tools/hello/blobs/sha256:" + h); err != nil || got != h {
		t.Fatalf("ParseBlobURL = %q, %v", got, err)
	}
	if got := BlobRepository("https://ghcr.io/v2/acme/tools/hello/blobs/sha256:" + h); got != "ghcr.io/acme/tools/hello" {
		t.Fatalf("BlobRepository = %q", got)
	}
	if got := BlobRepository("https://ghcr.io/v2/acme/hello/manifests/1.0.0"); got != "" {
		t.Fatalf("BlobRepository of a manifest URL = %q, want none", got)
	}
	for bad, code := range map[string]string{
		"http://ghcr.io/v2/acme/hello/blobs/sha256:" + h:           CodeNetworkDenied,
		"https://ghcr.io/v2/acme/hello/blobs/sha256:" + h[:63]:     CodeConfigInvalid,
		"https://ghcr.io/v2/Acme/hello/blobs/sha256:" + h:          CodeConfigInvalid,
		"https://ghcr.io/v2/acme/../blobs/sha256:" + h:             CodeConfigInvalid,
		"https://u:p@ghcr.io/v2/acme/hello/blobs/sha256:" + h:      CodeConfigInvalid,
		"https://ghcr.io/v2/acme/hello/blobs/sha256:" + h + "?x=1": CodeConfigInvalid,
		"ftp://ghcr.io/v2/acme/hello/blobs/sha256:" + h:            CodeConfigInvalid,
		"https://ghcr.io/v2/acme/hello/manifests/sha256:" + h:      CodeConfigInvalid,
	} {
		_, err := ParseBlobURL(bad)
		if e, ok := AsError(err); !ok || e.Code != code {
			t.Errorf("ParseBlobURL(%q) = %v, want %s", bad, err, code)
		}
	}
}

func TestBearerChallenge(t *testing.T) {
	p, ok := challenge(`Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:acme/hello:pull"`)
	if !ok || p["realm"] != "https://ghcr.io/token" || p["service"] != "ghcr.io" || p["scope"] != "repository:acme/hello:pull" {
		t.Fatalf("challenge = %v, %v", p, ok)
	}
	if p, ok := challenge(`bearer realm=https://r/t, service=s`); !ok || p["realm"] != "https://r/t" || p["service"] != "s" {
		t.Fatalf("unquoted challenge = %v, %v", p, ok)
	}
	for _, bad := range []string{`Basic realm="x"`, `Bearer service="s"`, `Bearer realm="x`, ``} {
		if _, ok := challenge(bad); ok {
			t.Errorf("challenge(%q) accepted", bad)
		}
	}
}
