package delta

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"

	"piship.dev/piship/stages/archive"
)

func TestRoundTrip(t *testing.T) {
	p := makePair(t)
	d, res := writeDelta(t, p)
	want := Result{Kept: 6, Copied: 3, Patched: 2, Added: 3, Deleted: 4}
	got := Result{Kept: res.Kept, Copied: res.Copied, Patched: res.Patched, Added: res.Added, Deleted: res.Deleted}
	if got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if res.Size != int64(len(d)) {
		t.Fatalf("Result.Size %d, wrote %d", res.Size, len(d))
	}
	h, _ := split(t, d)
	if !slices.Equal(h.Mkdirs, []string{"payload/empty-new", "payload/empty-new/inner", "payload/newdir", "payload/other", "payload/thing"}) ||
		!slices.Equal(h.Rmdirs, []string{"payload/empty-old", "payload/moved"}) {
		t.Fatalf("mkdirs %q rmdirs %q", h.Mkdirs, h.Rmdirs)
	}
	kinds := map[string]string{}
	for _, op := range h.Ops {
		kinds[op.Path] = op.Op
	}
	for path, kind := range map[string]string{
		"payload/app.js": OpPatch, "payload/chunks/chunk-BBBB.js": OpPatch, "payload/other/a.txt": OpCopy,
		"payload/bin/tool": OpCopy, "payload/dup/two.txt": OpCopy, "payload/newdir/brand.bin": OpNew,
		"payload/gone.txt": OpDelete, "payload/thing": OpDelete, "payload/thing/x.js": OpNew,
	} {
		if kinds[path] != kind {
			t.Errorf("%s: op %q, want %q", path, kinds[path], kind)
		}
	}
	for _, op := range h.Ops {
		if op.Path == "payload/chunks/chunk-BBBB.js" && (len(op.Base) != 2 || op.Base[0].Path != "payload/chunks/chunk-AAAA.js") {
			t.Errorf("the renamed chunk's dictionary is %v, want the gone chunk first", op.Base)
		}
	}
	// The delta is much smaller than the changed files.
	if res.PatchBytes > 20_000 {
		t.Errorf("%d bytes of patches for about 12 KB of new random bytes and small edits", res.PatchBytes)
	}

	before := scan(t, p.from)
	dest := filepath.Join(t.TempDir(), "new")
	ex, err := Apply(context.Background(), bytes.NewReader(d), p.from, before, dest, ApplyOptions{Writers: 3})
	if err != nil {
		t.Fatal(err)
	}
	wantTree := scan(t, p.to)
	gotTree := scan(t, dest)
	if !reflect.DeepEqual(gotTree, wantTree) {
		t.Fatalf("applied tree\n%+v\nwant\n%+v", gotTree, wantTree)
	}
	if after := scan(t, p.from); !reflect.DeepEqual(after, before) {
		t.Fatal("Apply changed the installed tree")
	}
	if ex.Size != int64(len(d)) || ex.SHA256 != res.SHA256 || ex.Bytes != wantTree.Bytes() || ex.Dirs != len(wantTree.Dirs) || len(ex.Files) != len(wantTree.Files) {
		t.Fatalf("Extracted %+v", ex)
	}
	for _, f := range wantTree.Files {
		if ex.Files[f.Path] != f.SHA256 {
			t.Errorf("Extracted.Files[%s] = %s, want %s", f.Path, ex.Files[f.Path], f.SHA256)
		}
	}
	if !slices.Equal(ex.Executables, []string{"payload/bin/tool"}) {
		t.Errorf("Executables %q", ex.Executables)
	}
	// Kept files are copies, not links.
	a, _ := os.Stat(filepath.Join(p.from, "release.json"))
	b, _ := os.Stat(filepath.Join(dest, "release.json"))
	if os.SameFile(a, b) {
		t.Error("a kept file is linked to the installed one")
	}
	// ReadHeader says what Write did.
	if h.FromTree != before.Digest() || h.ToTree != wantTree.Digest() || h.FromVersion != "1.0.0" || h.Target != "linux-x64" || h.Files != len(wantTree.Files) {
		t.Errorf("header %+v", h)
	}
}

func TestApplyIntoNonEmptyDest(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	dest := t.TempDir()
	os.WriteFile(filepath.Join(dest, "x"), nil, 0o644)
	if _, err := Apply(context.Background(), bytes.NewReader(d), p.from, scan(t, p.from), dest, ApplyOptions{}); !errors.Is(err, archive.ErrDestNotEmpty) {
		t.Fatalf("err %v, want ErrDestNotEmpty", err)
	}
}

func TestBaseDiffers(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	keep := filepath.Join(p.from, "payload", "lib", "keep1.js")
	orig, _ := os.ReadFile(keep)
	changed := bytes.Clone(orig)
	changed[100] ^= 1

	// A base one byte off: its listing's digest is not FromTree.
	os.WriteFile(keep, changed, 0o644)
	listed := scan(t, p.from)
	dest := filepath.Join(t.TempDir(), "new")
	_, err := Apply(context.Background(), bytes.NewReader(d), p.from, listed, dest, ApplyOptions{})
	if !IsBase(err) {
		t.Fatalf("err %v, want ReasonBase", err)
	}
	if got := scan(t, p.from); !reflect.DeepEqual(got, listed) {
		t.Fatal("a refused Apply changed the installed tree")
	}

	// The listing is the base's, the file on disk is not (changed after
	// the scan): found when the kept file is copied.
	os.WriteFile(keep, orig, 0o644)
	listed = scan(t, p.from)
	os.WriteFile(keep, changed, 0o644)
	_, err = Apply(context.Background(), bytes.NewReader(d), p.from, listed, dest, ApplyOptions{})
	if e, ok := IsRefused(err); !ok || e.Reason != ReasonBase || e.Path != "payload/lib/keep1.js" {
		t.Fatalf("err %v, want ReasonBase at the kept file", err)
	}
	if _, err := os.Stat(dest); err != nil {
		t.Fatalf("dest is the caller's to remove: %v", err)
	}

	// A patch's dictionary changed on disk.
	os.WriteFile(keep, orig, 0o644)
	app := filepath.Join(p.from, "payload", "app.js")
	listed = scan(t, p.from)
	b, _ := os.ReadFile(app)
	b[5] ^= 1
	os.WriteFile(app, b, 0o644)
	dest2 := filepath.Join(t.TempDir(), "new")
	_, err = Apply(context.Background(), bytes.NewReader(d), p.from, listed, dest2, ApplyOptions{})
	if e, ok := IsRefused(err); !ok || e.Reason != ReasonBase || e.Path != "payload/app.js" {
		t.Fatalf("err %v, want ReasonBase at the patched file", err)
	}
}

func TestDeterministic(t *testing.T) {
	p := makePair(t)
	var outs [][]byte
	for _, procs := range []int{1, 4, 1} {
		old := runtime.GOMAXPROCS(procs)
		d, _ := writeDelta(t, p)
		runtime.GOMAXPROCS(old)
		outs = append(outs, d)
	}
	if !bytes.Equal(outs[0], outs[1]) || !bytes.Equal(outs[0], outs[2]) {
		t.Fatal("the delta's bytes depend on GOMAXPROCS or the run")
	}
	// A worker reuses its encoders: every frame must be what a fresh
	// encoder makes of it.
	h, data := split(t, outs[0])
	var off int64
	for _, op := range h.Ops {
		frame := data[off : off+op.Data]
		off += op.Data
		if op.Data == 0 {
			continue
		}
		var e encoders
		n := op.Size
		for _, s := range op.Base {
			fi, _ := os.Stat(filepath.Join(p.from, s.Path))
			n += fi.Size()
		}
		fresh, err := encodeOp(&op, p.from, p.to, &e, windowClass(n))
		e.close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, frame) {
			t.Errorf("%s: the frame a reused encoder made differs from a fresh one's", op.Path)
		}
	}
}

func TestFromArchives(t *testing.T) {
	p := makePair(t)
	dir := t.TempDir()
	arch := func(name, root string) string {
		a := filepath.Join(dir, name)
		if _, err := archive.Create(context.Background(), a, root, archive.Options{}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	from, to := arch("from.tar.gz", p.from), arch("to.tar.gz", p.to)
	out := filepath.Join(dir, "d.delta")
	res, err := FromArchives(context.Background(), out, from, to, Meta{FromVersion: "1", ToVersion: "2"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := os.ReadFile(out)
	direct, _ := writeDelta(t, p)
	hd, _ := split(t, d)
	hw, _ := split(t, direct)
	if res.Size != int64(len(d)) || hd.ToTree != hw.ToTree || hd.FromTree != hw.FromTree || res.Patched != 2 {
		t.Fatalf("FromArchives %+v, header %+v", res, hd)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 3 {
		t.Fatalf("left behind: %v", ents)
	}
	// Applies onto the extracted base.
	base := filepath.Join(dir, "base")
	f, _ := os.Open(from)
	if _, err := archive.Extract(context.Background(), f, base, archive.Limits{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Apply(context.Background(), bytes.NewReader(d), base, scan(t, base), filepath.Join(dir, "new"), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(scan(t, filepath.Join(dir, "new")).Digest(), scan(t, p.to).Digest()) {
		t.Fatal("the applied tree is not the new one")
	}
}

func TestScanTreeRefuses(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]tfile{"a.js": {data: []byte("x")}})
	if err := os.Symlink("a.js", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := ScanTree(context.Background(), dir); err == nil || !isReason(err, ReasonTree) {
		t.Fatalf("symlink: err %v", err)
	}
	os.Remove(filepath.Join(dir, "link"))
	writeTree(t, dir, map[string]tfile{"sub/b:c.js": {data: []byte("x")}})
	_, err := ScanTree(context.Background(), dir)
	if e, ok := IsRefused(err); !ok || e.Reason != ReasonTree || e.Rule != archive.RuleReservedChar || e.Path != "sub/b:c.js" {
		t.Fatalf("reserved char: err %v", err)
	}
	os.Remove(filepath.Join(dir, "sub", "b:c.js"))
	tr := scan(t, dir)
	if len(tr.Files) != 1 || !slices.Equal(tr.Dirs, []string{"sub"}) || tr.Files[0].SHA256 != "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" {
		t.Fatalf("tree %+v", tr)
	}
}

func TestDigestCoversEveryField(t *testing.T) {
	base := Tree{Files: []File{{Path: "a", Size: 1, SHA256: "00"}}, Dirs: []string{"d"}}
	seen := map[string]bool{base.Digest(): true}
	for _, v := range []Tree{
		{Files: []File{{Path: "b", Size: 1, SHA256: "00"}}, Dirs: []string{"d"}},
		{Files: []File{{Path: "a", Size: 2, SHA256: "00"}}, Dirs: []string{"d"}},
		{Files: []File{{Path: "a", Size: 1, Exec: true, SHA256: "00"}}, Dirs: []string{"d"}},
		{Files: []File{{Path: "a", Size: 1, SHA256: "01"}}, Dirs: []string{"d"}},
		{Files: []File{{Path: "a", Size: 1, SHA256: "00"}}},
		{Files: []File{{Path: "a", Size: 1, SHA256: "00"}}, Dirs: []string{"e"}},
	} {
		if seen[v.Digest()] {
			t.Fatalf("%+v has a digest seen before", v)
		}
		seen[v.Digest()] = true
	}
	// The documented encoding.
	if got, want := base.Digest(), sha256hex([]byte("piship-tree/v1\nf - 00 1 a\nd d\n")); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
}

func isReason(err error, r Reason) bool {
	e, ok := IsRefused(err)
	return ok && e.Reason == r
}

// TestStreamedData covers op data over bufferedData, which the reader
// decodes as it reads instead of handing it to a writer.
func TestStreamedData(t *testing.T) {
	dir := t.TempDir()
	p := pair{filepath.Join(dir, "from"), filepath.Join(dir, "to")}
	big := noise(99, bufferedData+100_000)
	writeTree(t, p.from, map[string]tfile{"a.txt": {data: []byte("a")}})
	writeTree(t, p.to, map[string]tfile{"a.txt": {data: []byte("a")}, "big.bin": {data: big}, "z.txt": {data: text(5, 3000)}})
	d, res := writeDelta(t, p)
	if res.PatchBytes <= bufferedData {
		t.Fatalf("%d bytes of data do not exercise the streamed path", res.PatchBytes)
	}
	base := scan(t, p.from)
	dest := filepath.Join(t.TempDir(), "new")
	if _, err := Apply(context.Background(), bytes.NewReader(d), p.from, base, dest, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := scan(t, dest).Digest(), scan(t, p.to).Digest(); got != want {
		t.Fatal("the streamed file was not applied")
	}
	h, data := split(t, d)
	off := int64(0)
	for _, op := range h.Ops {
		if op.Path == "big.bin" {
			break
		}
		off += op.Data
	}
	for name, c := range map[string]struct {
		delta  []byte
		reason Reason
	}{
		"cut inside": {d[:len(d)-len(data)+int(off)+1000], ReasonTruncated},
		"corrupt": {func() []byte {
			b := bytes.Clone(d)
			b[len(d)-len(data)+int(off)+bufferedData/2] ^= 0xff
			return b
		}(), ReasonPatch},
	} {
		_, err := Apply(context.Background(), bytes.NewReader(c.delta), p.from, base, filepath.Join(t.TempDir(), "new"), ApplyOptions{})
		if e, ok := IsRefused(err); !ok || (e.Reason != c.reason && !(c.reason == ReasonPatch && e.Reason == ReasonResult)) || e.Path != "big.bin" {
			t.Errorf("%s: %v, want %s at big.bin", name, err, c.reason)
		}
	}
}
