package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

func bigData(n int, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return string(b)
}

func sampleTree() ([]string, map[string]file) {
	long := strings.Repeat("d", 60) + "/" + strings.Repeat("e", 60) + "/" + strings.Repeat("f", 90) + ".js" // > 100, splittable
	longer := strings.Repeat("g", 120) + "/" + strings.Repeat("h", 200) + ".js"                             // > 256: PAX
	files := map[string]file{
		"bin/":                         {},
		"bin/pi":                       {data: "#!/bin/sh\necho pi\n", mode: 0o755},
		"empty-dir/":                   {},
		"empty.txt":                    {},
		"node_modules/a/package.json":  {data: `{"name":"a"}`},
		"node_modules/a/index.js":      {data: "module.exports = 1\n"},
		"node_modules/a-b/index.js":    {data: "x"},
		"metadata/target.json":         {data: `{"platform":"linux","arch":"x64"}`},
		"ünïcødé/𝄞.txt":                {data: "music"},
		long:                           {data: "long"},
		longer:                         {data: "longer"},
		"big/one.bin":                  {data: bigData(SmallFile+1, 1)},
		"big/exact.bin":                {data: bigData(SmallFile, 2)},
		"resources/a b/with space.txt": {data: "spaces"},
	}
	return keys(files), files
}

func TestRoundTrip(t *testing.T) { forFormats(t, testRoundTrip) }

func testRoundTrip(t *testing.T, format Format) {
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	arch, res := writeArchive(t, src, Options{MTime: 1700000000, Format: format})
	if res.SHA256 != sha(arch) || res.Size != int64(len(arch)) {
		t.Fatalf("result %+v does not describe the %d bytes written", res, len(arch))
	}
	wantFiles, wantDirs := 0, 0
	for _, p := range keys(readTree(t, src)) {
		if strings.HasSuffix(p, "/") {
			wantDirs++
		} else {
			wantFiles++
		}
	}
	if res.Files != wantFiles || res.Dirs != wantDirs {
		t.Fatalf("Files %d Dirs %d, want %d %d", res.Files, res.Dirs, wantFiles, wantDirs)
	}

	for _, writers := range []int{1, 3, 8} {
		t.Run(fmt.Sprint("writers=", writers), func(t *testing.T) {
			roundTrip(t, src, arch, res, writers, wantFiles, wantDirs)
		})
	}
}

func roundTrip(t *testing.T, src string, arch []byte, res Result, writers, wantFiles, wantDirs int) {
	dest := filepath.Join(t.TempDir(), "out", "1.0.0")
	ex, err := Extract(context.Background(), bytes.NewReader(arch), dest, Limits{Writers: writers})
	if err != nil {
		t.Fatal(err)
	}
	if ex.SHA256 != res.SHA256 || ex.Size != res.Size {
		t.Fatalf("extracted digest %s/%d, written %s/%d", ex.SHA256, ex.Size, res.SHA256, res.Size)
	}
	got, want := readTree(t, dest), readTree(t, src)
	if strings.Join(keys(got), "\n") != strings.Join(keys(want), "\n") {
		t.Fatalf("trees differ:\n got %q\nwant %q", keys(got), keys(want))
	}
	var total int64
	for p, data := range want {
		if got[p] != data {
			t.Errorf("%s: content differs", p)
		}
		if strings.HasSuffix(p, "/") {
			continue
		}
		total += int64(len(data))
		if ex.Files[p] != sha([]byte(data)) {
			t.Errorf("%s: digest %s, want %s", p, ex.Files[p], sha([]byte(data)))
		}
	}
	if d := ex.Declared; d == nil || d.Files != wantFiles || d.Dirs != wantDirs || d.Bytes != total {
		t.Errorf("Declared %+v, want %d files, %d dirs, %d bytes", ex.Declared, wantFiles, wantDirs, total)
	}
	if len(ex.Files) != wantFiles || ex.Bytes != total || ex.Dirs != wantDirs {
		t.Errorf("Extracted: %d files, %d bytes, %d dirs; want %d, %d, %d", len(ex.Files), ex.Bytes, ex.Dirs, wantFiles, total, wantDirs)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(filepath.Join(dest, "bin", "pi"))
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("bin/pi lost its x bit: %v %v", fi.Mode(), err)
		}
		fi, _ = os.Stat(filepath.Join(dest, "empty.txt"))
		if fi.Mode().Perm()&0o111 != 0 {
			t.Errorf("empty.txt became executable: %v", fi.Mode())
		}
	}
}

func TestFormat(t *testing.T) {
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	const mtime = 1234567890
	arch, _ := writeArchive(t, src, Options{MTime: mtime, Format: V1})

	// gzip header: ID, CM=8, FLG=4 (FEXTRA only: no FNAME, no FCOMMENT), MTIME 0, XFL, OS 255,
	// then the block-member subfield 'P' 'Z' with the member's length.
	if !bytes.Equal(arch[:4], []byte{0x1f, 0x8b, 8, 4}) || !bytes.Equal(arch[4:8], []byte{0, 0, 0, 0}) || arch[9] != 255 {
		t.Fatalf("gzip header % x", arch[:10])
	}
	for rest, i := arch, 0; len(rest) > 0; i++ {
		if !isPGZ(rest) {
			t.Fatalf("member %d: header % x", i, rest[:min(len(rest), pgzHeaderLen)])
		}
		rest = rest[min(len(rest), int(binary.LittleEndian.Uint32(rest[16:20]))):]
	}
	zr, err := gzip.NewReader(bytes.NewReader(arch))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || zr.Comment != "" || !bytes.Equal(zr.Extra[:4], []byte{'P', 'Z', 8, 0}) || zr.OS != 255 || !zr.ModTime.IsZero() {
		t.Fatalf("gzip header %+v", zr.Header)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	var names []string
	var declared string
	var want Declared
	for p, data := range readTree(t, src) {
		if strings.HasSuffix(p, "/") {
			want.Dirs++
		} else {
			want.Files++
			want.Bytes += int64(len(data))
		}
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			// The declaration: the first header, and only there.
			if names != nil || declared != "" || len(h.PAXRecords) != 1 {
				t.Fatalf("global header %+v after %q", h, names)
			}
			declared = h.PAXRecords["comment"]
			continue
		}
		names = append(names, h.Name)
		wantFormat := tar.FormatUSTAR
		if !fitsUSTAR(h.Name) || strings.ContainsFunc(h.Name, func(r rune) bool { return r >= 0x80 }) {
			wantFormat = tar.FormatPAX
		}
		if h.Format != wantFormat {
			t.Errorf("%s: format %v, want %v", h.Name, h.Format, wantFormat)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || h.ModTime.Unix() != mtime || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() {
			t.Errorf("%s: header %+v", h.Name, h)
		}
		if len(h.PAXRecords) > 0 && (len(h.PAXRecords) != 1 || h.PAXRecords["path"] == "") {
			t.Errorf("%s: PAX records %v, want only path", h.Name, h.PAXRecords)
		}
		switch {
		case strings.HasSuffix(h.Name, "/"):
			if h.Typeflag != tar.TypeDir || h.Mode != 0o755 {
				t.Errorf("%s: type %c mode %o", h.Name, h.Typeflag, h.Mode)
			}
		case h.Name == "bin/pi":
			if h.Typeflag != tar.TypeReg || h.Mode != 0o755 {
				t.Errorf("%s: type %c mode %o", h.Name, h.Typeflag, h.Mode)
			}
		default:
			if h.Typeflag != tar.TypeReg || h.Mode != 0o644 {
				t.Errorf("%s: type %c mode %o", h.Name, h.Typeflag, h.Mode)
			}
		}
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("not sorted by bytes: %q before %q", names[i-1], names[i])
		}
	}
	if names[0] != "big/" || strings.HasPrefix(names[0], "./") {
		t.Errorf("first entry %q", names[0])
	}
	// "node_modules/a-b/" sorts before "node_modules/a/" ('-' < '/').
	if i, j := indexOf(names, "node_modules/a-b/"), indexOf(names, "node_modules/a/"); i < 0 || j < 0 || i > j {
		t.Errorf("byte order of a-b/ and a/: %d %d", i, j)
	}
	if wantDecl := fmt.Sprintf(`{"schema":"piship-archive/v1","files":%d,"dirs":%d,"bytes":%d}`, want.Files, want.Dirs, want.Bytes); declared != wantDecl {
		t.Errorf("declaration %s, want %s", declared, wantDecl)
	}
	// The first header is the declaration (a PAX global header of
	// archive/tar's fixed fields), then the ustar magic of the first
	// entry, and no PAX header before it.
	if string(raw[257:265]) != "ustar\x0000" || raw[156] != 'g' || cstring(raw[:100]) != "GlobalHead.0.0" {
		t.Errorf("first header: %q magic %q type %q", cstring(raw[:100]), raw[257:265], raw[156])
	}
	first := 1024 // the declaration's header and one block of records
	if string(raw[first+257:first+265]) != "ustar\x0000" || raw[first+156] != '5' {
		t.Errorf("first entry: magic %q type %q", raw[first+257:first+265], raw[first+156])
	}
}

// fitsUSTAR reports whether name fits the 100-byte name field, or splits
// at a "/" into a prefix of up to 155 bytes and a non-empty name of up to 100.
func fitsUSTAR(name string) bool {
	if len(name) <= 100 {
		return true
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' && i <= 155 && len(name)-i-1 >= 1 && len(name)-i-1 <= 100 {
			return true
		}
	}
	return false
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// A size of 8 GiB or more needs a PAX size record; smaller ones do not.
func TestTarHeaderSizes(t *testing.T) {
	for _, tc := range []struct {
		size int64
		pax  bool
	}{{8<<30 - 1, false}, {8 << 30, true}, {9 << 30, true}} {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.WriteHeader(tarHeader("f", false, false, tc.size, 0)); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		if got := b[156] == 'x'; got != tc.pax {
			t.Errorf("size %d: PAX %v, want %v", tc.size, got, tc.pax)
		}
		if tc.pax && !bytes.Contains(b, fmt.Appendf(nil, "size=%d\n", tc.size)) {
			t.Errorf("size %d: no size record", tc.size)
		}
	}
}

func TestDeterminism(t *testing.T) { forFormats(t, testDeterminism) }

func testDeterminism(t *testing.T, format Format) {
	order, files := sampleTree()

	// Tree A: sorted creation order, UTC, restrictive modes.
	orig := time.Local
	t.Cleanup(func() { time.Local = orig })
	time.Local = time.UTC
	t.Setenv("TZ", "UTC")
	a := t.TempDir()
	fa := map[string]file{}
	for p, f := range files {
		switch {
		case strings.HasSuffix(p, "/"):
			f.mode = 0o700
		case f.mode == 0o755:
			f.mode = 0o700
		default:
			f.mode = 0o600
		}
		fa[p] = f
	}
	mkTree(t, a, order, fa)
	arch1, _ := writeArchive(t, a, Options{MTime: 42, Format: format})

	// Tree B: reverse creation order, Tokyo time, permissive modes, other mtimes.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zoneinfo:", err)
	}
	t.Setenv("TZ", "Asia/Tokyo")
	time.Local = tokyo
	b := t.TempDir()
	rev := make([]string, len(order))
	for i, p := range order {
		rev[len(order)-1-i] = p
	}
	fb := map[string]file{}
	for p, f := range files {
		switch {
		case strings.HasSuffix(p, "/"):
			f.mode = 0o777
		case f.mode == 0o755:
			f.mode = 0o777
		default:
			f.mode = 0o666
		}
		fb[p] = f
	}
	mkTree(t, b, rev, fb)
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, tokyo)
	filepath.WalkDir(b, func(p string, d os.DirEntry, err error) error {
		os.Chtimes(p, old, old)
		return nil
	})
	arch2, _ := writeArchive(t, b, Options{MTime: 42, Format: format})
	if !bytes.Equal(arch1, arch2) {
		t.Fatalf("archives differ: %d and %d bytes", len(arch1), len(arch2))
	}
	arch3, _ := writeArchive(t, b, Options{MTime: 43, Format: format})
	if bytes.Equal(arch1, arch3) {
		t.Fatal("MTime does not reach the archive")
	}
}

func TestCreate(t *testing.T) {
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	out := t.TempDir()
	path := filepath.Join(out, "pi-1.0.0-linux-x64.tar.gz")
	res, err := Create(context.Background(), path, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if res.SHA256 != sha(b) || res.Size != int64(len(b)) {
		t.Fatalf("Result %s/%d, file %s/%d", res.SHA256, res.Size, sha(b), len(b))
	}
	if des, _ := os.ReadDir(out); len(des) != 1 {
		t.Fatalf("leftovers beside the archive: %v", des)
	}
	if runtime.GOOS != "windows" {
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("mode %v", fi.Mode())
		}
	}
	same, _ := writeArchive(t, src, Options{})
	if !bytes.Equal(same, b) {
		t.Error("Create and Write differ")
	}

	// A failing Create leaves nothing at path and no temp file.
	if runtime.GOOS != "windows" {
		if err := os.Symlink("bin/pi", filepath.Join(src, "link")); err != nil {
			t.Fatal(err)
		}
		bad := filepath.Join(out, "bad.tar.gz")
		_, err = Create(context.Background(), bad, src, Options{})
		if err == nil || !strings.Contains(err.Error(), "link") || !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("symlink: %v", err)
		}
		if des, _ := os.ReadDir(out); len(des) != 1 {
			t.Fatalf("leftovers after a failure: %v", des)
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	cases := map[string]func(dir string) error{
		"symlink": func(dir string) error { return os.Symlink("x", filepath.Join(dir, "s")) },
		"reserved name": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "con.txt"), nil, 0o644)
		},
	}
	if runtime.GOOS != "windows" {
		cases["backslash"] = func(dir string) error { return os.WriteFile(filepath.Join(dir, `a\b`), nil, 0o644) }
		cases["fifo"] = mkfifo
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := mk(dir); err != nil {
				t.Skip(err)
			}
			_, err := Write(context.Background(), io.Discard, dir, Options{})
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, io.Discard, t.TempDir(), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// An empty tree is just the end marker.
func TestEmptyTree(t *testing.T) {
	arch, res := writeArchive(t, t.TempDir(), Options{})
	if res.Files != 0 || res.Dirs != 0 {
		t.Fatal(res)
	}
	ex, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "d"), Limits{})
	if err != nil || len(ex.Files) != 0 {
		t.Fatal(ex, err)
	}
}
