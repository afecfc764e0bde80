package remotecache

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/oci"
)

// testStore is a store on an in-process registry (go-containerregistry's),
// its handler wrapped by wrap when given.
func testStore(t *testing.T, wrap func(http.Handler) http.Handler, signer ed25519.PrivateKey, trusted ...ed25519.PublicKey) (*Store, string) {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/piship/cache"
	return open(t, url, signer, trusted...), url
}

func open(t *testing.T, url string, signer ed25519.PrivateKey, trusted ...ed25519.PublicKey) *Store {
	t.Helper()
	ref, err := oci.ParseRef(url)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := oci.Open(ref, oci.Options{DockerConfig: filepath.Join(t.TempDir(), "config.json")})
	if err != nil {
		t.Fatal(err)
	}
	return New(repo, signer, trusted)
}

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func write(t *testing.T, p, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// runtimeEntry makes a runtime-shaped entry directory: manifest.json and a
// tree with an executable, a duplicate content and a relative link.
func runtimeEntry(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "i-0123456789abcdef0123")
	write(t, filepath.Join(dir, "manifest.json"), `{"schema":"test"}`+"\n", 0o644)
	write(t, filepath.Join(dir, "tree", "node_modules", "a", "index.js"), "module.exports = 1\n", 0o644)
	write(t, filepath.Join(dir, "tree", "node_modules", "b", "index.js"), "module.exports = 1\n", 0o644)
	write(t, filepath.Join(dir, "tree", "node_modules", "a", "cli.js"), "#!/usr/bin/env node\n", 0o755)
	if err := os.MkdirAll(filepath.Join(dir, "tree", "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../a/cli.js", filepath.Join(dir, "tree", "node_modules", ".bin", "a")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listing is every path of dir with its mode, content or link target.
func listing(t *testing.T, dir string) string {
	t.Helper()
	var b bytes.Buffer
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + info.Mode().String())
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(" " + string(data))
		}
		b.WriteString("\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pullErr is Pull's error, for reason.
func pullErr(_ cache.Pulled, err error) error { return err }

// checkPulled holds what Pull says it verified to the files it placed:
// every regular file but the entry's metadata, with its sha256.
func checkPulled(t *testing.T, dst, area string, pulled cache.Pulled) {
	t.Helper()
	want := cache.Pulled{}
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		if rel = filepath.ToSlash(rel); rel == metadataName[area] {
			return nil
		}
		data, err := os.ReadFile(p)
		sum := sha256.Sum256(data)
		want[rel] = hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pulled) != len(want) {
		t.Fatalf("Pull reported %d files verified, placed %d", len(pulled), len(want))
	}
	for p, sum := range want {
		if pulled[p] != sum {
			t.Fatalf("Pull reported %s as %q, its sha256 is %s", p, pulled[p], sum)
		}
	}
}

func reason(t *testing.T, err error) string {
	t.Helper()
	var m *cache.RemoteMiss
	if !errors.As(err, &m) {
		t.Fatalf("Pull = %v, want a *cache.RemoteMiss", err)
	}
	return m.Reason
}

// countingStore is testStore counting the blob uploads (PUTs) the
// registry takes.
func countingStore(t *testing.T, signer ed25519.PrivateKey) (*Store, string, *atomic.Int32) {
	puts := new(atomic.Int32)
	s, url := testStore(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/blobs/") {
				puts.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}, signer)
	return s, url, puts
}

func TestPushPullRoundTripDedupsFiles(t *testing.T) {
	key := newKey(t)
	s, url, puts := countingStore(t, key)
	src := runtimeEntry(t)
	ctx := context.Background()
	if err := s.Push(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", src); err != nil {
		t.Fatal(err)
	}
	// 2 distinct small contents (the two index.js are one) in one pack
	// (neither sha256's second byte is 0), the listing and OCI's empty
	// config.
	cfg, blobs, err := describe(cache.AreaRuntime, "i-0123456789abcdef0123", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 1 || len(cfg.Packs) != 1 || len(cfg.Packs[0].Contents) != 2 || blobs[0].Desc.MediaType != PackMediaType {
		t.Fatalf("described as %d blobs, packs %+v; want one pack of 2 contents", len(blobs), cfg.Packs)
	}
	if n := puts.Load(); n != 3 {
		t.Fatalf("first push uploaded %d blobs, want 3 (a pack of the 2 distinct files, the listing, the empty config)", n)
	}
	// A second entry with the same files uploads only its listing.
	if err := s.Push(ctx, cache.AreaRuntime, "i-0123456789abcdef0124", src); err != nil {
		t.Fatal(err)
	}
	if n := puts.Load(); n != 4 {
		t.Fatalf("second push uploaded %d blobs in all, want 4 (only the new listing)", n)
	}

	reader := open(t, url, nil, key.Public().(ed25519.PublicKey))
	dst := filepath.Join(t.TempDir(), "entry")
	pulled, err := reader.Pull(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", dst)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listing(t, dst), listing(t, src); got != want {
		t.Fatalf("pulled entry:\n%s\nwant:\n%s", got, want)
	}
	checkPulled(t, dst, cache.AreaRuntime, pulled)
}

func TestPullRefusesWhatIsNotSignedByAPinnedKey(t *testing.T) {
	writer, other := newKey(t), newKey(t)
	s, url := testStore(t, nil, writer)
	ctx := context.Background()
	src := runtimeEntry(t)
	if err := s.Push(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", src); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "entry")
	untrusting := open(t, url, nil, other.Public().(ed25519.PublicKey))
	if r := reason(t, pullErr(untrusting.Pull(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", dst))); !strings.Contains(r, "not pinned") {
		t.Fatalf("reason %q", r)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused entry left %s", dst)
	}
	// Retagging a signed entry under another key: the statement names the tag.
	trusting := open(t, url, nil, writer.Public().(ed25519.PublicKey))
	m, _, err := trusting.Repo.FetchManifest(ctx, "i-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	signed := oci.Manifest{ArtifactType: ArtifactType, Layers: m.Layers, Annotations: m.Annotations}
	if _, err := trusting.Repo.PushManifest(ctx, signed, "i-aaaaaaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if r := reason(t, pullErr(trusting.Pull(ctx, cache.AreaRuntime, "i-aaaaaaaaaaaaaaaaaaaa", dst))); !strings.Contains(r, "does not verify") {
		t.Fatalf("retagged entry: reason %q", r)
	}
	// An unsigned manifest over the same listing.
	if _, err := trusting.Repo.PushManifest(ctx, oci.Manifest{ArtifactType: ArtifactType, Layers: m.Layers}, "i-bbbbbbbbbbbbbbbbbbbb"); err != nil {
		t.Fatal(err)
	}
	if r := reason(t, pullErr(trusting.Pull(ctx, cache.AreaRuntime, "i-bbbbbbbbbbbbbbbbbbbb", dst))); !strings.Contains(r, "unsigned") {
		t.Fatalf("unsigned entry: reason %q", r)
	}
	// No entry at all.
	if r := reason(t, pullErr(trusting.Pull(ctx, cache.AreaAction, strings.Repeat("ab", 32), dst))); !strings.Contains(r, "has no entry a-abab") {
		t.Fatalf("absent entry: reason %q", r)
	}
}

func TestPullDiscardsDamagedAndEvictedBlobs(t *testing.T) {
	key := newKey(t)
	var mode atomic.Value // "", "tamper", "evict"
	mode.Store("")
	s, _ := testStore(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m := mode.Load().(string)
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") && m != "" {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				body := rec.Body.Bytes()
				// Only file blobs: the config is JSON.
				if len(body) > 0 && body[0] != '{' {
					if m == "evict" {
						http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}`, http.StatusNotFound)
						return
					}
					body = append([]byte(nil), body...)
					body[0] ^= 0xff
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(body)
				return
			}
			h.ServeHTTP(w, r)
		})
	}, key)
	ctx := context.Background()
	if err := s.Push(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", runtimeEntry(t)); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "entry")
	mode.Store("tamper")
	if r := reason(t, pullErr(s.Pull(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", dst))); !strings.Contains(r, "damaged in the registry") {
		t.Fatalf("tampered: reason %q", r)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a damaged entry left %s", dst)
	}
	mode.Store("evict")
	if r := reason(t, pullErr(s.Pull(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", dst))); !strings.Contains(r, "evicted") {
		t.Fatalf("evicted: reason %q", r)
	}
	mode.Store("")
	if _, err := s.Pull(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", dst); err != nil {
		t.Fatal(err)
	}
}

func TestPushNeedsAKeyAndTagsByKey(t *testing.T) {
	s, _ := testStore(t, nil, nil)
	if err := s.Push(context.Background(), cache.AreaRuntime, "i-0123456789abcdef0123", runtimeEntry(t)); err == nil || !strings.Contains(err.Error(), "--remote-cache-key") {
		t.Fatalf("Push without a key = %v", err)
	}
	for _, c := range []struct{ area, key, tag string }{
		{cache.AreaAction, strings.Repeat("0f", 32), "a-" + strings.Repeat("0f", 32)},
		{cache.AreaRuntime, "b-0123456789abcdef0123", "b-0123456789abcdef0123"},
	} {
		if tag, err := Tag(c.area, c.key); err != nil || tag != c.tag {
			t.Errorf("Tag(%s, %s) = %q, %v", c.area, c.key, tag, err)
		}
	}
	if _, err := Tag(cache.AreaAction, "i-0123456789abcdef0123"); err == nil {
		t.Error("an action tag for a runtime key")
	}
}

// manyFiles writes n small files of distinct contents (and one of packMax
// bytes) under dir/tree, with manifest.json.
func manyFiles(t *testing.T, dir string, n int) {
	t.Helper()
	write(t, filepath.Join(dir, "manifest.json"), `{"schema":"test"}`+"\n", 0o644)
	for i := range n {
		write(t, filepath.Join(dir, "tree", fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d.js", i)), fmt.Sprintf("module.exports = %d\n", i), 0o644)
	}
	write(t, filepath.Join(dir, "tree", "big.bin"), strings.Repeat("x", packMax), 0o644)
}

func TestEntriesDifferingByOneFileShareAllButOnePack(t *testing.T) {
	key := newKey(t)
	s, url, puts := countingStore(t, key)
	ctx := context.Background()
	one := filepath.Join(t.TempDir(), "one")
	manyFiles(t, one, 2000)
	cfg, blobs, err := describe(cache.AreaRuntime, "i-0000000000000000000a", one)
	if err != nil {
		t.Fatal(err)
	}
	// 2000 small contents, one in 256 ending a pack: several packs, and the
	// large file a layer of its own.
	if len(cfg.Packs) < 3 || len(blobs) != len(cfg.Packs)+1 {
		t.Fatalf("%d small files and a large one: %d packs, %d blobs", 2000, len(cfg.Packs), len(blobs))
	}
	if err := s.Push(ctx, cache.AreaRuntime, "i-0000000000000000000a", one); err != nil {
		t.Fatal(err)
	}
	if n, want := puts.Load(), int32(len(blobs)+2); n != want {
		t.Fatalf("first push uploaded %d blobs, want %d (%d packs, the large file, the listing, the empty config)", n, want, len(cfg.Packs))
	}

	// The same tree and one more small file, whose sha256 does not end a
	// pack: one pack changes, the listing is new, nothing else is pushed.
	two := filepath.Join(t.TempDir(), "two")
	manyFiles(t, two, 2000)
	extra := ""
	for i := 0; extra == ""; i++ {
		c := fmt.Sprintf("module.exports = 'extra %d'\n", i)
		if sum := sha256.Sum256([]byte(c)); !cutAfter(hex.EncodeToString(sum[:])) {
			extra = c
		}
	}
	write(t, filepath.Join(two, "tree", "extra.js"), extra, 0o644)
	cfg2, _, err := describe(cache.AreaRuntime, "i-0000000000000000000b", two)
	if err != nil {
		t.Fatal(err)
	}
	shared := map[string]bool{}
	for _, p := range cfg.Packs {
		shared[p.Digest] = true
	}
	var new int
	for _, p := range cfg2.Packs {
		if !shared[p.Digest] {
			new++
		}
	}
	if new != 1 || len(cfg2.Packs) != len(cfg.Packs) {
		t.Fatalf("one more file: %d of %d packs new (had %d), want 1", new, len(cfg2.Packs), len(cfg.Packs))
	}
	before := puts.Load()
	if err := s.Push(ctx, cache.AreaRuntime, "i-0000000000000000000b", two); err != nil {
		t.Fatal(err)
	}
	if n := puts.Load() - before; n != 2 {
		t.Fatalf("the second entry uploaded %d blobs, want 2 (the one pack that changed and the listing)", n)
	}

	// Both pull whole, every content split out of its pack.
	reader := open(t, url, nil, key.Public().(ed25519.PublicKey))
	for _, c := range []struct{ key, src string }{{"i-0000000000000000000a", one}, {"i-0000000000000000000b", two}} {
		dst := filepath.Join(t.TempDir(), "entry")
		pulled, err := reader.Pull(ctx, cache.AreaRuntime, c.key, dst)
		if err != nil {
			t.Fatal(err)
		}
		checkPulled(t, dst, cache.AreaRuntime, pulled)
		if got, want := listing(t, dst), listing(t, c.src); got != want {
			t.Fatalf("pulled %s differs from what was pushed", c.key)
		}
	}
}

func TestGroupCutsByDigestAndSize(t *testing.T) {
	sha := func(b2 string, i int) string { return fmt.Sprintf("%02x%s%060x", i/256, b2, i) }
	cs := []content{
		{sha: sha("11", 0), size: 10},
		{sha: sha("00", 1), size: 10},          // ends a pack
		{sha: sha("22", 2), size: packMax},     // a layer of its own
		{sha: sha("33", 3), size: packMax - 1}, // 8 of these pass 8 MiB
		{sha: sha("33", 4), size: packMax - 1},
		{sha: sha("33", 5), size: packMax - 1},
		{sha: sha("33", 6), size: packMax - 1},
		{sha: sha("33", 7), size: packMax - 1},
		{sha: sha("33", 8), size: packMax - 1},
		{sha: sha("33", 9), size: packMax - 1},
		{sha: sha("33", 10), size: packMax - 1},
		{sha: sha("33", 11), size: packMax - 1},
		{sha: sha("44", 12), size: 0},
	}
	packs, large := group(cs)
	var shape []int
	for _, p := range packs {
		var size int64
		for _, c := range p {
			size += c.size
		}
		if size > packLimit {
			t.Errorf("a pack of %d bytes, over %d", size, packLimit)
		}
		shape = append(shape, len(p))
	}
	if fmt.Sprint(shape) != "[2 8 2]" || len(large) != 1 || large[0].sha != cs[2].sha {
		t.Fatalf("packs of %v contents, large %v; want [2 8 2] and the one of packMax bytes", shape, large)
	}
}

func TestPullSaysAnOlderSchemaIsNotThisOne(t *testing.T) {
	key := newKey(t)
	s, _ := testStore(t, nil, key)
	ctx := context.Background()
	if err := s.Push(ctx, cache.AreaRuntime, "i-0123456789abcdef0123", runtimeEntry(t)); err != nil {
		t.Fatal(err)
	}
	m, _, err := s.Repo.FetchManifest(ctx, "i-0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	// The same entry signed as piship-remote-cache/v1 was.
	tag := "i-cccccccccccccccccccc"
	sig := ed25519.Sign(key, []byte("piship-remote-cache/v1\n"+tag+"\n"+m.Layers[0].Digest.String()))
	ann := map[string]string{AnnotationSignature: base64.StdEncoding.EncodeToString(sig), AnnotationKey: m.Annotations[AnnotationKey]}
	if _, err := s.Repo.PushManifest(ctx, oci.Manifest{ArtifactType: ArtifactType, Layers: m.Layers, Annotations: ann}, tag); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "entry")
	if r := reason(t, pullErr(s.Pull(ctx, cache.AreaRuntime, tag, dst))); !strings.Contains(r, "not this schema") {
		t.Fatalf("a v1 entry: reason %q", r)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a v1 entry left %s", dst)
	}
}
