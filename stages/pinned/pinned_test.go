package pinned

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

func codeOf(err error) string { return errcode.Of(err) }

// A pinned file is downloaded once and served from the cache afterwards
// (the server gone); a cached file that is not its pin is fetched again;
// a download that is not the pin, or too large, is INTEGRITY_FAILED and
// leaves nothing in the cache; a failed download is NETWORK_DENIED and
// says where to put the file to work offline.
func TestFetch(t *testing.T) {
	good := []byte("fd 10.2.0 for linux-x64")
	bodies := map[string][]byte{"/good": good, "/wrong": []byte("something else"), "/big": make([]byte, 4096)}
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		b, ok := bodies[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	dir := t.TempDir()
	file := func(path string) File {
		return File{URL: srv.URL + path, SHA256: canon.SHA256Hex(good), Path: filepath.Join(dir, "tools", canon.SHA256Hex(good)), Max: 1024,
			PinnedBy: "distribution.hcl", Fix: "update the pin", Client: srv.Client()}
	}
	ctx := context.Background()

	for _, c := range []struct{ path, code, says string }{
		{"/wrong", errcode.IntegrityFailed, "has sha256 " + canon.SHA256Hex(bodies["/wrong"]) + ", distribution.hcl pins " + canon.SHA256Hex(good) + ": nothing was kept; update the pin"},
		{"/big", errcode.IntegrityFailed, "larger than 1024 bytes"},
		{"/missing", errcode.NetworkDenied, "404 Not Found: put the file (sha256 " + canon.SHA256Hex(good) + ") at " + file("").Path},
	} {
		_, _, err := Fetch(ctx, file(c.path))
		if codeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v (code %q), want %s saying %q", c.path, err, codeOf(err), c.code, c.says)
		}
		if names, _ := os.ReadDir(filepath.Join(dir, "tools")); len(names) != 0 {
			t.Fatalf("%s: the cache holds %v", c.path, names)
		}
	}

	data, cached, err := Fetch(ctx, file("/good"))
	if err != nil || cached || string(data) != string(good) {
		t.Fatalf("Fetch = %q, %v, %v", data, cached, err)
	}
	p := file("").Path
	if got, _ := os.ReadFile(p); string(got) != string(good) {
		t.Fatalf("the cache holds %q", got)
	}
	before := hits
	if data, cached, err := Fetch(ctx, file("/good")); err != nil || !cached || hits != before || string(data) != string(good) {
		t.Fatalf("from the cache: %q, %v, %v, %d requests", data, cached, err, hits-before)
	}

	// A cached file that is not its pin is replaced by a fresh download.
	os.WriteFile(p, []byte("tampered"), 0o644)
	if _, cached, err := Fetch(ctx, file("/good")); err != nil || cached {
		t.Fatalf("after tampering: %v, %v", cached, err)
	}
	if got, _ := os.ReadFile(p); string(got) != string(good) {
		t.Fatalf("the cache holds %q after tampering", got)
	}

	srv.Close()
	if _, cached, err := Fetch(ctx, file("/good")); err != nil || !cached {
		t.Fatalf("with the server gone: %v, %v", cached, err)
	}
	os.Remove(p)
	if _, _, err := Fetch(ctx, file("/good")); codeOf(err) != errcode.NetworkDenied || !strings.Contains(err.Error(), "to release offline") {
		t.Fatalf("with the server gone and no cache: %v", err)
	}
}
