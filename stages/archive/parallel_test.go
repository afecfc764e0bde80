package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"piship.dev/piship/cache/atomicfs"
)

// manyFiles is a tree of n small files in 20 directories plus a few files
// over SmallFile.
func manyFiles(n int) ([]string, map[string]file) {
	files := map[string]file{}
	for i := range n {
		files[fmt.Sprintf("node_modules/p%02d/lib/f%04d.js", i%20, i)] = file{data: fmt.Sprintf("// %d\n%s", i, strings.Repeat("x", i%3000))}
	}
	files["big/a.bin"] = file{data: bigData(SmallFile+1, 3)}
	files["big/b.bin"] = file{data: bigData(3<<20, 4)}
	files["node_modules/p00/z.wasm"] = file{data: bigData(2<<20+7, 5)}
	files["exact.bin"] = file{data: bigData(SmallFile, 6)}
	return keys(files), files
}

func TestParallelExtract(t *testing.T) { forFormats(t, testParallelExtract) }

func testParallelExtract(t *testing.T, format Format) {
	src := t.TempDir()
	order, files := manyFiles(2000)
	mkTree(t, src, order, files)
	arch, res := writeArchive(t, src, Options{Format: format})
	dest := filepath.Join(t.TempDir(), "d")
	ex, err := Extract(context.Background(), bytes.NewReader(arch), dest, Limits{Writers: 8})
	if err != nil {
		t.Fatal(err)
	}
	if ex.SHA256 != res.SHA256 || len(ex.Files) != len(files) {
		t.Fatalf("%s %d files, want %s %d", ex.SHA256, len(ex.Files), res.SHA256, len(files))
	}
	got := readTree(t, dest)
	for p, f := range files {
		if got[p] != f.data {
			t.Fatalf("%s differs", p)
		}
		if ex.Files[p] != sha([]byte(f.data)) {
			t.Fatalf("%s: digest differs", p)
		}
	}
}

// More directories than the writers keep handles for (atomicfs.DirCacheMax), deep
// and interleaved in tar order, with empty ones among them: every file
// lands, with its digest, whatever handles were evicted on the way. Run
// with one writer and with eight, so directories are made both in order
// and by writers racing for them.
func TestManyDirectories(t *testing.T) {
	files := map[string]file{}
	for d := range atomicfs.DirCacheMax + atomicfs.DirCacheMax/2 {
		base := fmt.Sprintf("node_modules/p%03d", d)
		files[base+"/package.json"] = file{data: fmt.Sprintf(`{"name":"p%d"}`, d)}
		files[base+"/lib/sub/deep/x.js"] = file{data: strings.Repeat("y", d)}
		if d%7 == 0 {
			files[base+"/empty/"] = file{mode: 0o755}
		}
	}
	src := t.TempDir()
	mkTree(t, src, keys(files), files)
	arch, _ := writeArchive(t, src, Options{})
	for _, writers := range []int{1, 8} {
		dest := filepath.Join(t.TempDir(), "d")
		ex, err := Extract(context.Background(), bytes.NewReader(arch), dest, Limits{Writers: writers})
		if err != nil {
			t.Fatal(err)
		}
		got := readTree(t, dest)
		for p, f := range files {
			if strings.HasSuffix(p, "/") {
				if fi, err := os.Stat(filepath.Join(dest, p)); err != nil || !fi.IsDir() {
					t.Fatalf("writers=%d: directory %s missing: %v", writers, p, err)
				}
				continue
			}
			if got[p] != f.data || ex.Files[p] != sha([]byte(f.data)) {
				t.Fatalf("writers=%d: %s differs or has the wrong digest", writers, p)
			}
		}
	}
}

// The reader stops at the first writer failure, waits for the writers,
// and returns that failure (not an integrity error).
func TestWriterFailureStops(t *testing.T) {
	var buf bytes.Buffer
	var es []ent
	for i := range 500 {
		es = append(es, ent{name: fmt.Sprintf("f%04d", i), data: "x"})
	}
	buf.Write(gz(tarBytes(es, nil)))
	boom := errors.New("disk full")
	var calls, failedAt atomic.Int32
	writeFile = func(root *atomicfs.Dir, name string, data []byte, perm os.FileMode) error {
		calls.Add(1)
		if name == "f0010" {
			return boom
		}
		return writeSmallFile(root, name, data, perm)
	}
	// Counted from when the failure is recorded, not from when the
	// failing write began: a writer descheduled between the two would
	// otherwise let any number of writes count as "after" (seen under
	// load).
	onWriterFailure = func() { failedAt.CompareAndSwap(0, calls.Load()) }
	t.Cleanup(func() { writeFile, onWriterFailure = writeSmallFile, nil })
	_, err := Extract(context.Background(), &buf, filepath.Join(t.TempDir(), "d"), Limits{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := IsIntegrity(err); ok {
		t.Fatal("a writer failure reported as integrity")
	}
	// After the failure only the writes already in flight may start.
	if after := calls.Load() - failedAt.Load(); after > DefaultWriters {
		t.Fatalf("%d writes started after the failure, want at most %d", after, DefaultWriters)
	}
	if calls.Load() == 500 {
		t.Fatal("the reader did not stop")
	}
}

func TestExtractCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, bytes.NewReader(gz(tarBytes([]ent{{name: "a", data: "x"}}, nil))), filepath.Join(t.TempDir(), "d"), Limits{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// Implied parents and the explicit entries that follow them count once.
func TestEntriesCountCreations(t *testing.T) {
	arch := gz(tarBytes([]ent{{name: "a/b/c", data: "x"}, {name: "a/", typ: '5'}, {name: "a/b/", typ: '5'}}, nil))
	ex, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "d"), Limits{MaxEntries: 3})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Dirs != 2 || len(ex.Files) != 1 {
		t.Fatalf("%+v", ex)
	}
}

// Small files go to the writers in batches of one directory each: the
// files of a directory that follow each other in the archive share a
// writer, up to batchFiles of them or a buffer's worth, so a large
// directory still spreads over several writers. Every small file is in
// exactly one batch, and a large file is streamed, in none.
func TestSmallFilesBatchedByDirectory(t *testing.T) {
	var es []ent
	for i := range 200 {
		es = append(es, ent{name: fmt.Sprintf("a/f%03d.js", i), data: strings.Repeat("a", 100)})
	}
	es = append(es, ent{name: "b/", typ: '5'})
	for i := range 10 {
		es = append(es, ent{name: fmt.Sprintf("b/f%d.js", i), data: "b"})
	}
	es = append(es, ent{name: "b/sub/x.js", data: "x"}, ent{name: "b/z.js", data: "z"})
	for i := range 6 {
		es = append(es, ent{name: fmt.Sprintf("c/f%d.bin", i), data: strings.Repeat("c", 100<<10)})
	}
	es = append(es, ent{name: "c/large.bin", data: strings.Repeat("L", SmallFile+1)}, ent{name: "c/tail.js", data: "t"})

	var mu sync.Mutex
	var batches [][]string
	onBatch = func(b []batchFile) {
		var names []string
		for _, f := range b {
			names = append(names, f.name)
		}
		mu.Lock()
		batches = append(batches, names)
		mu.Unlock()
	}
	t.Cleanup(func() { onBatch = nil })
	if _, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes(es, nil))), filepath.Join(t.TempDir(), "d"), Limits{}); err != nil {
		t.Fatal(err)
	}

	count := map[string]int{}   // batches per directory
	placed := map[string]bool{} // files seen in a batch
	for _, b := range batches {
		if len(b) > batchFiles {
			t.Errorf("a batch of %d files, more than %d", len(b), batchFiles)
		}
		dir := path.Dir(b[0])
		for _, name := range b {
			if path.Dir(name) != dir {
				t.Errorf("batch %v mixes directories", b)
			}
			if placed[name] {
				t.Errorf("%s in two batches", name)
			}
			placed[name] = true
		}
		count[dir]++
	}
	for _, e := range es {
		small := e.typ != '5' && len(e.data) <= SmallFile
		if placed[e.name] != small {
			t.Errorf("%s: in a batch %v, want %v", e.name, placed[e.name], small)
		}
	}
	// a/: 200 files, at most 64 per batch. b/: ten files together, then
	// b/sub/x.js, then b/z.js after it (a run is only what follows in
	// the archive). c/: six 100 KiB files fill a 256 KiB buffer twice
	// over; c/tail.js follows the streamed file in a batch of its own.
	want := map[string]int{"a": 4, "b": 2, "b/sub": 1, "c": 4}
	for dir, n := range want {
		if count[dir] != n {
			t.Errorf("%s/: %d batches, want %d (all: %v)", dir, count[dir], n, count)
		}
	}
}
