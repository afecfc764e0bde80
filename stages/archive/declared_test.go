package archive

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decl is a declaration header as Write makes it, with any JSON.
func decl(json string) ent {
	return ent{name: "GlobalHead.0.0", typ: 'g', data: paxData("comment", json)}
}

func declOf(files, dirs int, bytes int64) ent {
	return decl(Declared{Files: files, Dirs: dirs, Bytes: bytes}.comment())
}

// written is the file content extraction left in dest.
func written(t *testing.T, dest string) int64 {
	var n int64
	for p, data := range readTree(t, dest) {
		if !strings.HasSuffix(p, "/") {
			n += int64(len(data))
		}
	}
	return n
}

// A gzip bomb that declares a small total is refused at the first entry
// beyond it, on its header: nothing beyond the declared bytes is written.
func TestDeclaredBomb(t *testing.T) {
	zeros := strings.Repeat("\x00", 8<<20) // 8 MiB, ~8 KiB compressed
	small := strings.Repeat("s", 1000)
	cases := []struct {
		name     string
		es       []ent
		declared int64
		at       string // the refused entry
		detail   string
	}{
		{"one large file", []ent{declOf(3, 0, 3000), {name: "a", data: small}, {name: "b", data: small}, {name: "c", data: zeros}}, 3000, "c", "content beyond the 3000 bytes the archive declares (2000 bytes before this file of 8388608)"},
		{"many small files", func() []ent {
			es := []ent{declOf(50, 0, 4096)}
			for i := range 50 {
				es = append(es, ent{name: fmt.Sprintf("f%02d", i), data: small})
			}
			return es
		}(), 4096, "f04", "content beyond the 4096 bytes the archive declares (4000 bytes before this file of 1000)"},
		{"more files than declared", []ent{declOf(1, 0, 2000), {name: "a", data: small}, {name: "b", data: small}}, 2000, "b", "more files than the 1 the archive declares"},
		{"more directories than declared", []ent{declOf(2, 0, 2000), {name: "a", data: small}, {name: "d/b", data: small}}, 2000, "d/b", "more directories than the 0 the archive declares"},
	}
	for _, c := range cases {
		for fmtName, pack := range map[string]func([]byte) []byte{"gzip": gz, "blocks": func(b []byte) []byte { return pz(b, 64<<10) }} {
			t.Run(c.name+"/"+fmtName, func(t *testing.T) {
				par := t.TempDir()
				os.WriteFile(filepath.Join(par, "sentinel"), []byte("s"), 0o644)
				dest := filepath.Join(par, "dest")
				_, err := Extract(context.Background(), bytes.NewReader(pack(tarBytes(c.es, nil))), dest, Limits{})
				ie, ok := IsIntegrity(err)
				if !ok || ie.Rule != RuleDeclared || ie.Entry != c.at {
					t.Fatalf("err = %v, want INTEGRITY_FAILED (declared) at %q", err, c.at)
				}
				if !strings.Contains(err.Error(), c.detail) {
					t.Errorf("message %q does not say %q", err, c.detail)
				}
				if n := written(t, dest); n > c.declared {
					t.Errorf("%d bytes written, %d declared", n, c.declared)
				}
				if _, err := os.Lstat(filepath.Join(dest, filepath.FromSlash(c.at))); err == nil {
					t.Errorf("the refused entry %s was created", c.at)
				}
				assertOnlyDest(t, par)
			})
		}
	}
}

// Every other way a declaration can be wrong.
func TestDeclaredRefused(t *testing.T) {
	ok := ent{name: "ok.txt", data: "fine"}
	cases := []struct {
		name string
		es   []ent
		tail []byte
		rule Rule
		msg  string
	}{
		{"fewer files than declared", []ent{declOf(2, 0, 4), ok}, nil, RuleDeclared, "declares 2 files, 0 directories and 4 bytes, and holds 1, 0 and 4"},
		{"fewer bytes than declared", []ent{declOf(1, 0, 5), ok}, nil, RuleDeclared, "declares 1 files, 0 directories and 5 bytes, and holds 1, 0 and 4"},
		{"fewer directories than declared", []ent{declOf(1, 1, 4), ok}, nil, RuleDeclared, "and holds 1, 0 and 4"},
		{"over the byte limit", []ent{declOf(1, 0, 3<<30), ok}, nil, RuleMaxBytes, "declares 3221225472 bytes of content, over the limit of 2147483648"},
		{"over the entry limit", []ent{declOf(200_000, 1, 4), ok}, nil, RuleMaxEntries, "over the limit of 200000"},
		{"not JSON", []ent{decl("files=1"), ok}, nil, RuleDeclared, "is not piship-archive/v1 JSON"},
		{"unknown key", []ent{decl(`{"schema":"piship-archive/v1","files":1,"dirs":0,"bytes":4,"x":1}`), ok}, nil, RuleDeclared, "is not piship-archive/v1 JSON"},
		{"missing count", []ent{decl(`{"schema":"piship-archive/v1","files":1,"dirs":0}`), ok}, nil, RuleDeclared, "lacks a count"},
		{"negative count", []ent{decl(`{"schema":"piship-archive/v1","files":-1,"dirs":0,"bytes":4}`), ok}, nil, RuleDeclared, "negative"},
		{"newer schema", []ent{decl(`{"schema":"piship-archive/v3","files":1,"dirs":0,"bytes":4}`), ok}, nil, RuleDeclared, "newer piship"},
		{"another global header", []ent{{name: "pax_global_header", typ: 'g', data: paxData("comment", "0123abcd")}, ok}, nil, RuleDeclared, "not piship-archive/v1 JSON"},
		{"more than a comment", []ent{{name: "g", typ: 'g', data: paxData("comment", Declared{Files: 1, Bytes: 4}.comment(), "path", "x")}, ok}, nil, RuleEntryType, "not a piship-archive/v1 declaration"},
		{"a second declaration", []ent{declOf(1, 0, 4), declOf(1, 0, 4), ok}, nil, RuleEntryType, "global extended headers are not accepted"},
		{"declaration after an entry", []ent{ok, declOf(1, 0, 4)}, nil, RuleEntryType, "global extended headers are not accepted"},
		{"padding beyond a tar record", []ent{declOf(1, 0, 4), ok}, make([]byte, tarRecord+512), RuleTrailingData, "more than 10240 bytes of padding"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			par := t.TempDir()
			os.WriteFile(filepath.Join(par, "sentinel"), []byte("s"), 0o644)
			dest := filepath.Join(par, "dest")
			_, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes(c.es, c.tail))), dest, Limits{})
			ie, ok := IsIntegrity(err)
			if !ok || ie.Rule != c.rule || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want INTEGRITY_FAILED (%s) saying %q", err, c.rule, c.msg)
			}
			assertOnlyDest(t, par)
		})
	}
	// A declaration in GNU tar's record padding is accepted.
	if _, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes([]ent{declOf(1, 0, 4), ok}, make([]byte, tarRecord-1024)))), filepath.Join(t.TempDir(), "d"), Limits{}); err != nil {
		t.Fatalf("record padding: %v", err)
	}
}

// An archive without a declaration (the order piship wrote before, or
// any tar.gz) extracts as before, bounded by the ceiling: a header that
// claims more than Limits.MaxBytes is refused before a byte of it.
func TestUndeclaredCeiling(t *testing.T) {
	ok := ent{name: "ok.txt", data: "fine"}
	dest := filepath.Join(t.TempDir(), "d")
	ex, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes([]ent{{name: "d/", typ: '5'}, ok}, nil))), dest, Limits{})
	if err != nil || ex.Declared != nil || len(ex.Files) != 1 {
		t.Fatalf("undeclared archive: %+v %v", ex, err)
	}
	// A 3 GiB file header over the 2 GiB default ceiling: the stream
	// holds only its header.
	big := rawHeader(ent{name: "bomb", mangle: func(b *[512]byte) {}})
	octal(big[124:136], 3<<30)
	for i := 148; i < 156; i++ {
		big[i] = ' '
	}
	var sum int64
	for _, c := range big {
		sum += int64(c)
	}
	copy(big[148:156], fmt.Sprintf("%06o\x00 ", sum))
	stream := append(tarBytes([]ent{ok}, nil)[:1024], big[:]...)
	dest = filepath.Join(t.TempDir(), "d")
	_, err = Extract(context.Background(), bytes.NewReader(gz(stream)), dest, Limits{})
	if ie, ok := IsIntegrity(err); !ok || ie.Rule != RuleMaxBytes || ie.Entry != "bomb" {
		t.Fatalf("err = %v, want max-bytes at bomb", err)
	}
	if n := written(t, dest); n > 4 {
		t.Fatalf("%d bytes written", n)
	}
}

// Open reads the declaration Write puts first, and Extract goes on from
// that read: the same tree and digest as a plain Extract. Failures of the
// first header are Open's.
func TestOpenReadsTheDeclaration(t *testing.T) {
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	arch, res := writeArchive(t, src, Options{})
	a, err := Open(bytes.NewReader(arch), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d := a.Declared()
	if d == nil || d.Files != res.Files || d.Dirs != res.Dirs || d.Bytes != 2097257 {
		t.Fatalf("Declared = %+v; archive %+v", d, res)
	}
	got, err := a.Extract(context.Background(), filepath.Join(t.TempDir(), "d"))
	a.Close()
	if err != nil {
		t.Fatal(err)
	}
	want, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "d"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA256 != want.SHA256 || got.Size != int64(len(arch)) || len(got.Files) != len(want.Files) || !reflect.DeepEqual(got.Declared, d) {
		t.Fatalf("extracted after Open: %s %d %d files, %+v; plain Extract: %s %d files", got.SHA256, got.Size, len(got.Files), got.Declared, want.SHA256, len(want.Files))
	}
	if _, err := a.Extract(context.Background(), filepath.Join(t.TempDir(), "e")); err == nil {
		t.Fatal("a second Extract of one Reader succeeded")
	}
	// Opened and not extracted: Close stops the inflaters.
	a, err = Open(bytes.NewReader(arch), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()

	a, err = Open(bytes.NewReader(gz(tarBytes([]ent{{name: "ok.txt", data: "x"}}, nil))), Limits{})
	if err != nil || a.Declared() != nil {
		t.Fatalf("undeclared: %v", err)
	}
	a.Close()
	for name, b := range map[string][]byte{
		"not gzip":  []byte("hello, this is not a gzip stream at all"),
		"truncated": gz(tarBytes(nil, nil))[:10],
		"bad json":  gz(tarBytes([]ent{decl("{")}, nil)),
	} {
		if _, err := Open(bytes.NewReader(b), Limits{}); err == nil {
			t.Errorf("%s: accepted", name)
		} else if _, ok := IsIntegrity(err); !ok {
			t.Errorf("%s: %v is not an integrity error", name, err)
		}
	}
	// Over the limits: refused on the declaration, before anything is written.
	if _, err := Open(bytes.NewReader(arch), Limits{MaxBytes: 1000}); err == nil {
		t.Error("a declaration over MaxBytes opened")
	} else if ie, ok := IsIntegrity(err); !ok || ie.Rule != RuleMaxBytes {
		t.Errorf("over MaxBytes: %v", err)
	}
}
