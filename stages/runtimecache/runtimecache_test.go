package runtimecache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	"piship.dev/piship/cache"
)

// rtSample describes the sample tree: regular files (with mode), symbolic
// links and an empty directory.
var rtSample = struct {
	files map[string]string
	exec  map[string]bool
	links map[string]string
	empty []string
}{
	files: map[string]string{
		"package.json":                          `{"name":"app"}`,
		"node_modules/a/package.json":           `{"name":"a"}`,
		"node_modules/a/index.js":               "module.exports = 1\n",
		"node_modules/a/bin/cli.js":             "#!/usr/bin/env node\nconsole.log('a')\n",
		"node_modules/@scope/b/lib/deep/x.js":   strings.Repeat("x", 3000),
		"node_modules/@scope/b/package.json":    `{"name":"@scope/b"}`,
		"node_modules/a-b/index.js":             "sorting: '-' sorts before '/'\n",
		"node_modules/.package-lock.json":       "{}\n",
		"node_modules/@scope/b/lib/deep/y.json": "",
	},
	exec:  map[string]bool{"node_modules/a/bin/cli.js": true},
	links: map[string]string{"node_modules/.bin/a": "../a/bin/cli.js", "node_modules/b": "@scope/b"},
	empty: []string{"node_modules/a/empty"},
}

func rtFill(dir string) error {
	for p, content := range rtSample.files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if rtSample.exec[p] {
			mode = 0o700 // normalised to 0755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			return err
		}
	}
	for p, target := range rtSample.links {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, full); err != nil {
			return err
		}
	}
	for _, p := range rtSample.empty {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(p)), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func rtKey(name string) string {
	return InstallKey{ToolDigest: "test", Lock: []byte(name)}.Key()
}

func rtSkipSymlinks(t testing.TB) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
}

// rtCreate makes the sample entry under a fresh cache.
func rtCreate(t testing.TB) (*Cache, *Entry) {
	t.Helper()
	rtSkipSymlinks(t)
	r := Open(t.TempDir())
	e, err := r.Create(rtKey("sample"), rtFill)
	if err != nil {
		t.Fatal(err)
	}
	return r, e
}

// rtListing describes a tree on disk: path -> "dir", "link:<target>" or
// "<mode> <content>".
func rtListing(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link:" + target
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%#o %s", info.Mode().Perm(), data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func rtWantListing() map[string]string {
	want := map[string]string{}
	addDirs := func(p string) {
		for d := filepath.ToSlash(filepath.Dir(p)); d != "."; d = filepath.ToSlash(filepath.Dir(d)) {
			want[d] = "dir"
		}
	}
	for p, c := range rtSample.files {
		mode := "0644"
		if rtSample.exec[p] {
			mode = "0755"
		}
		want[p] = mode + " " + c
		addDirs(p)
	}
	for p, target := range rtSample.links {
		want[p] = "link:" + target
		addDirs(p)
	}
	for _, p := range rtSample.empty {
		want[p] = "dir"
		addDirs(p)
	}
	return want
}

func rtDiff(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			diffs = append(diffs, "missing "+p)
		} else if g != w {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want %q", p, g, w))
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			diffs = append(diffs, "extra "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s differs:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// rtRootNames lists the names in the runtime root.
func rtRootNames(t testing.TB, r *Cache) []string {
	t.Helper()
	des, err := os.ReadDir(r.Root())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func TestRuntimeKey(t *testing.T) {
	base := func() InstallKey {
		return InstallKey{
			ToolDigest: strings.Repeat("a", 64),
			Lock:       []byte(`{"lockfileVersion":3}`),
			Platform:   "linux", Arch: "x64", Libc: "glibc",
			Node: "20.20", Npm: "11.19",
		}
	}
	k := base().Key()
	if !cache.IsRuntimeKey(k) || !strings.HasPrefix(k, "i-") {
		t.Fatalf("Key() = %q, want i- and 20 hex digits", k)
	}
	if base().Key() != k {
		t.Fatal("Key() is not deterministic")
	}
	seen := map[string]string{k: "base"}
	for name, mutate := range map[string]func(*InstallKey){
		"tool digest": func(k *InstallKey) { k.ToolDigest = strings.Repeat("b", 64) },
		"lock":        func(k *InstallKey) { k.Lock = []byte(`{"lockfileVersion":2}`) },
		"lock empty":  func(k *InstallKey) { k.Lock = nil },
		"platform":    func(k *InstallKey) { k.Platform = "darwin" },
		"arch":        func(k *InstallKey) { k.Arch = "arm64" },
		"libc":        func(k *InstallKey) { k.Libc = "musl" },
		"no libc":     func(k *InstallKey) { k.Libc = "" },
		"node":        func(k *InstallKey) { k.Node = "22.1" },
		"npm":         func(k *InstallKey) { k.Npm = "10.9" },
		"boundary":    func(k *InstallKey) { k.Platform, k.Arch = "linuxx64", "" },
		"node/npm":    func(k *InstallKey) { k.Node, k.Npm = "11.19", "20.20" },
	} {
		kk := base()
		mutate(&kk)
		got := kk.Key()
		if prev, ok := seen[got]; ok {
			t.Errorf("key after changing %s equals key of %s: %s", name, prev, got)
		}
		seen[got] = name
	}

	b := BundleKey(k, true, "0.28.2")
	if !cache.IsRuntimeKey(b) || !strings.HasPrefix(b, "b-") {
		t.Fatalf("BundleKey = %q, want b- and 20 hex digits", b)
	}
	for name, other := range map[string]string{
		"strip":    BundleKey(k, false, "0.28.2"),
		"esbuild":  BundleKey(k, true, "0.28.3"),
		"runtime":  BundleKey(rtKey("other"), true, "0.28.2"),
		"boundary": BundleKey(k+"0.28.2", true, ""),
	} {
		if other == b {
			t.Errorf("bundle key unchanged when %s changes", name)
		}
	}
}

func TestRuntimeInvalidKey(t *testing.T) {
	r := Open(t.TempDir())
	for _, k := range []string{"", "i-", "i-0123", "../escape/0123456789", "I-0123456789abcdef0123", "i-0123456789ABCDEF0123", "i_0123456789abcdef0123"} {
		if _, err := r.Get(k, false); err == nil {
			t.Errorf("Get(%q) accepted an invalid key", k)
		}
		if _, err := r.Create(k, rtFill); err == nil {
			t.Errorf("Create(%q) accepted an invalid key", k)
		}
	}
}

func TestRuntimeCreateGetPlace(t *testing.T) {
	r, created := rtCreate(t)
	key := rtKey("sample")
	if created.Key != key || created.Dir != filepath.Join(r.Root(), key, "tree") {
		t.Fatalf("Create returned %+v", created)
	}
	if !sort.SliceIsSorted(created.Files, func(i, j int) bool { return created.Files[i].Path < created.Files[j].Path }) {
		t.Fatal("Files not sorted by path")
	}
	rtDiff(t, "cached tree", rtListing(t, created.Dir), rtWantListing())
	if names := rtRootNames(t, r); len(names) != 1 || names[0] != key {
		t.Fatalf("runtime root holds %q, want just the entry", names)
	}

	e, err := r.Get(key, true)
	if err != nil || e == nil {
		t.Fatalf("Get = %v, %v", e, err)
	}
	if e.Digest != created.Digest || len(e.Files) != len(created.Files) || len(e.Dirs) != len(created.Dirs) {
		t.Fatalf("Get returned a different entry: %+v vs %+v", e, created)
	}
	for i, f := range e.Files {
		if f != created.Files[i] {
			t.Fatalf("file %d: Get %+v, Create %+v", i, f, created.Files[i])
		}
		if f.Link == "" && (f.Mode != 0o644 && f.Mode != 0o755 || len(f.SHA256) != 64) {
			t.Fatalf("bad record %+v", f)
		}
	}

	dst := filepath.Join(t.TempDir(), "payload", "runtime")
	st, err := e.Place(dst)
	if err != nil {
		t.Fatal(err)
	}
	rtDiff(t, "placed tree", rtListing(t, dst), rtWantListing())
	var wantBytes int64
	for _, c := range rtSample.files {
		wantBytes += int64(len(c))
	}
	if want := (PlaceStats{Linked: len(rtSample.files), Symlinks: len(rtSample.links), Bytes: wantBytes}); st != want {
		t.Fatalf("Place stats = %+v, want %+v", st, want)
	}
	for p := range rtSample.files {
		a, err1 := os.Stat(filepath.Join(e.Dir, p))
		b, err2 := os.Stat(filepath.Join(dst, p))
		if err1 != nil || err2 != nil || !os.SameFile(a, b) {
			t.Fatalf("%s is not hardlinked to the entry (%v, %v)", p, err1, err2)
		}
	}
	// The placed tree works as a tree: the .bin link resolves.
	if data, err := os.ReadFile(filepath.Join(dst, "node_modules/.bin/a")); err != nil || !strings.Contains(string(data), "console.log('a')") {
		t.Fatalf("reading through the placed link: %q, %v", data, err)
	}

	// The entry is still intact after placing (and removing) a payload.
	if err := os.RemoveAll(dst); err != nil {
		t.Fatal(err)
	}
	if e, err := r.Get(key, true); e == nil || err != nil {
		t.Fatalf("Get after removing a placed payload = %v, %v", e, err)
	}

	// An existing empty directory is accepted; a non-empty one refused.
	empty := t.TempDir()
	if _, err := e.Place(empty); err != nil {
		t.Fatalf("Place into an empty directory: %v", err)
	}
	if _, err := e.Place(empty); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Place into a non-empty directory: %v", err)
	}
}

func TestRuntimeGetMissing(t *testing.T) {
	r := Open(t.TempDir())
	if e, err := r.Get(rtKey("nothing"), false); e != nil || err != nil {
		t.Fatalf("Get on an empty cache = %v, %v", e, err)
	}
}

func TestRuntimeGetDamage(t *testing.T) {
	rtSkipSymlinks(t)
	tree := func(r *Cache, p string) string {
		return filepath.Join(r.Root(), rtKey("sample"), "tree", filepath.FromSlash(p))
	}
	tests := []struct {
		name    string
		content bool // verifyContent
		damage  func(t *testing.T, r *Cache)
		reason  string
	}{
		{"changed size", false, func(t *testing.T, r *Cache) {
			os.WriteFile(tree(r, "node_modules/a/index.js"), []byte("module.exports = 22\n"), 0o644)
		}, "bytes"},
		{"removed file", false, func(t *testing.T, r *Cache) {
			os.Remove(tree(r, "node_modules/@scope/b/lib/deep/x.js"))
		}, "missing"},
		{"added file", false, func(t *testing.T, r *Cache) {
			os.WriteFile(tree(r, "node_modules/a/extra.js"), nil, 0o644)
		}, "unlisted file"},
		{"added directory", false, func(t *testing.T, r *Cache) {
			os.Mkdir(tree(r, "node_modules/new"), 0o755)
		}, "unlisted directory"},
		{"removed empty directory", false, func(t *testing.T, r *Cache) {
			os.Remove(tree(r, "node_modules/a/empty"))
		}, "reading directory"},
		{"changed symlink", false, func(t *testing.T, r *Cache) {
			os.Remove(tree(r, "node_modules/.bin/a"))
			os.Symlink("../a/index.js", tree(r, "node_modules/.bin/a"))
		}, "points to"},
		{"symlink replaced by file", false, func(t *testing.T, r *Cache) {
			os.Remove(tree(r, "node_modules/b"))
			os.WriteFile(tree(r, "node_modules/b"), nil, 0o644)
		}, "not one"},
		{"changed mode", false, func(t *testing.T, r *Cache) {
			os.Chmod(tree(r, "node_modules/a/bin/cli.js"), 0o644)
		}, "mode"},
		{"tampered manifest", false, func(t *testing.T, r *Cache) {
			p := filepath.Join(r.Root(), rtKey("sample"), runtimeManifestName)
			data, _ := os.ReadFile(p)
			var m runtimeManifest
			json.Unmarshal(data, &m)
			m.Files[0].SHA256 = strings.Repeat("0", 64)
			data, _ = json.Marshal(&m)
			os.WriteFile(p, data, 0o644)
		}, "digest mismatch"},
		{"manifest of another key", false, func(t *testing.T, r *Cache) {
			p := filepath.Join(r.Root(), rtKey("sample"), runtimeManifestName)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), rtKey("sample"), rtKey("other"), 1)), 0o644)
		}, "written for key"},
		{"truncated manifest", false, func(t *testing.T, r *Cache) {
			p := filepath.Join(r.Root(), rtKey("sample"), runtimeManifestName)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, data[:len(data)/2], 0o644)
		}, "malformed"},
		{"missing manifest", false, func(t *testing.T, r *Cache) {
			os.Remove(filepath.Join(r.Root(), rtKey("sample"), runtimeManifestName))
		}, "reading"},
		{"same-size content change", true, func(t *testing.T, r *Cache) {
			os.WriteFile(tree(r, "node_modules/a/index.js"), []byte("module.exports = 2\n"), 0o644)
		}, "sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := rtCreate(t)
			key := rtKey("sample")
			tt.damage(t, r)
			e, err := r.Get(key, tt.content)
			var d *cache.DamagedError
			if e != nil || !errors.As(err, &d) {
				t.Fatalf("Get = %v, %v; want a *cache.DamagedError", e, err)
			}
			if d.Key != key || d.RemoveErr != nil || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("damage error %q (key %q, remove error %v); want it to mention %q", err, d.Key, d.RemoveErr, tt.reason)
			}
			if names := rtRootNames(t, r); len(names) != 0 {
				t.Fatalf("after removing the damaged entry the root holds %q", names)
			}
			if e, err := r.Get(key, tt.content); e != nil || err != nil {
				t.Fatalf("second Get = %v, %v; want a miss", e, err)
			}
		})
	}

	// Without content verification a same-size change is not noticed
	// (i- entries are trusted by names and sizes): that is the contract.
	r, _ := rtCreate(t)
	os.WriteFile(tree(r, "node_modules/a/index.js"), []byte("module.exports = 2\n"), 0o644)
	if e, err := r.Get(rtKey("sample"), false); e == nil || err != nil {
		t.Fatalf("cheap Get after a same-size change = %v, %v; want a hit", e, err)
	}
}

func TestRuntimeCreateRefuses(t *testing.T) {
	rtSkipSymlinks(t)
	tests := map[string]func(dir string) error{
		"absolute link": func(dir string) error { return os.Symlink("/etc/passwd", filepath.Join(dir, "l")) },
		"escaping link": func(dir string) error {
			os.Mkdir(filepath.Join(dir, "node_modules"), 0o755)
			return os.Symlink("../../dep", filepath.Join(dir, "node_modules", "dep"))
		},
		"unclean link": func(dir string) error {
			os.Mkdir(filepath.Join(dir, "a"), 0o755)
			return os.Symlink("a/../a", filepath.Join(dir, "l"))
		},
		"socket": func(dir string) error {
			t.Chdir(dir) // a socket path must be short
			l, err := net.Listen("unix", "socket")
			if err != nil {
				t.Fatalf("cannot create a unix socket: %v", err)
			}
			t.Cleanup(func() { l.Close() }) // Close removes the socket file
			return nil
		},
	}
	for name, fill := range tests {
		t.Run(name, func(t *testing.T) {
			r := Open(t.TempDir())
			if _, err := r.Create(rtKey(name), fill); err == nil {
				t.Fatal("Create accepted the tree")
			} else {
				t.Log(err)
			}
			if names := rtRootNames(t, r); len(names) != 0 {
				t.Fatalf("root holds %q after a failed Create", names)
			}
		})
	}

	// A fill error is returned wrapped and nothing is kept.
	r := Open(t.TempDir())
	boom := errors.New("boom")
	if _, err := r.Create(rtKey("x"), func(string) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Create with a failing fill = %v, want it to wrap %v", err, boom)
	}
	if names := rtRootNames(t, r); len(names) != 0 {
		t.Fatalf("root holds %q after a failed fill", names)
	}
}

func TestRuntimeConcurrentCreate(t *testing.T) {
	r := Open(t.TempDir())
	key := rtKey("race")
	const n = 8
	entries := make([]*Entry, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			entries[i], errs[i] = r.Create(key, func(dir string) error {
				for j := range 20 {
					p := filepath.Join(dir, fmt.Sprintf("d%d", j%4), fmt.Sprintf("f%d", j))
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, []byte(fmt.Sprintf("writer %d file %d", i, j)), 0o644); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Create %d: %v", i, errs[i])
		}
		if entries[i].Digest != entries[0].Digest {
			t.Fatalf("Create %d returned digest %s, Create 0 %s: two entries were kept", i, entries[i].Digest, entries[0].Digest)
		}
	}
	if names := rtRootNames(t, r); len(names) != 1 || names[0] != key {
		t.Fatalf("root holds %q, want only %s", names, key)
	}
	e, err := r.Get(key, true)
	if err != nil || e == nil || e.Digest != entries[0].Digest {
		t.Fatalf("Get = %v, %v", e, err)
	}
}

// Runtime entries record the named inputs of their key in the manifest
// (split from cache's TestEntriesRecordTheirInputs, which covers the
// action cache's).
func TestEntriesRecordTheirInputs(t *testing.T) {
	rt := Open(t.TempDir())
	in := cache.Inputs{cache.InputFilePrefix + "a.txt": strings.Repeat("a", 64)}
	rkey := "i-00000000000000000009"
	if _, err := rt.CreateInputs(rkey, in, func(dir string) error { return os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	if e, err := rt.Get(rkey, true); err != nil || e == nil || e.Inputs[cache.InputFilePrefix+"a.txt"] == "" {
		t.Errorf("runtime Get = %+v, %v; want the recorded inputs", e, err)
	}
}
