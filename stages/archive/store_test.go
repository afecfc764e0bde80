package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/contentstore"
)

// With a store, a second extraction of node_modules files links the
// objects the first one kept; other files, and files over SmallFile, are
// written; what lands is byte for byte the archive either way.
func TestExtractWithStore(t *testing.T) {
	src := t.TempDir()
	order, files := sampleTree()
	files["node_modules/a/dup.js"] = files["node_modules/a/index.js"] // the same bytes twice
	files["node_modules/big/huge.bin"] = file{data: bigData(SmallFile+1, 3)}
	files["node_modules/a/cli"] = file{data: "#!/usr/bin/env node\n", mode: 0o755}
	order = keys(files)
	mkTree(t, src, order, files)
	arch, _ := writeArchive(t, src, Options{MTime: 1})
	want := readTree(t, src)
	store := contentstore.New(filepath.Join(t.TempDir(), "store"))

	extract := func() (string, *Extracted) {
		t.Helper()
		dest := filepath.Join(t.TempDir(), "out")
		ex, err := Extract(context.Background(), bytes.NewReader(arch), dest, Limits{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		got := readTree(t, dest)
		for p, data := range want {
			if got[p] != data {
				t.Errorf("%s differs after extraction", p)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d paths extracted, want %d", len(got), len(want))
		}
		return dest, ex
	}
	first, ex1 := extract()
	// node_modules holds 5 small files; dup.js links index.js's object,
	// unless two writers had both at once (then both are written).
	if ex1.Linked > 1 {
		t.Errorf("first extraction linked %d, want at most 1 (the duplicate)", ex1.Linked)
	}
	second, ex2 := extract()
	if ex2.Linked != 5 {
		t.Errorf("second extraction linked %d, want the 5 small node_modules files", ex2.Linked)
	}
	same := func(rel string) bool {
		a, _ := os.Stat(filepath.Join(first, rel))
		b, _ := os.Stat(filepath.Join(second, rel))
		return a != nil && b != nil && os.SameFile(a, b)
	}
	for _, rel := range []string{"node_modules/a/index.js", "node_modules/a/dup.js", "node_modules/a/cli", "node_modules/a-b/index.js"} {
		data := []byte(files[rel].data)
		obj, _ := os.Stat(store.ObjectPath(sha256.Sum256(data), files[rel].mode&0o111 != 0))
		got, _ := os.Stat(filepath.Join(second, rel))
		if obj == nil || got == nil || !os.SameFile(obj, got) {
			t.Errorf("%s was not linked", rel)
		}
	}
	for _, rel := range []string{"bin/pi", "metadata/target.json", "node_modules/big/huge.bin"} {
		if same(rel) {
			t.Errorf("%s was linked; only node_modules files of up to SmallFile are", rel)
		}
	}
	if fi, _ := os.Stat(filepath.Join(second, "node_modules/a/cli")); fi == nil || fi.Mode().Perm()&0o111 == 0 {
		t.Error("the executable lost its mode through the store")
	}
	for p, sum := range ex1.Files {
		if ex2.Files[p] != sum {
			t.Errorf("digest of %s: %s then %s", p, sum, ex2.Files[p])
		}
	}

	// An object that no longer holds its bytes (edited through an
	// installed link) is never what an extraction writes.
	os.WriteFile(filepath.Join(second, "node_modules/a-b/index.js"), []byte("y"), 0o644)
	third, ex3 := extract()
	if ex3.Linked != 4 || store.Stats().Repaired != 1 {
		t.Errorf("linked %d, repaired %d; want 4 and 1", ex3.Linked, store.Stats().Repaired)
	}
	if b, _ := os.ReadFile(filepath.Join(third, "node_modules/a-b/index.js")); string(b) != "x" {
		t.Errorf("extracted %q from a damaged object", b)
	}
}
