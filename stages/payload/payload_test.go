package payload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func list(t *testing.T, root string) string {
	t.Helper()
	files, err := Walk(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	return strings.Join(names, ",")
}

func TestStripKeepsMarkdown(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"node_modules/a/index.js": "x", "node_modules/a/index.js.map": "m", "node_modules/a/index.d.ts": "d",
		"node_modules/a/x.d.mts": "d", "node_modules/a/y.d.cts": "d", "node_modules/a/README.md": "r",
		"node_modules/a/prompts/p.md": "p",
	})
	n, b, err := Strip(context.Background(), root)
	if err != nil || n != 4 || b != 4 {
		t.Fatalf("strip: %d files %d bytes %v", n, b, err)
	}
	if got := list(t, root); got != "node_modules/a/README.md,node_modules/a/index.js,node_modules/a/prompts/p.md" {
		t.Fatalf("left %s", got)
	}
}

func TestPruneByPlatformAndBin(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"node_modules/keep/i.js": "", "node_modules/@img/darwin/i.js": "", "node_modules/win-only/i.js": "",
		"node_modules/not-arm/i.js": "", "node_modules/.bin/x": "", "node_modules/keep/node_modules/.bin/y": "",
	})
	removed, err := Prune(context.Background(), root, map[string]Constraint{
		"node_modules/@img/darwin": {OS: []string{"darwin"}},
		"node_modules/win-only":    {OS: []string{"win32"}, CPU: []string{"x64"}},
		"node_modules/not-arm":     {CPU: []string{"!arm64"}},
		"node_modules/keep":        {OS: []string{"!win32"}},
	}, "linux", "x64")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(removed, ","); got != "node_modules/.bin,node_modules/@img/darwin,node_modules/keep/node_modules/.bin,node_modules/win-only" {
		t.Fatalf("removed %s", got)
	}
	if got := list(t, root); got != "node_modules/keep/i.js,node_modules/not-arm/i.js" {
		t.Fatalf("left %s", got)
	}
}

func TestInventoryUsesKnownDigestsOnlyWhenSizesMatch(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a": "alpha", "b/c": "gamma", InventoryName: "{}"})
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	inv, st, err := Inventory(context.Background(), root, map[string]Known{
		"a":   {Size: 5, SHA256: "recorded"},
		"b/c": {Size: 99, SHA256: "stale"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv["a"] != "recorded" || inv["b/c"] != sum("gamma") || len(inv) != 2 || st.Hashed != 1 || st.Files != 2 {
		t.Fatalf("inventory %v stats %+v", inv, st)
	}
}

func TestWalkRefusesSymlinks(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a": "x"})
	if err := os.Symlink("a", filepath.Join(root, "l")); err != nil {
		t.Fatal(err)
	}
	if _, err := Walk(root); err == nil || !strings.Contains(err.Error(), "l is a symlink") {
		t.Fatalf("error %v", err)
	}
}

func TestLinkTreeHardlinksAndSkips(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "d")
	write(t, src, map[string]string{"keep/a": "1", "resources/r": "2", "bin/x": "3"})
	if err := LinkTree(src, dst, func(rel string) bool { return rel == "resources" || rel == "bin" }); err != nil {
		t.Fatal(err)
	}
	if got := list(t, dst); got != "keep/a" {
		t.Fatalf("linked %s", got)
	}
	a, _ := os.Stat(filepath.Join(src, "keep/a"))
	b, _ := os.Stat(filepath.Join(dst, "keep/a"))
	if !os.SameFile(a, b) {
		t.Fatal("not hardlinked")
	}
}

func TestShimRunsEntryWithArguments(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"node_modules/x/cli.js": "console.log(JSON.stringify(process.argv.slice(2)))"})
	if _, err := Shim(root, "hello", "node_modules/x/cli.js", "linux"); err != nil {
		t.Fatal(err)
	}
	// Through a symlink from elsewhere, as a bin directory would hold it.
	link := filepath.Join(t.TempDir(), "hello")
	if err := os.Symlink(filepath.Join(root, "bin", "hello"), link); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(link, "a b", "--flag").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != `["a b","--flag"]` {
		t.Fatalf("shim output %q %v", out, err)
	}
	files, _ := Shim(root, "hello", "node_modules/x/cli.js", "win32")
	if len(files) != 2 {
		t.Fatalf("win32 shims %v", files)
	}
}

func TestStagingPublishReplacesAndSweeps(t *testing.T) {
	out := t.TempDir()
	ctx := context.Background()
	// Leftovers of a killed build.
	write(t, out, map[string]string{".staging-app-dead/x": "", ".old-app-dead/y": "", ".staging-other-1/z": ""})
	st, err := Begin(ctx, out, "app")
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{".staging-app-dead", ".old-app-dead"} {
		if _, err := os.Stat(filepath.Join(out, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s not swept", gone)
		}
	}
	if _, err := os.Stat(filepath.Join(out, ".staging-other-1")); err != nil {
		t.Fatal("another id's staging was swept")
	}
	write(t, st.Dir, map[string]string{"v": "1"})
	if err := st.Publish(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st2, err := Begin(ctx, out, "app")
	if err != nil {
		t.Fatal(err)
	}
	write(t, st2.Dir, map[string]string{"v": "2"})
	if err := st2.Publish(); err != nil {
		t.Fatal(err)
	}
	st2.Close()
	if b, _ := os.ReadFile(filepath.Join(out, "app", "v")); string(b) != "2" {
		t.Fatalf("published %q", b)
	}
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".old-") || strings.HasPrefix(e.Name(), ".staging-app") {
			t.Fatalf("left %s", e.Name())
		}
	}
	// An unpublished staging is removed on Close.
	st3, _ := Begin(ctx, out, "app")
	dir := st3.Dir
	st3.Close()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("unpublished staging not removed")
	}
}

func TestPruneEmptyDirs(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"keep/a.js": "x"})
	for _, d := range []string{"empty/deeper/deepest", "keep/empty", "node_modules/gone/lib"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	n, err := PruneEmptyDirs(root)
	if err != nil || n != 7 {
		t.Fatalf("removed %d, %v", n, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || entries[0].Name() != "keep" {
		t.Fatalf("left %v", entries)
	}
	if _, err := os.Stat(filepath.Join(root, "keep", "a.js")); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkHashFiles hashes every file of PISHIP_PAYLOAD_BENCH_DIR (e.g. a
// release's payload/) or else of 4,000 small files in 40 directories, as
// inventory and doctor's verification do; the files are in the page cache
// after the first iteration.
func BenchmarkHashFiles(b *testing.B) {
	dir := os.Getenv("PISHIP_PAYLOAD_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
		for i := range 4000 {
			p := filepath.Join(dir, fmt.Sprintf("node_modules/p%02d/lib/f%04d.js", i%40, i))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 200+i%5000), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	for b.Loop() {
		if _, err := HashFiles(context.Background(), dir, files); err != nil {
			b.Fatal(err)
		}
	}
}
