package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"piship.dev/piship/stages/archive"
)

// relist makes h's counts and ToTree agree with its ops on base, so a
// lie in one op reaches the write instead of the header's checks.
func relist(t *testing.T, h *Header, base Tree) {
	t.Helper()
	touched := map[string]bool{}
	h.Bytes = 0
	for _, op := range h.Ops {
		touched[op.Path] = true
		h.Bytes += op.Size
	}
	for _, f := range base.Files {
		if !touched[f.Path] {
			h.Bytes += f.Size
		}
	}
	a := &applier{h: h}
	dirs, _, err := a.plan(base)
	if err != nil {
		t.Fatalf("relist: %v", err)
	}
	h.ToTree = Tree{Files: a.files, Dirs: dirs}.Digest()
}

func opIndex(h *Header, path string) int {
	return slices.IndexFunc(h.Ops, func(op Op) bool { return op.Path == path })
}

func addOp(h *Header, op Op) {
	h.Ops = append(h.Ops, op)
	slices.SortStableFunc(h.Ops, func(a, b Op) int { return strings.Compare(a.Path, b.Path) })
}

const otherSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestHostileDeltas(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	base := scan(t, p.from)
	h0, data0 := split(t, d)
	hdrLen := len(d) - len(data0)

	// mutate edits a fresh copy of the header and data and returns the delta.
	mutate := func(f func(h *Header, data []byte) []byte) []byte {
		h, data := split(t, d)
		data = f(h, bytes.Clone(data))
		return join(t, h, data)
	}
	cases := []struct {
		name   string
		delta  []byte
		reason Reason
		path   string
	}{
		{"empty", nil, ReasonTruncated, ""},
		{"magic cut", d[:5], ReasonTruncated, ""},
		{"length cut", d[:len(Magic)+2], ReasonTruncated, ""},
		{"header cut", d[:hdrLen-3], ReasonTruncated, ""},
		{"data cut", d[:len(d)-1], ReasonTruncated, ""},
		{"data cut in the first op", d[:hdrLen+1], ReasonTruncated, ""},
		{"extra byte", append(slices.Clone(d), 'x'), ReasonTrailing, ""},
		{"extra zeros", append(slices.Clone(d), make([]byte, 512)...), ReasonTrailing, ""},
		{"bad magic", append([]byte("piship-delta/v2\n"), d[len(Magic):]...), ReasonFormat, ""},
		{"huge header length", func() []byte {
			b := slices.Clone(d)
			binary.BigEndian.PutUint32(b[len(Magic):], 0xffffffff)
			return b
		}(), ReasonBounds, ""},
		{"header not zstd", func() []byte {
			b := slices.Clone(d)
			b[len(Magic)+4] ^= 0xff
			return b
		}(), ReasonFormat, ""},
		{"path traversal", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/newdir/brand.bin")].Path = "../../evil.bin"
			return data
		}), ReasonPath, "../../evil.bin"},
		{"absolute path", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/other/a.txt")].Path = "/tmp/evil"
			return data
		}), ReasonPath, "/tmp/evil"},
		{"mkdir traversal", mutate(func(h *Header, data []byte) []byte {
			h.Mkdirs[0] = "payload/../../x"
			return data
		}), ReasonPath, "payload/../../x"},
		{"copy source traversal", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/other/a.txt")].From.Path = "../from/payload/moved/a.txt"
			return data
		}), ReasonPath, "../from/payload/moved/a.txt"},
		{"file under a file", mutate(func(h *Header, data []byte) []byte {
			addOp(h, Op{Op: OpCopy, Path: "release.json/x", From: &Source{"payload/gone.txt", base.Files[slices.IndexFunc(base.Files, func(f File) bool { return f.Path == "payload/gone.txt" })].SHA256}})
			op := &h.Ops[opIndex(h, "release.json/x")]
			op.SHA256, op.Size = op.From.SHA256, 2000
			h.Copied++
			h.Files++
			h.Bytes += 2000
			return data
		}), ReasonPath, "release.json/x"},
		{"names that fold to one", mutate(func(h *Header, data []byte) []byte {
			f := base.Files[slices.IndexFunc(base.Files, func(f File) bool { return f.Path == "release.json" })]
			addOp(h, Op{Op: OpCopy, Path: "RELEASE.json", From: &Source{f.Path, f.SHA256}, Size: f.Size, SHA256: f.SHA256})
			h.Copied++
			h.Files++
			h.Bytes += f.Size
			return data
		}), ReasonPath, "release.json"},
		{"huge declared size", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].Size = 1 << 40
			return data
		}), ReasonBounds, "payload/app.js"},
		{"huge declared data", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].Data = 1 << 40
			return data
		}), ReasonBounds, "payload/app.js"},
		{"size smaller than the data decodes to", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].Size--
			relist(t, h, base)
			return data
		}), ReasonBounds, "payload/app.js"},
		{"size larger than the data decodes to", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].Size++
			relist(t, h, base)
			return data
		}), ReasonBounds, "payload/app.js"},
		{"duplicated op", mutate(func(h *Header, data []byte) []byte {
			i := opIndex(h, "payload/gone.txt")
			h.Ops = slices.Insert(h.Ops, i, h.Ops[i])
			h.Deleted++
			return data
		}), ReasonDuplicate, "payload/gone.txt"},
		{"duplicated mkdir", mutate(func(h *Header, data []byte) []byte {
			h.Mkdirs = append([]string{h.Mkdirs[0]}, h.Mkdirs...)
			return data
		}), ReasonDuplicate, h0.Mkdirs[0]},
		{"lying sha, tree agrees", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].SHA256 = otherSHA
			relist(t, h, base)
			return data
		}), ReasonResult, "payload/app.js"},
		{"lying sha", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/newdir/brand.bin")].SHA256 = otherSHA
			return data
		}), ReasonResult, ""},
		{"lying to-tree", mutate(func(h *Header, data []byte) []byte {
			h.ToTree = otherSHA
			return data
		}), ReasonResult, ""},
		{"copy source with other bytes", mutate(func(h *Header, data []byte) []byte {
			op := &h.Ops[opIndex(h, "payload/other/a.txt")]
			op.From.SHA256, op.SHA256 = otherSHA, otherSHA
			return data
		}), ReasonBase, "payload/other/a.txt"},
		{"patch base missing", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/app.js")].Base[0].Path = "payload/nope.js"
			return data
		}), ReasonBase, "payload/app.js"},
		{"delete of a missing file", mutate(func(h *Header, data []byte) []byte {
			addOp(h, Op{Op: OpDelete, Path: "payload/nope.js"})
			h.Deleted++
			return data
		}), ReasonBase, "payload/nope.js"},
		{"rmdir of a missing directory", mutate(func(h *Header, data []byte) []byte {
			h.Rmdirs = append(h.Rmdirs, "zzz")
			return data
		}), ReasonBase, "zzz"},
		{"kept count lies", mutate(func(h *Header, data []byte) []byte {
			h.Kept++
			h.Files++
			return data
		}), ReasonFormat, ""},
		{"data count lies", mutate(func(h *Header, data []byte) []byte {
			h.DataBytes++
			return data
		}), ReasonFormat, ""},
		{"last data overruns", mutate(func(h *Header, data []byte) []byte {
			for i := len(h.Ops) - 1; i >= 0; i-- {
				if h.Ops[i].Data > 0 {
					h.Ops[i].Data++
					break
				}
			}
			h.DataBytes++
			return data
		}), ReasonTruncated, ""},
		{"corrupt patch data", mutate(func(h *Header, data []byte) []byte {
			var off int64
			for _, op := range h.Ops {
				if op.Path == "payload/app.js" {
					data[off+op.Data/2] ^= 0x55
					break
				}
				off += op.Data
			}
			return data
		}), "", "payload/app.js"},
		{"zstd bomb", mutate(func(h *Header, data []byte) []byte {
			// brand.bin's frame replaced by 64 MiB of zeros in a few KB.
			bomb, err := encodeData(make([]byte, 64<<20), nil)
			if err != nil {
				t.Fatal(err)
			}
			var off int64
			for i := range h.Ops {
				op := &h.Ops[i]
				if op.Path == "payload/newdir/brand.bin" {
					data = slices.Concat(data[:off], bomb, data[off+op.Data:])
					h.DataBytes += int64(len(bomb)) - op.Data
					op.Data = int64(len(bomb))
					break
				}
				off += op.Data
			}
			return data
		}), ReasonPatch, "payload/newdir/brand.bin"},
		{"unknown op", mutate(func(h *Header, data []byte) []byte {
			h.Ops[opIndex(h, "payload/gone.txt")].Op = "chmod"
			return data
		}), ReasonFormat, "payload/gone.txt"},
		{"wrong schema", mutate(func(h *Header, data []byte) []byte {
			h.Schema = "piship-delta/v9"
			return data
		}), ReasonFormat, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			dest := filepath.Join(parent, "new")
			_, err := Apply(context.Background(), bytes.NewReader(c.delta), p.from, base, dest, ApplyOptions{Writers: 2})
			e, ok := IsRefused(err)
			if !ok {
				t.Fatalf("err %v, want a refusal", err)
			}
			if e.ErrorCode() != "INTEGRITY_FAILED" || (c.reason != "" && e.Reason != c.reason) || e.Path != c.path {
				t.Fatalf("refused %q at %q (%v), want %q at %q", e.Reason, e.Path, err, c.reason, c.path)
			}
			if c.reason == "" && e.Reason != ReasonPatch && e.Reason != ReasonResult && e.Reason != ReasonBounds {
				t.Fatalf("corrupt data refused as %q", e.Reason)
			}
			ents, _ := os.ReadDir(parent)
			if len(ents) > 1 || (len(ents) == 1 && ents[0].Name() != "new") {
				t.Fatalf("written beside dest: %v", ents)
			}
			if got := scan(t, p.from); !reflect.DeepEqual(got, base) {
				t.Fatal("the installed tree changed")
			}
		})
	}
	// ReadHeader refuses the header faults alike, without a base.
	if _, err := ReadHeader(bytes.NewReader(cases[11].delta)); err.(*Error).Rule != archive.RuleDotSegment {
		t.Fatalf("ReadHeader: %v", err)
	}
}

// encodeData compresses src into one frame with a fresh encoder.
func encodeData(src, dict []byte) ([]byte, error) {
	var e encoders
	defer e.close()
	z, err := e.get(windowClass(int64(len(src)+len(dict))), dict)
	if err != nil {
		return nil, err
	}
	return z.EncodeAll(src, nil), nil
}
