package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var jsWords = strings.Fields(`const let var function return if else for while of in new this await async
import export from default class extends super null undefined true false typeof instanceof
require module exports Object Array String Promise Map Set Symbol Error JSON Math process
options config value result index length push map filter reduce forEach then catch finally
provider model message content stream tool session agent render theme terminal buffer`)

// jsText is JavaScript-like text: compresses about as well as bundled code.
func jsText(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	punct := []string{"(", ")", "{", "}", ";", ".", ",", " = ", " => ", "\n", "\n  ", "[", "]", ": "}
	for b.Len() < n {
		switch r.IntN(4) {
		case 0:
			b.WriteString(punct[r.IntN(len(punct))])
		case 1:
			fmt.Fprintf(&b, "%s%d", jsWords[r.IntN(len(jsWords))], r.IntN(1000))
		default:
			b.WriteString(jsWords[r.IntN(len(jsWords))])
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// binaryish is like a native addon or WASM: half random, half structured.
func binaryish(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; {
		run := min(n-i, 64+r.IntN(256))
		if r.IntN(2) == 0 {
			for j := range run {
				b[i+j] = byte(r.Uint32())
			}
		} else {
			op := byte(r.IntN(16))
			for j := range run {
				b[i+j] = op + byte(j%8)
			}
		}
		i += run
	}
	return b
}

// payloadTree writes a bundled-payload-like tree: 100 files, 20 MB, 70%
// JavaScript-like text (a few large bundle chunks, many small modules) and
// 30% binary-ish content.
func payloadTree(b testing.TB) string {
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	write := func(p string, data []byte, mode os.FileMode) {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(abs), 0o755)
		if err := os.WriteFile(abs, data, mode); err != nil {
			b.Fatal(err)
		}
	}
	// Text: 4 chunks of 2.5 MB, 76 modules of ~53 KB = 14 MB.
	for i := range 4 {
		write(fmt.Sprintf("dist/chunk-%d.js", i), jsText(r, 2500<<10), 0o644)
	}
	for i := range 76 {
		write(fmt.Sprintf("dist/modes/m%02d/index.js", i), jsText(r, 53<<10), 0o644)
	}
	// Binary: 20 files, 6 MB.
	for i := range 18 {
		write(fmt.Sprintf("node_modules/native-%d/build/addon.node", i), binaryish(r, 300<<10), 0o755)
	}
	write("resources/photon_rs_bg.wasm", binaryish(r, 600<<10), 0o644)
	write("bin/pi", []byte("#!/usr/bin/env node\nimport('../dist/chunk-0.js')\n"), 0o755)
	return dir
}

// baseline pipes a plain archive/tar stream of root (WalkDir order, no
// normalization) through klauspost gzip, with no hashing.
func baseline(root string, w io.Writer, level int) error {
	gz, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func treeBytes(root string) int64 {
	var n int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if info, err := d.Info(); err == nil && d.Type().IsRegular() {
			n += info.Size()
		}
		return nil
	})
	return n
}

// BenchmarkWrite compares Write with the baseline (same tree, same level,
// io.Discard). The ratio sub-benchmark times both in each iteration and
// reports Write's time over the baseline's.
func BenchmarkWrite(b *testing.B) {
	root := payloadTree(b)
	size := treeBytes(root)
	ctx := context.Background()
	b.Run("piship", func(b *testing.B) {
		b.SetBytes(size)
		var res Result
		for b.Loop() {
			var err error
			if res, err = Write(ctx, io.Discard, root, Options{Format: V1}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(res.Size), "archive-bytes")
	})
	b.Run("baseline", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if err := baseline(root, io.Discard, DefaultLevel); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ratio", func(b *testing.B) {
		var tp, tb time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := Write(ctx, io.Discard, root, Options{Format: V1}); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := baseline(root, io.Discard, DefaultLevel); err != nil {
				b.Fatal(err)
			}
			tp += t1.Sub(t0)
			tb += time.Since(t1)
		}
		b.ReportMetric(float64(tp)/float64(tb), "piship/baseline")
	})
}

// benchTree is the tree of BenchmarkWriteLevel and BenchmarkExtractTree:
// $PISHIP_ARCHIVE_BENCH_TREE (for example a real installed runtime without
// its node_modules/.bin symlinks), else the synthetic payload.
func benchTree(b *testing.B) string {
	if dir := os.Getenv("PISHIP_ARCHIVE_BENCH_TREE"); dir != "" {
		return dir
	}
	return payloadTree(b)
}

// BenchmarkWriteLevel measures the gzip levels DefaultLevel was chosen
// from: the time to write the archive (ns/op), its size, and the time to
// inflate it as install does (block members on every core; best of 3, after
// the timed loop).
func BenchmarkWriteLevel(b *testing.B) {
	root := benchTree(b)
	size := treeBytes(root)
	for _, level := range []int{1, 3, 5, 6, 7, 9} {
		b.Run(fmt.Sprint("level=", level), func(b *testing.B) {
			b.SetBytes(size)
			var res Result
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				var err error
				if res, err = Write(context.Background(), &out, root, Options{Level: level, Format: V1}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			best := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				z := newPGZReader(bufio.NewReaderSize(bytes.NewReader(out.Bytes()), 64<<10))
				_, err := io.Copy(io.Discard, z)
				z.Close()
				if err != nil {
					b.Fatal(err)
				}
				best = min(best, time.Since(start))
			}
			b.ReportMetric(float64(res.Size), "archive-bytes")
			b.ReportMetric(float64(best.Microseconds())/1000, "inflate-ms")
		})
	}
}

// BenchmarkExtract extracts 2,000 small files (and, for comparison, the
// 100-file payload of BenchmarkWrite) with 8 writers and with 1; and the
// same payload's tar stream as one ordinary gzip member (klauspost, same
// level), which Extract inflates serially: the baseline of the block-member
// format's parallel inflate.
func BenchmarkExtract(b *testing.B) {
	small := b.TempDir()
	order, files := manySmall(2000)
	mkTree(b, small, order, files)
	smallArch, _ := writeArchive(b, small, Options{Format: V1})
	payloadArch, _ := writeArchive(b, payloadTree(b), Options{Format: V1})
	zr, err := gzip.NewReader(bytes.NewReader(payloadArch))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	var one bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&one, DefaultLevel)
	zw.Write(raw)
	zw.Close()
	for _, tc := range []struct {
		name string
		arch []byte
	}{{"small2000", smallArch}, {"payload100", payloadArch}, {"payload100-one-member", one.Bytes()}} {
		for _, writers := range []int{8, 1} {
			b.Run(fmt.Sprintf("%s/writers=%d", tc.name, writers), func(b *testing.B) {
				base := b.TempDir()
				b.SetBytes(int64(len(tc.arch)))
				i := 0
				for b.Loop() {
					dest := filepath.Join(base, fmt.Sprint(i))
					i++
					if _, err := Extract(context.Background(), bytes.NewReader(tc.arch), dest, Limits{Writers: writers}); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					os.RemoveAll(dest)
					b.StartTimer()
				}
			})
		}
	}
}

// manySmall is n small files (1-8 KB, like node_modules) in 40 directories.
func manySmall(n int) ([]string, map[string]file) {
	r := rand.New(rand.NewPCG(1, 2))
	files := map[string]file{}
	for i := range n {
		files[fmt.Sprintf("node_modules/p%02d/lib/f%04d.js", i%40, i)] = file{data: string(jsText(r, 1024+r.IntN(7<<10)))}
	}
	return keys(files), files
}

// BenchmarkExtractTree extracts the archive of benchTree (set
// PISHIP_ARCHIVE_BENCH_TREE to measure a real runtime) with 8 writers and 1.
func BenchmarkExtractTree(b *testing.B) {
	arch, _ := writeArchive(b, benchTree(b), Options{})
	for _, writers := range []int{8, 1} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			base := b.TempDir()
			b.SetBytes(int64(len(arch)))
			i := 0
			for b.Loop() {
				dest := filepath.Join(base, fmt.Sprint(i))
				i++
				if _, err := Extract(context.Background(), bytes.NewReader(arch), dest, Limits{Writers: writers}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(dest)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkExtractFloor puts Extract beside the file-writing floor on the
// same tree (benchTree; PISHIP_ARCHIVE_BENCH_TREE for a real payload), all
// in-process, side by side: floor writes the files from memory with 8
// goroutines, in Extract's directory batches (no decompression, no hashing); gzip extracts the archive as
// Write makes it; stored extracts the same tar stream in block members at
// level 0 (deflate stored blocks: nothing to inflate, still every byte
// hashed and checked). The gap between stored and floor is what hashing and
// checking cost; between gzip and stored, what inflating costs. decode
// writes nothing: it only reads the archive, hashes it, inflates it on
// every core and hashes what comes out, the work no verified install can
// skip; when decode alone exceeds the floor, so must any install. The
// -cpu-ms rows are the process's user and system time during each (Linux):
// an install on n cores takes at least (floor-cpu + decode-cpu) / n.
func BenchmarkExtractFloor(b *testing.B) {
	root := benchTree(b)
	arch, _ := writeArchive(b, root, Options{Format: V1})
	zr, err := gzip.NewReader(bytes.NewReader(arch))
	if err != nil {
		b.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	var stored bytes.Buffer
	zw := newPGZWriter(&stored, 0)
	zw.Write(raw)
	zw.Close()
	floor := memFloor(b, root)
	base := b.TempDir()
	times := map[string][]time.Duration{}
	cpus := map[string][]time.Duration{}
	i := 0
	for b.Loop() {
		// Rotating order, fresh directories, nothing deleted until the end
		// (deletions slow later creates on this machine's ext4).
		modes := []string{"floor", "gzip", "stored", "decode"}
		for k := range modes {
			mode := modes[(i+k)%len(modes)]
			dest := filepath.Join(base, fmt.Sprint(mode, i))
			cpu0 := cpuTime()
			start := time.Now()
			var err error
			switch mode {
			case "floor":
				err = floor(dest)
			case "gzip":
				_, err = Extract(context.Background(), bytes.NewReader(arch), dest, Limits{})
			case "stored":
				_, err = Extract(context.Background(), bytes.NewReader(stored.Bytes()), dest, Limits{})
			case "decode":
				src := &hashReader{r: bytes.NewReader(arch), h: sha256.New()}
				z := newPGZReader(bufio.NewReaderSize(src, 64<<10))
				_, err = io.Copy(sha256.New(), z)
				z.Close()
			}
			if err != nil {
				b.Fatal(err)
			}
			times[mode] = append(times[mode], time.Since(start))
			cpus[mode] = append(cpus[mode], cpuTime()-cpu0)
		}
		i++
	}
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	b.ReportMetric(med(times["floor"]), "floor-ms")
	b.ReportMetric(med(times["gzip"]), "gzip-ms")
	b.ReportMetric(med(times["stored"]), "stored-ms")
	b.ReportMetric(med(times["decode"]), "decode-ms")
	b.ReportMetric(med(cpus["floor"]), "floor-cpu-ms")
	b.ReportMetric(med(cpus["gzip"]), "gzip-cpu-ms")
	b.ReportMetric(med(cpus["decode"]), "decode-cpu-ms")
	b.ReportMetric(med(times["decode"])/med(times["floor"]), "decode/floor")
	b.ReportMetric(med(times["gzip"])/med(times["floor"]), "gzip/floor")
	b.ReportMetric(med(times["stored"])/med(times["floor"]), "stored/floor")
	b.ReportMetric(float64(len(arch)), "gzip-bytes")
	b.ReportMetric(float64(stored.Len()), "stored-bytes")
}

// memFloor reads root's files into memory and returns the floor: a
// function writing them under dest as Extract's writers do (8 goroutines,
// the files of one directory that follow each other, up to batchFiles
// files or batchBytes, on one writer), with nothing to decompress, hash
// or check.
func memFloor(b *testing.B, root string) func(dest string) error {
	type mem struct {
		name string
		data []byte
		perm os.FileMode
	}
	var files []mem
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			dirs = append(dirs, rel)
			return nil
		}
		data, err := os.ReadFile(p)
		fi, _ := d.Info()
		files = append(files, mem{rel, data, fi.Mode().Perm()})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	// floor writes the files as Extract's writers do: the files of one
	// directory that follow each other, up to batchFiles files or
	// batchBytes, on one writer.
	var batches [][]mem
	for i := 0; i < len(files); {
		j, n := i, 0
		dir := filepath.Dir(files[i].name)
		for j < len(files) && j-i < batchFiles && filepath.Dir(files[j].name) == dir && (j == i || n+len(files[j].data) <= batchBytes) {
			n += len(files[j].data)
			j++
		}
		batches = append(batches, files[i:j])
		i = j
	}
	floor := func(dest string) error {
		for _, d := range dirs {
			if err := os.MkdirAll(filepath.Join(dest, d), 0o755); err != nil {
				return err
			}
		}
		ch := make(chan []mem)
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				var first error
				for batch := range ch {
					for _, f := range batch {
						if err := floorWrite(filepath.Join(dest, f.name), f.data, f.perm); err != nil && first == nil {
							first = err
						}
					}
				}
				errs <- first
			}()
		}
		for _, batch := range batches {
			ch <- batch
		}
		close(ch)
		for range 8 {
			if err := <-errs; err != nil {
				return err
			}
		}
		return nil
	}
	return floor
}

// v2BenchTrees are the trees of the V2 benchmarks: an unbundled-like
// tree (5,000 small modules in 40 directories), the bundled-like payload
// (payloadTree), and $PISHIP_ARCHIVE_BENCH_TREE when set.
func v2BenchTrees(b *testing.B) map[string]string {
	small := b.TempDir()
	order, files := manySmall(5000)
	mkTree(b, small, order, files)
	trees := map[string]string{"unbundled": small, "bundled": payloadTree(b)}
	if dir := os.Getenv("PISHIP_ARCHIVE_BENCH_TREE"); dir != "" {
		trees["env"] = dir
	}
	return trees
}

// BenchmarkZstdLevel measures the levels ZstdLevel was chosen from: the
// time to write the V2 archive (ns/op), its size, its size over one
// single zstd frame of the same tar stream at the same level (the cost
// of independent frames, which must stay under 1.08), and the time to
// decode it as install does (all cores, best of 3).
func BenchmarkZstdLevel(b *testing.B) {
	for name, root := range v2BenchTrees(b) {
		for _, level := range []zstd.EncoderLevel{zstd.SpeedDefault, zstd.SpeedBetterCompression} {
			b.Run(fmt.Sprintf("%s/level=%s", name, level), func(b *testing.B) {
				old := zstdLevel
				zstdLevel = level
				defer func() { zstdLevel = old }()
				var out bytes.Buffer
				var res Result
				for b.Loop() {
					out.Reset()
					var err error
					if res, err = Write(context.Background(), &out, root, Options{}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				best := time.Duration(1 << 62)
				var raw []byte
				for range 3 {
					start := time.Now()
					r, _, err := NewTarReader(bytes.NewReader(out.Bytes()), Limits{})
					if err != nil {
						b.Fatal(err)
					}
					raw, err = io.ReadAll(r)
					r.Close()
					if err != nil {
						b.Fatal(err)
					}
					best = min(best, time.Since(start))
				}
				one := encoder().EncodeAll(raw, nil)
				b.ReportMetric(float64(res.Size), "archive-bytes")
				b.ReportMetric(float64(len(one)), "one-frame-bytes")
				b.ReportMetric(float64(res.Size)/float64(len(one)), "v2/one-frame")
				b.ReportMetric(float64(best.Microseconds())/1000, "decode-ms")
			})
		}
	}
}

// BenchmarkExtractV2 puts Extract of a V2 archive beside `zstd -dc | tar
// -x` then `sha256sum -c` of every file (what a shell install that checks
// digests does, from the same archive) and beside writing the same files
// from memory (memFloor), in rotating order, fresh directories, nothing
// deleted until the end. Targets: v2/zstd-tar-sha at most 0.30, v2/floor
// at most 1.5 on the unbundled tree.
func BenchmarkExtractV2(b *testing.B) {
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		b.Fatal("no zstd on PATH: install it (make test-deps)")
	}
	for name, root := range v2BenchTrees(b) {
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "a"+V2.Ext())
			if _, err := Create(context.Background(), path, root, Options{}); err != nil {
				b.Fatal(err)
			}
			arch, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			a, err := Open(bytes.NewReader(arch), Limits{})
			if err != nil {
				b.Fatal(err)
			}
			var sums strings.Builder
			for _, e := range a.Declared().Index {
				fmt.Fprintf(&sums, "%s  %s\n", e.SHA256, e.Path)
			}
			a.Close()
			sumsPath := filepath.Join(dir, "SHA256SUMS")
			if err := os.WriteFile(sumsPath, []byte(sums.String()), 0o644); err != nil {
				b.Fatal(err)
			}
			floor := memFloor(b, root)
			base := b.TempDir()
			times := map[string][]time.Duration{}
			i := 0
			for b.Loop() {
				modes := []string{"floor", "v2", "zstd-tar-sha"}
				for k := range modes {
					mode := modes[(i+k)%len(modes)]
					dest := filepath.Join(base, fmt.Sprint(mode, i))
					start := time.Now()
					var err error
					switch mode {
					case "floor":
						err = floor(dest)
					case "v2":
						_, err = Extract(context.Background(), bytes.NewReader(arch), dest, Limits{})
					case "zstd-tar-sha":
						os.MkdirAll(dest, 0o755)
						cmd := exec.Command("sh", "-c", `"$1" -dc "$2" | tar -xf - -C "$3" && cd "$3" && sha256sum -c --quiet "$4"`, "sh", zstdBin, path, dest, sumsPath)
						var out []byte
						if out, err = cmd.CombinedOutput(); err != nil {
							err = fmt.Errorf("%v: %s", err, out)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					times[mode] = append(times[mode], time.Since(start))
				}
				i++
			}
			med := func(d []time.Duration) float64 {
				s := slices.Clone(d)
				slices.Sort(s)
				return float64(s[len(s)/2].Microseconds()) / 1000
			}
			b.ReportMetric(med(times["v2"]), "v2-ms")
			b.ReportMetric(med(times["zstd-tar-sha"]), "zstd-tar-sha-ms")
			b.ReportMetric(med(times["floor"]), "floor-ms")
			b.ReportMetric(med(times["v2"])/med(times["zstd-tar-sha"]), "v2/zstd-tar-sha")
			b.ReportMetric(med(times["v2"])/med(times["floor"]), "v2/floor")
			b.ReportMetric(float64(len(arch)), "v2-bytes")
		})
	}
}
