package archive

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestHostile feeds hand-built archives that break each rule and checks
// that each is refused with the right rule, that nothing exists outside
// dest, and that inside dest nothing but the entries before the bad one
// was written.
func TestHostile(t *testing.T) { forFormats(t, testHostile) }

// v1Only names the cases about gzip itself, or about archives without a
// declaration (every V2 archive has one).
func v1Only(name string) bool {
	return strings.Contains(name, "gzip") || strings.HasPrefix(name, "block:") || name == "padding over the byte limit"
}

func testHostile(t *testing.T, format Format) {
	ok := ent{name: "ok.txt", data: "fine"}
	comp := gz
	if format == V2 {
		comp = v2Of // a true declaration and index, the tar in one frame
	}
	type tc struct {
		name    string
		arch    func(parent string) []byte // gzip bytes
		lim     Limits
		rule    Rule
		allowed []string // what dest may hold afterwards (besides nothing)
	}
	tarOf := func(es ...ent) func(string) []byte {
		return func(string) []byte { return comp(tarBytes(es, nil)) }
	}
	refuse := func(name string, rule Rule, bad ent) tc {
		return tc{name: name, arch: tarOf(ok, bad), rule: rule, allowed: []string{"ok.txt"}}
	}
	bigPAX := strings.Repeat("x", 70<<10)
	cases := []tc{
		refuse("traversal", RuleDotSegment, ent{name: "../x", data: "evil"}),
		refuse("traversal deep", RuleDotSegment, ent{name: "a/../../x", data: "evil"}),
		refuse("traversal dir", RuleDotSegment, ent{name: "../x/", typ: '5'}),
		refuse("dot segment", RuleDotSegment, ent{name: "a/./b", data: "x"}),
		refuse("dot prefix", RuleDotSegment, ent{name: "./a", data: "x"}),
		refuse("backslash", RuleBackslash, ent{name: `a\b`, data: "x"}),
		refuse("backslash traversal", RuleBackslash, ent{name: `..\x`, data: "x"}),
		refuse("drive", RuleDrive, ent{name: "C:x", data: "x"}),
		refuse("drive lower", RuleDrive, ent{name: "d:/x", data: "x"}),
		refuse("reserved con.txt", RuleReservedName, ent{name: "con.txt", data: "x"}),
		refuse("reserved NUL", RuleReservedName, ent{name: "a/NUL", data: "x"}),
		refuse("reserved Aux.tar.gz", RuleReservedName, ent{name: "Aux.tar.gz", data: "x"}),
		refuse("reserved com1 dir", RuleReservedName, ent{name: "a/com1/b", data: "x"}),
		refuse("reserved LPT9", RuleReservedName, ent{name: "LPT9", data: "x"}),
		refuse("reserved prn.", RuleReservedName, ent{name: "prn .js", data: "x"}),
		refuse("reserved char <", RuleReservedChar, ent{name: "a<b", data: "x"}),
		refuse("reserved char >", RuleReservedChar, ent{name: "a>b", data: "x"}),
		refuse("reserved char colon", RuleReservedChar, ent{name: "ab:c", data: "x"}),
		refuse("reserved char quote", RuleReservedChar, ent{name: `a"b`, data: "x"}),
		refuse("reserved char pipe", RuleReservedChar, ent{name: "a|b", data: "x"}),
		refuse("reserved char ?", RuleReservedChar, ent{name: "a?b", data: "x"}),
		refuse("reserved char *", RuleReservedChar, ent{name: "a*b", data: "x"}),
		refuse("control char", RuleControl, ent{name: "a\x01b", data: "x"}),
		refuse("newline", RuleControl, ent{name: "a\nb", data: "x"}),
		refuse("DEL", RuleControl, ent{name: "a\x7fb", data: "x"}),
		refuse("C1 control", RuleControl, ent{name: "a\u0085b", data: "x"}),
		refuse("invalid UTF-8", RuleEncoding, ent{name: "a\xffb", data: "x"}),
		refuse("empty segment", RuleEmptyPath, ent{name: "a//b", data: "x"}),
		refuse("empty name", RuleEmptyPath, ent{name: "", data: "x"}),
		refuse("symlink", RuleEntryType, ent{name: "link", typ: '2', link: "../../../etc/passwd"}),
		refuse("hardlink", RuleEntryType, ent{name: "hard", typ: '1', link: "ok.txt"}),
		refuse("char device", RuleEntryType, ent{name: "dev", typ: '3'}),
		refuse("block device", RuleEntryType, ent{name: "blk", typ: '4'}),
		refuse("fifo", RuleEntryType, ent{name: "fifo", typ: '6'}),
		refuse("GNU long name", RuleEntryType, ent{name: "././@LongLink", typ: 'L', data: "x"}),
		refuse("global PAX", RuleEntryType, ent{name: "g", typ: 'g', data: paxData("path", "x")}),
		refuse("bad checksum", RuleChecksum, ent{name: "b", data: "x", mangle: func(b *[512]byte) { b[0] = 'c' }}),
		refuse("not ustar", RuleHeader, ent{name: "b", data: "x", magic: "\x00\x00\x00\x00\x00\x00\x00\x00"}),
		refuse("file named like a dir", RuleHeader, ent{name: "b/", data: "x"}),
		refuse("dir with content", RuleHeader, ent{name: "b/", typ: '5', data: "x"}),
		{name: "absolute", arch: func(par string) []byte {
			return comp(tarBytes([]ent{ok, {name: absIn(par), data: "evil"}}, nil))
		}, rule: RuleAbsolute, allowed: []string{"ok.txt"}},
		refuse("absolute root", RuleAbsolute, ent{name: "/etc/x", data: "evil"}),
		{name: "duplicate file", arch: tarOf(ok, ent{name: "ok.txt", data: "again"}), rule: RuleDuplicate, allowed: []string{"ok.txt"}},
		{name: "file then dir", arch: tarOf(ok, ent{name: "ok.txt/", typ: '5'}), rule: RuleDuplicate, allowed: []string{"ok.txt"}},
		{name: "dir then file", arch: tarOf(ent{name: "d/", typ: '5'}, ent{name: "d", data: "x"}), rule: RuleDuplicate, allowed: []string{"d/"}},
		{name: "implied dir then file", arch: tarOf(ent{name: "d/f", data: "x"}, ent{name: "d", data: "x"}), rule: RuleDuplicate, allowed: []string{"d/", "d/f"}},
		{name: "file as parent", arch: tarOf(ok, ent{name: "ok.txt/x", data: "x"}), rule: RuleDuplicate, allowed: []string{"ok.txt"}},
		{name: "duplicate dir", arch: tarOf(ent{name: "d/", typ: '5'}, ent{name: "d/", typ: '5'}), rule: RuleDuplicate, allowed: []string{"d/"}},
		{name: "PAX path traversal", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("path", "../evil")}, ent{name: "innocent", data: "evil"}), rule: RuleDotSegment, allowed: []string{"ok.txt"}},
		{name: "PAX absolute path", arch: func(par string) []byte {
			return comp(tarBytes([]ent{ok, {name: "PaxHeaders/x", typ: 'x', data: paxData("path", absIn(par))}, {name: "innocent", data: "evil"}}, nil))
		}, rule: RuleAbsolute, allowed: []string{"ok.txt"}},
		{name: "prefix traversal", arch: tarOf(ok, ent{prefix: "..", name: "x", data: "evil"}), rule: RuleDotSegment, allowed: []string{"ok.txt"}},
		{name: "huge PAX", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("comment", bigPAX)}, ent{name: "f", data: "x"}), rule: RulePAXSize, allowed: []string{"ok.txt"}},
		{name: "malformed PAX", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: "99 path=x\n"}, ent{name: "f", data: "x"}), rule: RulePAX, allowed: []string{"ok.txt"}},
		{name: "sparse PAX", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("GNU.sparse.map", "0,1")}, ent{name: "f", data: "x"}), rule: RuleEntryType, allowed: []string{"ok.txt"}},
		{name: "PAX then end", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("path", "f")}), rule: RulePAX, allowed: []string{"ok.txt"}},
		{name: "too many entries", arch: tarOf(ok, ent{name: "b", data: "x"}, ent{name: "c", data: "x"}, ent{name: "d", data: "x"}), lim: Limits{MaxEntries: 3}, rule: RuleMaxEntries, allowed: []string{"ok.txt", "b", "c"}},
		{name: "implied dirs count as entries", arch: tarOf(ok, ent{name: "a/b/c", data: "x"}), lim: Limits{MaxEntries: 3}, rule: RuleMaxEntries, allowed: []string{"ok.txt"}},
		{name: "path too long", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("path", strings.Repeat("a", MaxPathBytes+1))}, ent{name: "f", data: "x"}), rule: RulePathLength, allowed: []string{"ok.txt"}},
		{name: "path too deep", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("path", strings.Repeat("a/", MaxDepth)+"f")}, ent{name: "f", data: "x"}), rule: RulePathLength, allowed: []string{"ok.txt"}},
		{name: "too many bytes", arch: tarOf(ok, ent{name: "b", data: strings.Repeat("x", 97)}), lim: Limits{MaxBytes: 100}, rule: RuleMaxBytes, allowed: []string{"ok.txt"}},
		{name: "PAX size over the limit", arch: tarOf(ok, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("size", "99999999999")}, ent{name: "f", data: "x"}), lim: Limits{MaxBytes: 1 << 20}, rule: RuleMaxBytes, allowed: []string{"ok.txt"}},
		{name: "trailing garbage in tar", arch: func(string) []byte { return comp(tarBytes([]ent{ok}, []byte("garbage"))) }, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "header after one zero block", arch: func(string) []byte {
			b := tarBytes([]ent{ok}, nil)
			h := rawHeader(ent{name: "late", data: ""})
			b = append(b[:len(b)-512], h[:]...)
			b = append(b, make([]byte, 1024)...)
			return comp(b)
		}, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "second gzip member", arch: func(string) []byte {
			return append(comp(tarBytes([]ent{ok}, nil)), comp(tarBytes([]ent{{name: "evil", data: "x"}}, nil))...)
		}, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "garbage after gzip", arch: func(string) []byte { return append(comp(tarBytes([]ent{ok}, nil)), "junk"...) }, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "zeros after gzip", arch: func(string) []byte { return append(comp(tarBytes([]ent{ok}, nil)), 0, 0, 0, 0) }, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "padding over the byte limit", arch: func(string) []byte { return comp(tarBytes([]ent{ok}, make([]byte, 4096))) }, lim: Limits{MaxBytes: 1000}, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "no end marker", arch: func(string) []byte { b := tarBytes([]ent{ok}, nil); return comp(b[:len(b)-1024]) }, rule: RuleTruncated, allowed: []string{"ok.txt"}},
		{name: "one zero block", arch: func(string) []byte { b := tarBytes([]ent{ok}, nil); return comp(b[:len(b)-512]) }, rule: RuleTruncated, allowed: []string{"ok.txt"}},
		{name: "truncated file", arch: func(string) []byte { return comp(tarBytes([]ent{ok, {name: "f", data: "xyz"}}, nil)[:1024+512+1]) }, rule: RuleTruncated, allowed: []string{"ok.txt"}},
		{name: "truncated gzip", arch: func(string) []byte { b := comp(tarBytes([]ent{ok}, nil)); return b[:len(b)-4] }, rule: RuleTruncated, allowed: []string{"ok.txt"}},
		{name: "bad gzip CRC", arch: func(string) []byte { b := comp(tarBytes([]ent{ok}, nil)); b[len(b)-8] ^= 1; return b }, rule: RuleGzip, allowed: []string{"ok.txt"}},
		{name: "not gzip", arch: func(string) []byte { return tarBytes([]ent{ok}, nil) }, rule: RuleGzip},

		// The block-member format (pgzip.go), read by the parallel reader.
		{name: "block: a tar after the end marker, in a member of its own", arch: func(string) []byte {
			return append(pz(tarBytes([]ent{ok}, nil), 700), pz(tarBytes([]ent{{name: "evil", data: "x"}}, nil), 700)...)
		}, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "block: garbage after the last member", arch: func(string) []byte { return append(pz(tarBytes([]ent{ok}, nil), 700), "junk"...) }, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "block: zeros after the last member", arch: func(string) []byte { return append(pz(tarBytes([]ent{ok}, nil), 700), 0, 0, 0, 0) }, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "block: an ordinary gzip member after the last", arch: func(string) []byte {
			return append(pz(tarBytes([]ent{ok}, nil), 700), comp(make([]byte, 512))...)
		}, rule: RuleTrailingData, allowed: []string{"ok.txt"}},
		{name: "block: truncated inside a member", arch: func(string) []byte { b := pz(tarBytes([]ent{ok}, nil), 700); return b[:len(b)-3] }, rule: RuleTruncated, allowed: []string{"ok.txt"}},
		{name: "block: truncated inside a member header", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok, {name: "f", data: "xyz"}}, nil), 700))
			return append(m[0], m[1][:12]...)
		}, rule: RuleTruncated},
		{name: "block: last member missing", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok, {name: "f", data: "xyz"}}, nil), 700))
			return bytes.Join(m[:len(m)-1], nil)
		}, rule: RuleTruncated, allowed: []string{"ok.txt", "f"}},
		{name: "block: bad CRC in a member", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok, {name: "f", data: "xyz"}}, nil), 700))
			m[1][len(m[1])-8] ^= 1
			return bytes.Join(m, nil)
		}, rule: RuleGzip, allowed: []string{"ok.txt"}},
		{name: "block: bad ISIZE in a member", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok}, nil), 700))
			m[0][len(m[0])-4]++
			return bytes.Join(m, nil)
		}, rule: RuleGzip},
		{name: "block: member length out of bounds", arch: func(string) []byte {
			b := pz(tarBytes([]ent{ok}, nil), 700)
			binary.LittleEndian.PutUint32(b[16:20], pgzMaxMember+1)
			return b
		}, rule: RuleGzip},
		{name: "block: member holds more than its header says", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok}, nil), 700))
			binary.LittleEndian.PutUint32(m[0][20:24], 600)
			return bytes.Join(m, nil)
		}, rule: RuleGzip},
		{name: "block: raw length over the block size", arch: func(string) []byte {
			b := pz(tarBytes([]ent{ok}, nil), 700)
			binary.LittleEndian.PutUint32(b[20:24], pgzBlockSize+1)
			return b
		}, rule: RuleGzip},
		{name: "block: bytes between deflate data and trailer", arch: func(string) []byte {
			m := members(pz(tarBytes([]ent{ok}, nil), 700))
			b := slices.Concat(m[0][:len(m[0])-8], []byte{0, 0}, m[0][len(m[0])-8:])
			binary.LittleEndian.PutUint32(b[16:20], uint32(len(b)))
			return slices.Concat(append([][]byte{b}, m[1:]...)...)
		}, rule: RuleGzip},
		{name: "block: traversal", arch: func(string) []byte { return pz(tarBytes([]ent{ok, {name: "../x", data: "evil"}}, nil), 700) }, rule: RuleDotSegment, allowed: []string{"ok.txt"}},
	}
	for _, c := range cases {
		if format == V2 && v1Only(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			par := t.TempDir()
			sentinel := filepath.Join(par, "sentinel")
			os.WriteFile(sentinel, []byte("s"), 0o644)
			dest := filepath.Join(par, "dest")
			arch := c.arch(par)
			_, err := Extract(context.Background(), bytes.NewReader(arch), dest, c.lim)
			ie, ok := IsIntegrity(err)
			if !ok {
				t.Fatalf("err = %v, want an integrity error", err)
			}
			if ie.Rule != c.rule {
				t.Fatalf("rule %s, want %s (%v)", ie.Rule, c.rule, err)
			}
			if !strings.HasPrefix(err.Error(), "INTEGRITY_FAILED: ") {
				t.Errorf("message %q", err)
			}
			t.Log(err)
			assertOnlyDest(t, par)
			var got []string
			for p := range readTree(t, dest) {
				got = append(got, p)
			}
			slices.Sort(got)
			for _, p := range got {
				if !slices.Contains(c.allowed, p) {
					t.Errorf("dest holds %q, allowed only %q", p, c.allowed)
				}
			}
		})
	}

	t.Run("non-empty dest", func(t *testing.T) {
		par := t.TempDir()
		dest := filepath.Join(par, "dest")
		os.MkdirAll(dest, 0o755)
		os.WriteFile(filepath.Join(dest, "old"), []byte("old"), 0o644)
		_, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes([]ent{ok}, nil))), dest, Limits{})
		if !errors.Is(err, ErrDestNotEmpty) {
			t.Fatalf("err = %v", err)
		}
		if got := readTree(t, dest); len(got) != 1 || got["old"] != "old" {
			t.Fatalf("dest changed: %v", got)
		}
		file := filepath.Join(par, "file")
		os.WriteFile(file, nil, 0o644)
		if _, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes([]ent{ok}, nil))), file, Limits{}); !errors.Is(err, ErrDestNotEmpty) {
			t.Fatalf("dest is a file: %v", err)
		}
	})
}

// absIn is the absolute archive path of "abs" in the test's parent
// directory, where an escaping entry would land.
func absIn(par string) string {
	abs := filepath.ToSlash(filepath.Join(par, "abs"))
	if !strings.HasPrefix(abs, "/") {
		abs = "/" + abs // C:/... on Windows
	}
	return abs
}

// assertOnlyDest checks that par holds nothing but dest (if created) and
// the untouched sentinel.
func assertOnlyDest(t *testing.T, par string) {
	t.Helper()
	des, err := os.ReadDir(par)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range des {
		if d.Name() != "dest" && d.Name() != "sentinel" {
			t.Errorf("written outside dest: %s", d.Name())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(par, "sentinel")); string(b) != "s" {
		t.Error("sentinel changed")
	}
	if _, err := os.Lstat(filepath.Join(par, "abs")); err == nil {
		t.Error("abs written")
	}
	if _, err := os.Lstat("/etc/x"); err == nil {
		t.Error("/etc/x exists")
	}
}

// Zero padding after the end marker (as tar's 10 KiB records leave) is accepted.
func TestZeroPaddingAccepted(t *testing.T) {
	arch := gz(tarBytes([]ent{{name: "a/b", data: "x"}, {name: "a/", typ: '5'}}, make([]byte, 10240)))
	ex, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "d"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Files["a/b"] != sha([]byte("x")) || ex.SHA256 != sha(arch) || ex.Size != int64(len(arch)) {
		t.Fatalf("%+v", ex)
	}
}

// A failure of the source is returned as is, not as an integrity failure.
func TestSourceError(t *testing.T) {
	arch := gz(tarBytes([]ent{{name: "a", data: strings.Repeat("x", 100000)}}, nil))
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(arch[:len(arch)/2]), errReader{boom})
	_, err := Extract(context.Background(), r, filepath.Join(t.TempDir(), "d"), Limits{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := IsIntegrity(err); ok {
		t.Fatalf("source error reported as integrity: %v", err)
	}
}

// The same through the parallel reader of the block-member format.
func TestSourceErrorBlocks(t *testing.T) {
	arch := pz(tarBytes([]ent{{name: "a", data: strings.Repeat("x", 100000)}}, nil), 4096)
	boom := errors.New("connection reset")
	r := io.MultiReader(bytes.NewReader(arch[:len(arch)/2]), errReader{boom})
	_, err := Extract(context.Background(), r, filepath.Join(t.TempDir(), "d"), Limits{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := IsIntegrity(err); ok {
		t.Fatalf("source error reported as integrity: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
