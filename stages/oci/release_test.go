package oci

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestReleaseTargetRoundTrip(t *testing.T) {
	r := testRepo(t, nil, nil)
	ctx := context.Background()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "a.tar.zst"), []byte("archive"), 0o644)
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "release.json"), []byte("{}"), 0o644)
	ann := map[string]string{AnnotationID: "hello", AnnotationVersion: "1.0.0+b.1", AnnotationTarget: "linux-x64", AnnotationLockSHA256: "00"}
	files := []File{{Name: "hello-1.0.0-linux-x64.tar.zst", Path: filepath.Join(src, "a.tar.zst")}, {Name: "hello-1.0.0-linux-x64/release.json", Path: filepath.Join(src, "d", "release.json"), Exec: true}}
	desc, err := r.PushTarget(ctx, files, ann)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PushTarget(ctx, []File{{Name: "../x", Path: files[0].Path}}, ann); err == nil {
		t.Fatal("a name with .. was pushed")
	}
	got, err := r.FetchTarget(ctx, "1.0.0+b.1", "linux-x64")
	if err != nil || got.Desc.Digest != desc.Digest || strings.Join(got.Files(), ",") != "hello-1.0.0-linux-x64.tar.zst,hello-1.0.0-linux-x64/release.json" {
		t.Fatalf("FetchTarget = %+v %v", got.Files(), err)
	}
	if got.Manifest.Layers[0].MediaType != ocispec.MediaTypeImageLayerZstd || got.Annotation(AnnotationLockSHA256) != "00" {
		t.Fatalf("manifest %+v", got.Manifest)
	}
	out := t.TempDir()
	if _, err := r.PullTarget(ctx, got, out); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "hello-1.0.0-linux-x64", "release.json")); string(b) != "{}" {
		t.Fatalf("pulled %q", b)
	}
	// The executable bit comes back (a release's bin/ entries); a plain file stays 0644.
	if fi, err := os.Stat(filepath.Join(out, "hello-1.0.0-linux-x64", "release.json")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("an executable file pulled as %v (%v)", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Join(out, "hello-1.0.0-linux-x64.tar.zst")); err != nil || fi.Mode().Perm()&0o111 != 0 {
		t.Fatalf("a plain file pulled as %v (%v)", fi.Mode(), err)
	}
	if _, err := r.FetchTarget(ctx, "1.0.0+b.1", "darwin-arm64"); !IsNotFound(err) {
		t.Fatalf("a target never pushed: %v", err)
	}
	ix, err := r.PushIndex(ctx, "1.0.0+b.1", []ocispec.Descriptor{desc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	idx, idesc, err := r.FetchIndex(ctx, "1.0.0_b.1")
	if err != nil || idesc.Digest != ix.Digest || len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[AnnotationTarget] != "linux-x64" {
		t.Fatalf("FetchIndex = %+v %v", idx, err)
	}
}

func TestHasBlob(t *testing.T) {
	r := testRepo(t, nil, nil)
	ctx := context.Background()
	b := BytesBlob([]byte("archive"), "application/octet-stream")
	if _, err := r.PushBlobs(ctx, []Blob{b}, 1); err != nil {
		t.Fatal(err)
	}
	if has, err := r.HasBlob(ctx, b.Desc.Digest.String(), 7); !has || err != nil {
		t.Fatalf("HasBlob of a pushed blob = %v, %v", has, err)
	}
	if has, err := r.HasBlob(ctx, b.Desc.Digest.String(), 8); has || err != nil {
		t.Fatalf("HasBlob with another size = %v, %v", has, err)
	}
	if has, err := r.HasBlob(ctx, "sha256:"+strings.Repeat("0", 64), 7); has || err != nil {
		t.Fatalf("HasBlob of a blob never pushed = %v, %v", has, err)
	}
	if !strings.HasPrefix(r.BlobURL(b.Desc.Digest.String()), "http://127.0.0.1:") {
		t.Fatalf("BlobURL of a loopback registry: %s", r.BlobURL(b.Desc.Digest.String()))
	}
}
