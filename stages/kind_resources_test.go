package stages

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// A tool with an https source is downloaded once into <piship cache>/
// tools/<sha256> and placed from there afterwards (the server gone); one
// whose download is not its pin is INTEGRITY_FAILED and placed nowhere.
func TestPlaceToolDownloadsOnceIntoTheCache(t *testing.T) {
	tool := []byte("#!/bin/sh\necho tool\n")
	pin := canon.SHA256Hex(tool)
	hits := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/tool" {
			w.Write(tool)
			return
		}
		w.Write([]byte("not the tool"))
	}))
	old := toolClient
	toolClient = srv.Client()
	t.Cleanup(func() { toolClient = old })
	home := t.TempDir()
	inv := &stage.Invocation{Getenv: func(k string) string {
		if k == "PISHIP_CACHE_HOME" {
			return home
		}
		return ""
	}}
	ctx := context.Background()
	dest := filepath.Join(t.TempDir(), "tools", "mytool")
	if err := placeTool(ctx, inv, "/unused", "mytool", srv.URL+"/other", pin, dest); errcode.Of(err) != errcode.IntegrityFailed {
		t.Fatalf("a download that is not the pin: %v", err)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("placed a tool that is not its pin")
	}
	if err := placeTool(ctx, inv, "/unused", "mytool", srv.URL+"/tool", strings.ToUpper(pin), dest); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(home, "tools", pin)); string(got) != string(tool) {
		t.Fatalf("the cache holds %q", got)
	}
	srv.Close()
	os.Remove(dest)
	if err := placeTool(ctx, inv, "/unused", "mytool", srv.URL+"/tool", pin, dest); err != nil {
		t.Fatalf("from the cache with the server gone: %v", err)
	}
	if got, err := os.ReadFile(dest); err != nil || string(got) != string(tool) || hits != 2 {
		t.Fatalf("placed %q (%v) after %d downloads, want 2", got, err, hits)
	}
}
