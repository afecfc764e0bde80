package delta

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/archive"
)

// benchPair is the pair the benchmarks compare: $PISHIP_DELTA_BENCH_FROM
// and $PISHIP_DELTA_BENCH_TO when both are set (two real release
// directories, say two npm-installed Pi versions), else a generated
// version bump: 2,400 source files in 120 directories (200 B to 60 KB of
// JavaScript-like text), of which 5% are edited, 40 bundle chunks renamed
// with small edits, 30 files added (10 of random bytes), 20 deleted.
func benchPair(b *testing.B) pair {
	b.Helper()
	from, to := os.Getenv("PISHIP_DELTA_BENCH_FROM"), os.Getenv("PISHIP_DELTA_BENCH_TO")
	if from != "" && to != "" {
		return pair{from, to}
	}
	r := rand.New(rand.NewPCG(42, 42))
	old := map[string]tfile{}
	cur := map[string]tfile{}
	for i := range 2400 {
		p := fmt.Sprintf("payload/node_modules/pkg%03d/lib/file%04d.js", i%120, i)
		f := tfile{data: text(uint64(i), 200+r.IntN(60_000))}
		old[p] = f
		switch {
		case i%20 == 0:
			cur[p] = tfile{data: edit(f.data, uint64(i))}
		case i%120 == 7:
			// deleted
		default:
			cur[p] = f
		}
	}
	for i := range 40 {
		f := text(uint64(10_000+i), 20_000+r.IntN(200_000))
		old[fmt.Sprintf("payload/dist/chunk-%04x.js", r.Uint32())] = tfile{data: f}
		cur[fmt.Sprintf("payload/dist/chunk-%04x.js", r.Uint32())] = tfile{data: edit(f, uint64(i))}
	}
	for i := range 30 {
		data := text(uint64(20_000+i), 1000+r.IntN(20_000))
		if i%3 == 0 {
			data = noise(uint64(i), 5_000)
		}
		cur[fmt.Sprintf("payload/node_modules/newpkg/f%02d.js", i)] = tfile{data: data}
	}
	dir := b.TempDir()
	p := pair{filepath.Join(dir, "from"), filepath.Join(dir, "to")}
	writeTree(b, p.from, old)
	writeTree(b, p.to, cur)
	return p
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWrite writes the delta of benchPair and reports its bytes
// against the full archive's (stages/archive, what an update downloads
// without a delta).
func BenchmarkWrite(b *testing.B) {
	p := benchPair(b)
	var full countWriter
	if _, err := archive.Write(context.Background(), &full, p.to, archive.Options{}); err != nil {
		b.Fatal(err)
	}
	var res Result
	b.ResetTimer()
	for b.Loop() {
		var err error
		if res, err = Write(context.Background(), io.Discard, p.from, p.to, Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Size), "delta-bytes")
	b.ReportMetric(float64(full.n), "full-bytes")
	b.ReportMetric(float64(res.Size)/float64(full.n), "delta/full")
	b.ReportMetric(float64(res.Patched+res.Added), "frames")
}

// BenchmarkApply applies the delta of benchPair onto its base (the base
// scanned once, as an update does just before).
func BenchmarkApply(b *testing.B) {
	p := benchPair(b)
	var d bytes.Buffer
	if _, err := Write(context.Background(), &d, p.from, p.to, Meta{}); err != nil {
		b.Fatal(err)
	}
	base, err := ScanTree(context.Background(), p.from)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	n := 0
	b.ResetTimer()
	for b.Loop() {
		n++
		dest := filepath.Join(dir, fmt.Sprint(n))
		if _, err := Apply(context.Background(), bytes.NewReader(d.Bytes()), p.from, base, dest, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dest)
		b.StartTimer()
	}
	b.ReportMetric(float64(d.Len()), "delta-bytes")
}

// BenchmarkScanTree lists and hashes benchPair's result tree (what an
// update does to the installed release before Apply).
func BenchmarkScanTree(b *testing.B) {
	p := benchPair(b)
	b.ResetTimer()
	for b.Loop() {
		if _, err := ScanTree(context.Background(), p.to); err != nil {
			b.Fatal(err)
		}
	}
}
