package installers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// A URL source's binary is downloaded once, checked, kept in the cache by
// digest and served from there afterwards (the server gone); a download
// that is not the pin is INTEGRITY_FAILED and nothing is kept.
func TestReadURLSourceCachesByDigest(t *testing.T) {
	bin := []byte("stand-in piship-install for linux-arm64")
	hits := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path != "/0.9.0/linux-arm64/piship-install" {
			http.NotFound(w, r)
			return
		}
		w.Write(bin)
	}))
	old := Client
	Client = srv.Client()
	t.Cleanup(func() { Client = old })
	in := &distribution.Installers{Source: srv.URL + "/0.9.0/", SHA256: map[string]distribution.InstallerPins{
		"linux-arm64": {Installer: canon.SHA256Hex(bin), Launcher: canon.SHA256Hex([]byte("other"))},
	}}
	pins, _ := in.For("linux-arm64")
	bins := Pinned(in, "/unused", "linux-arm64", pins, [2]string{"piship", "piship-launch"})
	if bins[0].Source != srv.URL+"/0.9.0/linux-arm64/piship-install" || bins[1].Source != srv.URL+"/0.9.0/linux-arm64/piship-launch" {
		t.Fatalf("sources = %+v", bins)
	}
	home := t.TempDir()
	got, err := Read(context.Background(), home, bins[0])
	if err != nil || string(got) != string(bin) {
		t.Fatalf("Read = %q, %v", got, err)
	}
	if cached, err := os.ReadFile(filepath.Join(home, DirName, canon.SHA256Hex(bin))); err != nil || string(cached) != string(bin) {
		t.Fatalf("cache holds %q (%v)", cached, err)
	}
	srv.Close()
	if got, err := Read(context.Background(), home, bins[0]); err != nil || string(got) != string(bin) || hits != 1 {
		t.Fatalf("from the cache: %q, %v, %d downloads", got, err, hits)
	}

	// The launcher the server does not serve as pinned.
	srv2 := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("tampered")) }))
	defer srv2.Close()
	Client = srv2.Client()
	b := Binary{Name: "piship-launch", Source: srv2.URL + "/linux-arm64/piship-launch", SHA256: canon.SHA256Hex([]byte("other"))}
	_, err = Read(context.Background(), home, b)
	if errcode.Of(err) != errcode.IntegrityFailed || !strings.Contains(err.Error(), b.Source) || !strings.Contains(err.Error(), "make installers") {
		t.Fatalf("err = %v, want %s naming %s and make installers", err, errcode.IntegrityFailed, b.Source)
	}
	if _, err := os.Stat(filepath.Join(home, DirName, b.SHA256)); err == nil {
		t.Fatal("a binary that is not its pin was kept in the cache")
	}
}
