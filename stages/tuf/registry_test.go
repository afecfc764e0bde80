package tuf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A release whose target names a registry blob (repo add --registry) is
// downloaded from the registry, through its anonymous token step, and held
// to the signed length and sha256: the repository's own copy is not read,
// a registry serving other bytes is refused, and so is a target naming
// the blob of another digest. A repair fetch takes the same path.
func TestRegistryBlobTargets(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	arc := writeArchive(t, "hello-1.1.0-linux-x64.tar.gz", 3000)
	want, _ := os.ReadFile(arc)
	sum := sha256.Sum256(want)
	hexSum := hex.EncodeToString(sum[:])
	serve := want
	var blobGets, tokens atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch {
		case req.URL.Path == "/token":
			tokens.Add(1)
			w.Write([]byte(`{"token":"anon"}`))
		case req.Header.Get("Authorization") != "Bearer anon":
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+`/token",service="reg",scope="repository:acme/hello:pull"`)
			w.WriteHeader(http.StatusUnauthorized)
		case strings.HasPrefix(req.URL.Path, "/v2/acme/hello/blobs/sha256:"):
			blobGets.Add(1)
			w.Write(serve)
		default:
			http.NotFound(w, req)
		}
	}))
	defer srv.Close()
	blob := srv.URL + "/v2/acme/hello/blobs/sha256:" + hexSum
	rel := Release{Archive: arc, Version: "1.1.0", Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: "stable", RegistryBlob: blob}
	if err := r.AddReleases([]Release{rel}, []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	// Only the registry can serve it now.
	copies, _ := filepath.Glob(filepath.Join(r.Dir, "targets", "stable", hexSum+".*"))
	if len(copies) != 1 {
		t.Fatalf("repo add kept no copy of the archive: %v", copies)
	}
	os.Remove(copies[0])

	in := newInstall(t, r)
	res := mustUpdate(t, in, r.Dir)
	got, _ := os.ReadFile(res.Archive)
	if string(got) != string(want) || res.Release.RegistryBlob != blob || blobGets.Load() != 1 || tokens.Load() != 1 {
		t.Fatalf("update from the registry: %+v, %d bytes, %d blob GETs, %d tokens", res, len(got), blobGets.Load(), tokens.Load())
	}

	// Repair's fetch of the same archive.
	o := in.opts(r.Dir)
	o.DownloadDir = t.TempDir()
	if fr, err := FetchRelease(context.Background(), o, hexSum); err != nil || fr.Archive == "" {
		t.Fatalf("FetchRelease from the registry: %+v, %v", fr, err)
	}

	// Other bytes from the registry: refused, nothing downloaded.
	serve = append([]byte{want[0] ^ 1}, want[1:]...)
	in2 := newInstall(t, r)
	_, err := in2.update(t, r.Dir)
	wantErr(t, err, ReasonIntegrity, blob, "hash verification failed")
	if m, _ := filepath.Glob(filepath.Join(in2.downloads, "*")); len(m) != 0 {
		t.Fatalf("a refused registry blob left %v", m)
	}

	// A target naming the blob of another digest is refused before any
	// request.
	serve = want
	arc2 := writeArchive(t, "hello-1.2.0-linux-x64.tar.gz", 3000)
	other := srv.URL + "/v2/acme/hello/blobs/sha256:" + strings.Repeat("0", 64)
	if err := r.AddReleases([]Release{{Archive: arc2, Version: "1.2.0", Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: "stable", RegistryBlob: other}}, []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	before := blobGets.Load()
	_, err = newInstall(t, r).update(t, r.Dir)
	wantErr(t, err, ReasonMalformed, other, "not the blob of the sha256 it signs")
	if blobGets.Load() != before {
		t.Fatal("the registry was asked for a blob the target does not sign")
	}
}
