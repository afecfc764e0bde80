package home

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A directory is copied in batches of one directory each: the files of a
// directory that follow each other, at most batchFiles of them or
// batchBytes, every file in exactly one batch, in order.
func TestDirBatches(t *testing.T) {
	var files []treeFile
	for i := range 130 {
		files = append(files, treeFile{rel: fmt.Sprintf("a/f%03d", i), size: 10})
	}
	files = append(files, treeFile{rel: "b/x", size: 1}, treeFile{rel: "b/sub/y", size: 1}, treeFile{rel: "b/z", size: 1})
	for i := range 5 {
		files = append(files, treeFile{rel: fmt.Sprintf("c/big%d", i), size: 100 << 10})
	}
	files = append(files, treeFile{rel: "d/huge", size: 1 << 30})

	got := dirBatches(files)
	next := 0
	perDir := map[string]int{}
	for _, b := range got {
		if b.from != next || b.to <= b.from {
			t.Fatalf("batches %v do not cover the files in order", got)
		}
		next = b.to
		if b.to-b.from > batchFiles {
			t.Errorf("batch %v holds more than %d files", b, batchFiles)
		}
		dir := path.Dir(files[b.from].rel)
		var bytes int64
		for _, f := range files[b.from:b.to] {
			if path.Dir(f.rel) != dir {
				t.Errorf("batch %v mixes directories", b)
			}
			bytes += f.size
		}
		if b.to-b.from > 1 && bytes > batchBytes {
			t.Errorf("batch %v holds %d bytes", b, bytes)
		}
		perDir[dir]++
	}
	if next != len(files) {
		t.Fatalf("batches end at %d of %d files", next, len(files))
	}
	// a: 64 + 64 + 2. b: x, then sub/y, then z (only what follows). c:
	// two 100 KiB files per 256 KiB batch. d: one file larger than a batch.
	want := map[string]int{"a": 3, "b": 2, "b/sub": 1, "c": 3, "d": 1}
	for dir, n := range want {
		if perDir[dir] != n {
			t.Errorf("%s: %d batches, want %d (%v)", dir, perDir[dir], n, perDir)
		}
	}
}

// BenchmarkCopyTree copies a directory (PISHIP_HOME_BENCH_TREE, e.g. a
// release's payload; by default 4,000 small files in 40 directories) with
// 8 writers, in directory batches (what install does) and one file at a
// time, side by side in alternating order, into fresh directories that
// are removed only at the end (deletions slow later creates on ext4).
// Reports each one's median and batches/files.
func BenchmarkCopyTree(b *testing.B) {
	src := os.Getenv("PISHIP_HOME_BENCH_TREE")
	if src == "" {
		src = b.TempDir()
		for i := range 4000 {
			p := filepath.Join(src, fmt.Sprintf("node_modules/p%02d/lib/f%04d.js", i%40, i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, bytes.Repeat([]byte{byte(i)}, 200+i%5000), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	t, err := planTree(src)
	if err != nil {
		b.Fatal(err)
	}
	single := make([]batch, len(t.files))
	for i := range single {
		single[i] = batch{i, i + 1}
	}
	ways := map[string][]batch{"batches": dirBatches(t.files), "files": single}
	base := b.TempDir()
	times := map[string][]time.Duration{}
	i := 0
	for b.Loop() {
		for _, way := range [][]string{{"batches", "files"}, {"files", "batches"}}[i%2] {
			start := time.Now()
			if _, err := copyBatches(context.Background(), t, src, filepath.Join(base, fmt.Sprint(way, i)), "", DefaultWriters, ways[way]); err != nil {
				b.Fatal(err)
			}
			times[way] = append(times[way], time.Since(start))
		}
		i++
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(times["batches"]), "batches-ms")
	b.ReportMetric(med(times["files"]), "files-ms")
	b.ReportMetric(med(times["batches"])/med(times["files"]), "batches/files")
}
