package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// forFormats runs test once per format.
func forFormats(t *testing.T, test func(*testing.T, Format)) {
	for _, f := range []Format{V1, V2} {
		t.Run(string(f), func(t *testing.T) { test(t, f) })
	}
}

// zsFrames is a V2 archive of the given raw frames, encoded as Write
// encodes them, and a seek table of their sizes.
func zsFrames(frames ...[]byte) []byte {
	var out []byte
	var sizes [][2]uint32
	for _, f := range frames {
		c := encoder().EncodeAll(f, nil)
		sizes = append(sizes, [2]uint32{uint32(len(c)), uint32(len(f))})
		out = append(out, c...)
	}
	return append(out, seekTable(sizes)...)
}

// splitFrames cuts a V2 archive into its frames (compressed) by its seek
// table, which it returns last.
func splitFrames(t testing.TB, b []byte) [][]byte {
	n := int(binary.LittleEndian.Uint32(b[len(b)-9:]))
	st := b[len(b)-(8+8*n+9):]
	if binary.LittleEndian.Uint32(st) != seekTableMagic {
		t.Fatalf("no seek table at the end")
	}
	var fr [][]byte
	at := 0
	for k := range n {
		c := int(binary.LittleEndian.Uint32(st[8+8*k:]))
		fr = append(fr, b[at:at+c])
		at += c
	}
	return append(fr, st)
}

func unframe(t testing.TB, c []byte) []byte {
	d, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	raw, err := d.DecodeAll(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// v2Of wraps a hand-built tar (without declaration) in V2 as Write
// would: a declaration with a true index in frame 0, the tar in frame 1.
// The tar is scanned leniently (hostile entries included): every entry up
// to the first it cannot parse is declared.
func v2Of(tarb []byte) []byte {
	var d Declared
	dirs := map[string]bool{}
	var pax map[string]string
	for at := 0; at+512 <= len(tarb); {
		b := tarb[at : at+512]
		if isZero(b) {
			break
		}
		name := cstring(b[0:100])
		if p := cstring(b[345:500]); string(b[257:263]) == "ustar\x00" && p != "" {
			name = p + "/" + name
		}
		size, ok := parseNumeric(b[124:136])
		if !ok || size < 0 {
			break
		}
		typ := b[156]
		if typ == 'x' {
			end := min(len(tarb), at+512+int(size))
			pax, _ = parsePAX(tarb[at+512:end], 0, "")
			at += 512 + int(padded(size))
			continue
		}
		if p, ok := pax["path"]; ok {
			name = p
		}
		if v, ok := pax["size"]; ok {
			fmt.Sscan(v, &size)
		}
		pax = nil
		start := at + 512
		data := tarb[min(len(tarb), start):min(len(tarb), start+int(size))] // short when truncated
		at = start + int(padded(size))
		for i := range len(name) {
			if name[i] == '/' && i > 0 {
				dirs[name[:i]] = true
			}
		}
		switch {
		case typ == '5':
			dirs[strings.TrimSuffix(name, "/")] = true
		case typ == '0' || typ == 0:
			s := sha256.Sum256(data)
			d.Files++
			d.Bytes += size
			d.Index = append(d.Index, IndexEntry{Path: name, Frame: 1, Offset: int64(start), Size: size, SHA256: hex.EncodeToString(s[:])})
		}
		if at > len(tarb) {
			break
		}
	}
	d.Dirs = len(dirs)
	return zsFrames(declFrame(d), tarb)
}

// declFrame is the first frame of a V2 archive declaring d.
func declFrame(d Declared) []byte {
	b, err := declarationV2(d)
	if err != nil {
		panic(err)
	}
	return b
}

// A declaration larger than the 1 MiB archive/tar reads or writes (the
// index of ~4,000 files with long paths): Write writes it, Extract reads
// it, zstd -dc | tar -x (GNU tar) ignores it, and NewTarReader skips it,
// so archive/tar reads the entries after it (as repo add reads
// release.json).
func TestV2DeclarationOverOneMiB(t *testing.T) {
	src := t.TempDir()
	dir := filepath.Join(src, strings.Repeat("d", 100), strings.Repeat("e", 100))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 4000
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%05d-%s.js", i, strings.Repeat("x", 40))), []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(src, "release.json"), []byte("{}"), 0o644)
	arch, _ := writeArchive(t, src, Options{MTime: 7})
	fr := splitFrames(t, arch)
	var decl bytes.Buffer
	dec, _ := zstd.NewReader(nil)
	raw, err := dec.DecodeAll(fr[0], nil)
	if err != nil || len(raw) <= 1<<20 {
		t.Fatalf("the declaration frame holds %d bytes (%v), want over 1 MiB", len(raw), err)
	}
	decl.Write(raw)
	x, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "x"), Limits{})
	if err != nil || len(x.Files) != n+1 || len(x.Declared.Index) != n+1 {
		t.Fatalf("Extract: %v", err)
	}
	r, f, err := NewTarReader(bytes.NewReader(arch), Limits{})
	if err != nil || f != V2 {
		t.Fatalf("NewTarReader: %v %v", f, err)
	}
	defer r.Close()
	tr := tar.NewReader(r)
	seen := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("archive/tar after NewTarReader: %v", err)
		}
		if h.Typeflag == tar.TypeReg {
			seen++
		}
	}
	if seen != n+1 {
		t.Fatalf("archive/tar read %d files after the declaration, want %d", seen, n+1)
	}
	// GNU tar reads the large global header and extracts every file.
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		t.Fatal("no zstd on PATH: install it (make test-deps) to check V2 archives against the reference decoder")
	}
	path := filepath.Join(t.TempDir(), "a"+V2.Ext())
	os.WriteFile(path, arch, 0o644)
	out := t.TempDir()
	if b, err := exec.Command("sh", "-c", `"$1" -dc "$2" | tar -xf - -C "$3"`, "sh", zstdBin, path, out).CombinedOutput(); err != nil || len(b) > 0 {
		t.Fatalf("zstd -dc | tar -x: %v\n%s", err, b)
	}
	if got := readTree(t, out); len(got) != len(readTree(t, src)) {
		t.Fatalf("GNU tar extracted %d entries, want %d", len(got), len(readTree(t, src)))
	}
}

// A V2 archive, byte by byte: the first frame holds the declaration
// alone, every other frame at most FrameSize bytes and cut at entry
// boundaries but inside a file larger than a frame, the index tells
// where each file is and what it hashes to, the seek table is last and
// true, and the frames decompress to the tar stream V1 holds.
func TestV2Layout(t *testing.T) {
	src := t.TempDir()
	order, files := manyFiles(300)
	files["huge.bin"] = file{data: bigData(2*FrameSize+100, 9)}
	files["just/fits.bin"] = file{data: bigData(FrameSize-2048, 10)}
	order = keys(files)
	mkTree(t, src, order, files)
	arch, _ := writeArchive(t, src, Options{MTime: 7})
	fr := splitFrames(t, arch)
	fr = fr[:len(fr)-1]
	if got := len(bytes.Join(fr, nil)) + 8 + 8*len(fr) + 9; got != len(arch) {
		t.Fatalf("frames and seek table make %d bytes of %d", got, len(arch))
	}
	raws := make([][]byte, len(fr))
	for k, c := range fr {
		raws[k] = unframe(t, c)
		if k > 0 && len(raws[k]) > FrameSize {
			t.Errorf("frame %d holds %d bytes", k, len(raws[k]))
		}
		// Frame_Content_Size, checksum, no dictionary.
		if fhd := c[4]; fhd>>6 == 0 && fhd>>5&1 == 0 || fhd>>2&1 == 0 || fhd&3 != 0 {
			t.Errorf("frame %d: header byte %08b", k, fhd)
		}
	}
	tr := tar.NewReader(bytes.NewReader(raws[0]))
	h, err := tr.Next()
	if err != nil || h.Typeflag != tar.TypeXGlobalHeader {
		t.Fatalf("frame 0: %v %v", h, err)
	}
	if _, err := tr.Next(); err != io.EOF && err != io.ErrUnexpectedEOF {
		t.Fatalf("frame 0 holds more than the declaration: %v", err)
	}
	d, err := parseDeclaration([]byte(paxData("comment", h.PAXRecords["comment"])), 0, "", V2)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Index) != d.Files || d.Files == 0 {
		t.Fatalf("index of %d for %d files", len(d.Index), d.Files)
	}
	for _, e := range d.Index {
		want := files[e.Path].data
		var got []byte
		for k, off := e.Frame, e.Offset; int64(len(got)) < e.Size; k, off = k+1, 0 {
			got = append(got, raws[k][off:min(int64(len(raws[k])), off+e.Size-int64(len(got)))]...)
		}
		if string(got) != want || e.SHA256 != sha([]byte(want)) {
			t.Fatalf("%s: the index does not lead to its bytes (frame %d offset %d)", e.Path, e.Frame, e.Offset)
		}
	}
	v1, _ := writeArchive(t, src, Options{MTime: 7, Format: V1})
	tar1 := gunzip(t, v1)
	tar2 := bytes.Join(raws[1:], nil)
	// The same entries after the declaration (NewTarReader skips it).
	if !bytes.Equal(tar1, tar2) {
		t.Fatalf("V2's tar after the declaration differs from V1's: %d bytes against %d", len(tar2), len(tar1))
	}
	// The huge file has frames of its own, cut every FrameSize bytes.
	var huge IndexEntry
	for _, e := range d.Index {
		if e.Path == "huge.bin" {
			huge = e
		}
	}
	if huge.Offset != 512 || len(raws[huge.Frame]) != FrameSize || len(raws[huge.Frame+1]) != FrameSize {
		t.Fatalf("huge.bin at frame %d offset %d; frames of %d and %d bytes", huge.Frame, huge.Offset, len(raws[huge.Frame]), len(raws[huge.Frame+1]))
	}
	// Declared before anything is extracted.
	a, err := Open(bytes.NewReader(arch), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Format() != V2 || a.Declared() == nil || len(a.Declared().Index) != d.Files {
		t.Fatalf("Open: %s %+v", a.Format(), a.Declared())
	}
}

// gunzip is the tar stream of an archive of either format after its
// declaration (NewTarReader).
func gunzip(t testing.TB, b []byte) []byte {
	r, _, err := NewTarReader(bytes.NewReader(b), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The same tree gives the same V2 bytes on 1 and 4 cores, run after run.
func TestV2Reproducible(t *testing.T) {
	src := t.TempDir()
	order, files := manyFiles(500)
	files["big.bin"] = file{data: bigData(FrameSize+5000, 3)}
	order = keys(files)
	mkTree(t, src, order, files)
	var first []byte
	for _, procs := range []int{1, 4, 1, 4} {
		old := runtime.GOMAXPROCS(procs)
		arch, _ := writeArchive(t, src, Options{MTime: 5})
		runtime.GOMAXPROCS(old)
		if first == nil {
			first = arch
		} else if !bytes.Equal(first, arch) {
			t.Fatalf("GOMAXPROCS %d: %d bytes differ from the first run's %d", procs, len(arch), len(first))
		}
	}
}

// NewTarReader reads both formats by their magic, whatever the name.
func TestNewTarReader(t *testing.T) {
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	for _, f := range []Format{V1, V2} {
		arch, _ := writeArchive(t, src, Options{Format: f})
		r, got, err := NewTarReader(bytes.NewReader(arch), Limits{})
		if err != nil || got != f {
			t.Fatalf("%s: %s %v", f, got, err)
		}
		tr := tar.NewReader(r)
		n := 0
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if h.Typeflag == tar.TypeReg {
				b, _ := io.ReadAll(tr)
				if string(b) != files[h.Name].data {
					t.Fatalf("%s: %s differs", f, h.Name)
				}
				n++
			}
		}
		r.Close()
		if n == 0 {
			t.Fatalf("%s: no files", f)
		}
	}
	if _, _, err := NewTarReader(strings.NewReader("PK\x03\x04"), Limits{}); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Fatalf("a zip: %v", err)
	}
	for name, want := range map[string]Format{"a-1-linux-x64.tar.gz": V1, "a-1-linux-x64.tar.zst": V2} {
		if f, ok := FormatOfName(name); !ok || f != want || !strings.HasSuffix(name, f.Ext()) {
			t.Errorf("%s: %s %v", name, f, ok)
		}
	}
	if _, ok := FormatOfName("a.zip"); ok {
		t.Error("a.zip named a format")
	}
}

// Debian's zstd reads what Write makes: zstd -t accepts it, and
// zstd -dc | tar -x gives exactly the tree Write read (the seek table is
// a skippable frame, the declaration a comment tar ignores).
func TestZstdInterop(t *testing.T) {
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		t.Fatal("no zstd on PATH: install it (make test-deps) to check V2 archives against the reference decoder")
	}
	src := t.TempDir()
	order, files := sampleTree()
	files["huge.bin"] = file{data: bigData(FrameSize+777, 4)}
	order = keys(files)
	mkTree(t, src, order, files)
	path := filepath.Join(t.TempDir(), "a"+V2.Ext())
	if _, err := Create(context.Background(), path, src, Options{}); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(zstdBin, "-q", "-t", path).CombinedOutput(); err != nil {
		t.Fatalf("zstd -t: %v\n%s", err, b)
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", `"$1" -dc "$2" | tar -xf - -C "$3"`, "sh", zstdBin, path, out)
	if b, err := cmd.CombinedOutput(); err != nil || len(b) > 0 {
		t.Fatalf("zstd -dc | tar -x: %v\n%s", err, b)
	}
	want, got := readTree(t, src), readTree(t, out)
	if !slices.Equal(keys(got), keys(want)) {
		t.Fatalf("extracted %q, want %q", keys(got), keys(want))
	}
	for p, d := range want {
		if got[p] != d {
			t.Errorf("%s differs", p)
		}
	}
}

// A file's index entry is checked against its header (nothing of it is
// written), its SHA-256 against its bytes (a small file is refused before
// it is written, a streamed one once written; the extraction fails).
func TestV2Hostile(t *testing.T) {
	ok := ent{name: "ok.txt", data: "fine"}
	okTar := func(es ...ent) []byte { return tarBytes(append([]ent{ok}, es...), nil) }
	// index rewrites the declaration of a true V2 archive of tarb.
	declOfV2 := func(tarb []byte) *Declared {
		raw := unframe(t, splitFrames(t, v2Of(tarb))[0])
		h, _ := tar.NewReader(bytes.NewReader(raw)).Next()
		d, err := parseDeclaration([]byte(paxData("comment", h.PAXRecords["comment"])), 0, "", V2)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	withIndex := func(tarb []byte, edit func(d *Declared)) []byte {
		d := declOfV2(tarb)
		edit(d)
		return zsFrames(declFrame(*d), tarb)
	}
	big := strings.Repeat("b", SmallFile+10)
	good := v2Of(okTar(ent{name: "f", data: "xyz"}))
	fr := splitFrames(t, good)
	n := len(fr) - 1
	seekTab := func(edit func(st []byte) []byte) []byte {
		st := slices.Clone(fr[n])
		return slices.Concat(bytes.Join(fr[:n], nil), edit(st))
	}
	type tc struct {
		name    string
		arch    []byte
		rule    Rule
		allowed []string
	}
	cases := []tc{
		{"seek table: a frame's compressed size", seekTab(func(st []byte) []byte { st[8]++; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: a frame's decompressed size", seekTab(func(st []byte) []byte { st[12+8]--; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: count", seekTab(func(st []byte) []byte { st[len(st)-9]++; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: size field", seekTab(func(st []byte) []byte { st[4]++; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: footer magic", seekTab(func(st []byte) []byte { st[len(st)-1]++; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: descriptor", seekTab(func(st []byte) []byte { st[len(st)-5] = 0x80; return st }), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: missing", bytes.Join(fr[:n], nil), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: not last", slices.Concat(bytes.Join(fr[:n], nil), fr[n], fr[1]), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: trailing bytes", slices.Concat(good, []byte{0}), RuleSeekTable, []string{"ok.txt", "f"}},
		{"seek table: first", slices.Concat(seekTable(nil), good), RuleGzip, nil},
		{"another skippable frame", slices.Concat(fr[0], []byte{0x50, 0x2a, 0x4d, 0x18, 1, 0, 0, 0, 0}, fr[1], fr[2]), RuleSeekTable, nil},
		{"garbage between frames", slices.Concat(fr[0], []byte("junk"), fr[1], fr[2]), RuleZstd, nil},
		{"truncated frame", slices.Concat(fr[0], fr[1][:len(fr[1])-3]), RuleTruncated, nil},
		{"bad frame checksum", slices.Concat(fr[0], slices.Concat(fr[1][:len(fr[1])-1], []byte{fr[1][len(fr[1])-1] ^ 1}), fr[2]), RuleZstd, nil},
		{"frame without content size", slices.Concat(fr[0], noFCS(t), fr[2]), RuleZstd, nil},
		{"frame with a dictionary id", slices.Concat(fr[0], withFHD(fr[1], 1), fr[2]), RuleZstd, nil},
		{"frame without checksum", slices.Concat(fr[0], withFHD(fr[1], -4), fr[2]), RuleZstd, nil},
		{"frame with a huge window", slices.Concat(fr[0], hugeWindow(), fr[2]), RuleZstd, nil},
		{"declaration and an entry in frame 0", func() []byte {
			return zsFrames(slices.Concat(unframe(t, fr[0]), okTar()))
		}(), RuleFrameCut, nil},
		{"frame cut inside an entry", func() []byte {
			raw := unframe(t, fr[1])
			return zsFrames(unframe(t, fr[0]), raw[:700], raw[700:])
		}(), RuleFrameCut, nil},
		{"frame cut inside a large file, not at a frame size", func() []byte {
			tarb := okTar(ent{name: "big", data: strings.Repeat("z", FrameSize+10)})
			d := declOfV2(tarb)
			d.Index[1].Frame, d.Index[1].Offset = 2, 512
			raw := tarb[1024:]
			return zsFrames(declFrame(*d), tarb[:1024], raw[:FrameSize-1], raw[FrameSize-1:])
		}(), RuleFrameCut, []string{"ok.txt", "big"}}, // streamed: created, its chunks written up to the cut
		{"no declaration", zsFrames(okTar()), RuleIndex, nil},
		{"a V1 declaration", zsFrames(tarBytes([]ent{declOf(1, 0, 4), ok}, nil)), RuleDeclared, nil},
		{"declaration without an index", zsFrames(declFrame1(`{"schema":"piship-archive/v2","files":1,"dirs":0,"bytes":4}`), okTar()), RuleIndex, nil},
		{"index shorter than the files", withIndex(okTar(), func(d *Declared) { d.Index = []IndexEntry{} }), RuleIndex, nil},
		{"index: path", withIndex(okTar(ent{name: "f", data: "xyz"}), func(d *Declared) { d.Index[1].Path = "g" }), RuleIndex, []string{"ok.txt"}},
		{"index: size", withIndex(okTar(ent{name: "f", data: "xyz"}), func(d *Declared) { d.Index[1].Size = 2 }), RuleIndex, []string{"ok.txt"}},
		{"index: frame", withIndex(okTar(ent{name: "f", data: "xyz"}), func(d *Declared) { d.Index[1].Frame = 2 }), RuleIndex, []string{"ok.txt"}},
		{"index: offset", withIndex(okTar(ent{name: "f", data: "xyz"}), func(d *Declared) { d.Index[1].Offset += 512 }), RuleIndex, []string{"ok.txt"}},
		{"index: sha256 of a small file, refused before it is written", withIndex(okTar(ent{name: "f", data: "xyz"}), func(d *Declared) { d.Index[1].SHA256 = sha([]byte("xyy")) }), RuleIndex, []string{"ok.txt"}},
		{"index: sha256 of a streamed file, refused once written", withIndex(okTar(ent{name: "f", data: big}), func(d *Declared) { d.Index[1].SHA256 = sha([]byte("x")) }), RuleIndex, []string{"ok.txt", "f"}},
		{"index: not hex", withIndex(okTar(), func(d *Declared) { d.Index[0].SHA256 = strings.ToUpper(d.Index[0].SHA256) }), RuleDeclared, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			par := t.TempDir()
			os.WriteFile(filepath.Join(par, "sentinel"), []byte("s"), 0o644)
			dest := filepath.Join(par, "dest")
			_, err := Extract(context.Background(), bytes.NewReader(c.arch), dest, Limits{})
			ie, ok := IsIntegrity(err)
			if !ok || ie.Rule != c.rule {
				t.Fatalf("err = %v, want rule %s", err, c.rule)
			}
			t.Log(err)
			assertOnlyDest(t, par)
			for p := range readTree(t, dest) {
				if !slices.Contains(c.allowed, p) {
					t.Errorf("dest holds %q, allowed only %q", p, c.allowed)
				}
			}
		})
	}
	// The reference archive is valid.
	if _, err := Extract(context.Background(), bytes.NewReader(good), filepath.Join(t.TempDir(), "d"), Limits{}); err != nil {
		t.Fatal(err)
	}
}

func declFrame1(comment string) []byte {
	return tarBytes([]ent{{name: "g", typ: 'g', data: paxData("comment", comment)}}, nil)[:1024]
}

// withFHD re-encodes frame c's header byte: +1 sets a dictionary id flag
// (adding its byte), -4 clears the checksum flag (dropping the checksum).
func withFHD(c []byte, edit int) []byte {
	c = slices.Clone(c)
	switch edit {
	case 1:
		c[4] |= 1
		return slices.Concat(c[:5], []byte{7}, c[5:])
	default:
		c[4] &^= 4
		return c[:len(c)-4]
	}
}

// noFCS is a frame of 100 zero bytes without Frame_Content_Size: a
// window descriptor instead, one raw block.
func noFCS(t *testing.T) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x00} // checksum flag, window 1 KiB
	bh := uint32(100<<3 | 1)
	b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
	b = append(b, make([]byte, 100)...)
	return append(b, 0, 0, 0, 0)
}

// hugeWindow is a frame header claiming a 1 GiB window.
func hugeWindow() []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x44, 20 << 3, 100}
	bh := uint32(100<<3 | 1)
	b = append(b, byte(bh), byte(bh>>8), byte(bh>>16))
	b = append(b, make([]byte, 100)...)
	return append(b, 0, 0, 0, 0)
}

// A failure of the source under V2's frame reader is returned as is, not
// as an integrity failure.
func TestSourceErrorV2(t *testing.T) {
	arch := v2Of(tarBytes([]ent{{name: "a", data: strings.Repeat("x", 100000)}}, nil))
	boom := errors.New("connection reset")
	for _, cut := range []int{2, 10, len(arch) / 2, len(arch) - 5} {
		r := io.MultiReader(bytes.NewReader(arch[:cut]), errReader{boom})
		_, err := Extract(context.Background(), r, filepath.Join(t.TempDir(), "d"), Limits{})
		if !errors.Is(err, boom) {
			t.Fatalf("cut at %d: err = %v", cut, err)
		}
		if _, ok := IsIntegrity(err); ok {
			t.Fatalf("cut at %d: source error reported as integrity: %v", cut, err)
		}
	}
}

// The index is read strictly: what commentV2 writes comes back as it was
// (paths with quotes, backslashes, non-ASCII), anything else is refused.
func TestIndexJSON(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	d := Declared{Files: 3, Dirs: 1, Bytes: 9, Index: []IndexEntry{
		{Path: `a"b\c`, Frame: 1, Offset: 512, Size: 3, SHA256: sum},
		{Path: "é/ü <&>", Frame: 1, Offset: 2048, Size: 3, SHA256: sum},
		{Path: "z", Frame: 2, Offset: 0, Size: 3, SHA256: sum},
	}}
	got, err := parseDeclaration([]byte(paxData("comment", d.commentV2())), 0, "", V2)
	if err != nil || !reflect.DeepEqual(*got, d) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	head := `{"schema":"piship-archive/v2","files":1,"dirs":0,"bytes":3,"index":`
	for name, c := range map[string]struct {
		json string
		rule Rule
	}{
		"null":            {head + `null}`, RuleIndex},
		"leading zero":    {head + `[["a",01,512,3,"` + sum + `"]]}`, RuleDeclared},
		"fraction":        {head + `[["a",1,512.0,3,"` + sum + `"]]}`, RuleDeclared},
		"negative":        {head + `[["a",1,-512,3,"` + sum + `"]]}`, RuleDeclared},
		"four elements":   {head + `[["a",1,512,3]]}`, RuleDeclared},
		"six elements":    {head + `[["a",1,512,3,"` + sum + `",1]]}`, RuleDeclared},
		"upper-case hex":  {head + `[["a",1,512,3,"` + strings.ToUpper(sum) + `"]]}`, RuleDeclared},
		"control in path": {head + "[[\"a\x01\",1,512,3,\"" + sum + "\"]]}", RuleDeclared},
		"index not last":  {head + `[["a",1,512,3,"` + sum + `"]],"x":1}`, RuleDeclared},
		"unterminated":    {head + `[["a",1,512,3,"` + sum + `"]`, RuleDeclared},
		"two files, one":  {strings.Replace(head, `"files":1`, `"files":2`, 1) + `[["a",1,512,3,"` + sum + `"]]}`, RuleIndex},
		"index first":     {`{"index":[],"schema":"piship-archive/v2","files":0,"dirs":0,"bytes":0}`, RuleDeclared}, // it comes last
	} {
		_, err := parseDeclaration([]byte(paxData("comment", c.json)), 0, "", V2)
		if ie, ok := IsIntegrity(err); !ok || ie.Rule != c.rule {
			t.Errorf("%s: %v, want rule %s", name, err, c.rule)
		}
	}
}
