package home

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
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
// 8 writers two ways, side by side in alternating order, into fresh
// directories that are removed only at the end (deletions slow later
// creates on ext4): batches is what install does (directory batches, each
// directory opened once on both sides, files copied with openat); files
// is how it copied before session 10 (any file to any writer, by path,
// through os.Open and os.OpenFile: copyFile, still the copy where there is
// no openat). Reports each one's median and batches/files.
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
	byPath := func(dst string) error {
		for _, d := range t.dirs {
			if err := os.MkdirAll(filepath.Join(dst, filepath.FromSlash(d)), 0o755); err != nil {
				return err
			}
		}
		return parallel(context.Background(), len(t.files), DefaultWriters, func(i int, buf []byte) error {
			f := t.files[i]
			return copyByPath(filepath.Join(src, filepath.FromSlash(f.rel)), filepath.Join(dst, filepath.FromSlash(f.rel)), buf)
		})
	}
	base := b.TempDir()
	times := map[string][]time.Duration{}
	i := 0
	for b.Loop() {
		for _, way := range [][]string{{"batches", "files"}, {"files", "batches"}}[i%2] {
			dst := filepath.Join(base, fmt.Sprint(way, i))
			start := time.Now()
			var err error
			if way == "batches" {
				_, err = copyTree(context.Background(), t, src, dst, "", DefaultWriters)
			} else {
				err = byPath(dst)
			}
			if err != nil {
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

// copyByPath is the baseline BenchmarkCopyTree measures batches
// against: each file opened by its whole path on both sides, through
// os.File, hashed as copied.
func copyByPath(src, dst string, buf []byte) error {
	in, err := atomicfs.OpenRegular(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.CopyBuffer(io.MultiWriter(out, sha256.New()), struct{ io.Reader }{in}, buf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyTree copies every file with its digest and mode; a file that turned
// into a symlink or a directory after the tree was planned is refused, and
// nothing is followed out of the source.
// swappedIn holds the platform's further kinds of file a copy must refuse
// in place of a listed one (copy_unix_test.go: a named pipe).
var swappedIn = map[string]func(p string) error{}

func TestCopyTree(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "d")
	files := map[string]string{"a.txt": "a", "lib/b.js": "b()", "lib/x/c.js": "", "lib/x/big.bin": string(bytes.Repeat([]byte("z"), 700<<10))}
	for rel, data := range files {
		p := filepath.Join(src, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(src, "lib", "b.js"), 0o755)
	tr, err := planTree(src)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := copyTree(context.Background(), tr, src, dst, "payload/", 3)
	if err != nil {
		t.Fatal(err)
	}
	for rel, data := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil || string(got) != data {
			t.Errorf("%s: %v, %d bytes, want %d", rel, err, len(got), len(data))
		}
		if want := sha256.Sum256([]byte(data)); sums["payload/"+rel] != hex.EncodeToString(want[:]) {
			t.Errorf("%s: digest %s", rel, sums["payload/"+rel])
		}
	}
	if fi, _ := os.Stat(filepath.Join(dst, "lib", "b.js")); fi == nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("lib/b.js mode: %v", fi)
	}

	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	swaps := map[string]func(p string) error{
		"symlink":   func(p string) error { return os.Symlink(outside, p) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
	}
	maps.Copy(swaps, swappedIn)
	for name, swap := range swaps {
		t.Run(name, func(t *testing.T) {
			tr, err := planTree(src)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(src, "lib", "b.js")
			old, _ := os.ReadFile(p)
			os.Remove(p)
			if err := swap(p); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(p); os.WriteFile(p, old, 0o755) })
			out := filepath.Join(t.TempDir(), "d")
			done := make(chan error, 1)
			go func() { _, err := copyTree(context.Background(), tr, src, out, "", 2); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("copied a file that is no longer regular")
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the copy still waits on the %s after 20 s", name)
			}
			if got, err := os.ReadFile(filepath.Join(out, "lib", "b.js")); err == nil && string(got) == "secret" {
				t.Fatal("followed the symlink out of the source")
			}
		})
	}
}

// planTree lists a tree in filepath.WalkDir's order (which the batches
// follow), with sizes and exec bits, and refuses a symlink anywhere.
func TestPlanTreeOrder(t *testing.T) {
	src := t.TempDir()
	for i := range 300 {
		p := filepath.Join(src, fmt.Sprintf("n/p%d/%s/f%03d", i%7, []string{"lib", "dist", "lib/x", "a-b", "a.b"}[i%5], i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, bytes.Repeat([]byte("x"), i), []os.FileMode{0o644, 0o755}[i%2])
	}
	os.WriteFile(filepath.Join(src, "top"), nil, 0o644)
	os.MkdirAll(filepath.Join(src, "empty", "dir"), 0o755)

	var wantDirs []string
	var wantFiles []treeFile
	filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			wantDirs = append(wantDirs, rel)
		} else {
			fi, _ := d.Info()
			wantFiles = append(wantFiles, treeFile{rel: rel, size: fi.Size(), exec: fi.Mode()&0o111 != 0})
		}
		return nil
	})
	tr, err := planTree(src)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.dirs, wantDirs) {
		t.Fatalf("dirs\n%v\nwant\n%v", tr.dirs, wantDirs)
	}
	if !slices.Equal(tr.files, wantFiles) {
		t.Fatalf("files\n%v\nwant\n%v", tr.files, wantFiles)
	}
	var total int64
	for _, f := range wantFiles {
		total += f.size
	}
	if tr.bytes != total {
		t.Fatalf("bytes %d, want %d", tr.bytes, total)
	}

	os.Symlink("/etc/passwd", filepath.Join(src, "n", "p3", "lib", "zz"))
	if _, err := planTree(src); err == nil || !strings.Contains(err.Error(), "n/p3/lib/zz is not a regular file") {
		t.Fatalf("planTree with a symlink: %v", err)
	}
}

// A release directory holding paths that are one file on macOS or
// Windows is refused as its archive would be (archive.Names), for every
// target, before anything is copied.
func TestInstallDirectoryRefusesCollidingNames(t *testing.T) {
	for name, extra := range map[string]map[string]string{
		"case twins":     {"node_modules/x/A.js": "1", "node_modules/x/a.js": "2"},
		"NFC/NFD twins":  {"resources/caf\u00e9.txt": "1", "resources/cafe\u0301.txt": "2"},
		"trailing dot":   {"resources/notes.": "1"},
		"trailing space": {"resources/notes ": "1"},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			s := spec("1.0.0")
			s.extra = extra
			rel := makeRelease(t, e.src, s)
			_, err := e.install(rel)
			wantCode(t, err, receipt.CodeConfigInvalid)
			for p := range extra {
				if q := strings.Trim(strconv.QuoteToASCII(p), `"`); !strings.Contains(err.Error(), q) {
					t.Errorf("%v does not name %q", err, p)
				}
			}
			if _, err := os.Stat(receipt.VersionDir(e.homes.Install, "hello", "1.0.0")); err == nil {
				t.Error("copied despite the refusal")
			}
		})
	}
}
