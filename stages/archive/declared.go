package archive

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DeclarationSchema names the format of a V1 archive's declaration (a V2
// archive's says V2).
const DeclarationSchema = string(V1)

// Declared is what an archive Write made says about itself before its
// first entry: the regular files, the directories and the bytes of file
// content that follow. It travels as the "comment" record of a PAX global
// extended header, the archive's first header (as git archive puts its
// commit id): POSIX readers ignore a comment, so tar -x extracts the same
// tree as before. With it an install knows the expanded size before it
// writes a byte (free space, Open) and Extract stops at the first
// entry or byte beyond it.
//
// An archive without one (what piship wrote before, or any other tar.gz)
// is read as before, bounded by Limits.MaxBytes and MaxEntries only.
type Declared struct {
	Files int   // regular files
	Dirs  int   // directories, implied parents included (Write makes every one an entry)
	Bytes int64 // total file content
	// Index lists every regular file of a V2 archive, in archive order
	// (nil in V1): where its bytes are, what they hash to. Extract holds
	// every file to its entry.
	Index []IndexEntry
}

// IndexEntry is one regular file of a V2 archive's index. In the
// declaration's JSON it is an array of five: ["path", frame, offset,
// size, "sha256"].
type IndexEntry struct {
	Path   string // the archive path, as its tar header spells it
	Frame  int    // the zstd frame holding the file's header, where its data starts (1 is the first after the declaration)
	Offset int64  // the file's first byte, counted from the start of that frame's decompressed bytes
	Size   int64  // bytes of content
	SHA256 string // lowercase hex SHA-256 of the content
}

// maxDeclaration bounds a V1 declaration header's content: it holds one
// short JSON object.
const maxDeclaration = 1024

// maxDeclarationV2 bounds a V2 declaration, index included (about 150
// bytes a file: the real Pi runtime's 19,634 files take 3 MB).
const maxDeclarationV2 = 64 << 20

// tarRecord is what a tar writer may pad the stream to after the end
// marker (GNU tar's default record): the zero padding an archive with a
// declaration may carry.
const tarRecord = 10240

func (d Declared) comment() string {
	return fmt.Sprintf(`{"schema":%q,"files":%d,"dirs":%d,"bytes":%d}`, DeclarationSchema, d.Files, d.Dirs, d.Bytes)
}

// commentV2 is a V2 declaration: V1's fields, schema V2, and the index.
func (d Declared) commentV2() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"schema":%q,"files":%d,"dirs":%d,"bytes":%d,"index":[`, V2, d.Files, d.Dirs, d.Bytes)
	for i, e := range d.Index {
		if i > 0 {
			b.WriteByte(',')
		}
		p, _ := json.Marshal(e.Path)
		b.WriteByte('[')
		b.Write(p)
		fmt.Fprintf(&b, `,%d,%d,%d,"%s"]`, e.Frame, e.Offset, e.Size, e.SHA256)
	}
	b.WriteString("]}")
	return b.String()
}

// parseIndex reads the index's JSON: an array of arrays of five, as
// commentV2 writes them, strictly (counts are plain non-negative integers)
// and without encoding/json's reflection, which took 220 ms for 20,000
// files where this takes a few.
func parseIndex(b []byte) ([]IndexEntry, error) {
	p := indexParser{b: b}
	p.ws()
	p.expect('[')
	var out []IndexEntry
	p.ws()
	if p.err == nil && p.i < len(b) && b[p.i] == ']' {
		p.i++
	} else {
		for p.err == nil {
			var e IndexEntry
			p.ws()
			p.expect('[')
			e.Path = p.str()
			p.comma()
			e.Frame = int(p.num())
			p.comma()
			e.Offset = p.num()
			p.comma()
			e.Size = p.num()
			p.comma()
			e.SHA256 = p.str()
			p.ws()
			p.expect(']')
			if p.err == nil {
				if s, err := hex.DecodeString(e.SHA256); err != nil || len(s) != 32 || hex.EncodeToString(s) != e.SHA256 {
					return nil, fmt.Errorf("index entry %d: %q is not a lowercase hex SHA-256", len(out)+1, e.SHA256)
				}
			}
			out = append(out, e)
			p.ws()
			if p.err == nil && p.i < len(b) && b[p.i] == ']' {
				p.i++
				break
			}
			p.expect(',')
		}
	}
	p.ws()
	if p.err == nil && p.i != len(b) {
		p.fail("data after the index")
	}
	if p.err != nil {
		return nil, p.err
	}
	return out, nil
}

type indexParser struct {
	b   []byte
	i   int
	err error
}

func (p *indexParser) fail(what string) {
	if p.err == nil {
		p.err = fmt.Errorf("index: %s at byte %d", what, p.i)
	}
}

func (p *indexParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

func (p *indexParser) expect(c byte) {
	if p.err != nil {
		return
	}
	if p.i >= len(p.b) || p.b[p.i] != c {
		p.fail(fmt.Sprintf("%q expected", c))
		return
	}
	p.i++
}

func (p *indexParser) comma() {
	p.ws()
	p.expect(',')
	p.ws()
}

// num reads a non-negative integer without sign, fraction or exponent.
func (p *indexParser) num() int64 {
	if p.err != nil {
		return 0
	}
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	if err != nil || p.i-start > 1 && p.b[start] == '0' {
		p.fail("a count expected")
	}
	return n
}

// str reads a JSON string: as is when it has no escape, else by
// encoding/json.
func (p *indexParser) str() string {
	if p.err != nil {
		return ""
	}
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		p.fail("a string expected")
		return ""
	}
	start := p.i
	p.i++
	plain := true
	for p.i < len(p.b) && p.b[p.i] != '"' {
		switch c := p.b[p.i]; {
		case c == '\\':
			plain = false
			p.i += 2
			continue
		case c < 0x20:
			p.fail("a control character in a string")
			return ""
		}
		p.i++
	}
	if p.i >= len(p.b) {
		p.fail("an unterminated string")
		return ""
	}
	p.i++
	raw := p.b[start:p.i]
	if plain && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !utf8.Valid(raw) && plain {
		p.fail("an invalid string")
	}
	return s
}

// parseDeclaration reads the records of a global extended header: one
// comment record holding the declaration, nothing else.
func parseDeclaration(data []byte, idx int, entry string, f Format) (*Declared, error) {
	recs, err := parsePAX(data, idx, entry)
	if err != nil {
		return nil, err
	}
	c, ok := recs["comment"]
	if !ok || len(recs) != 1 {
		return nil, integrity(RuleEntryType, idx, entry, "a global extended header that is not a %s declaration is not accepted", f)
	}
	// The index comes last (as Write writes it): the head is decoded by
	// encoding/json, the index by parseIndex. ,"index": cannot occur
	// inside a JSON string (its quotes would be escaped), and the head
	// holds only strings and numbers, so its first occurrence is the key.
	head, index, hasIndex := c, "", false
	if k := strings.Index(c, `,"index":`); k >= 0 {
		rest := strings.TrimRight(c[k+len(`,"index":`):], " \t\r\n")
		if !strings.HasSuffix(rest, "}") {
			return nil, integrity(RuleDeclared, idx, entry, "the declaration does not end with its index")
		}
		head, index, hasIndex = c[:k]+"}", strings.TrimSpace(rest[:len(rest)-1]), true
	}
	var v struct {
		Schema string `json:"schema"`
		Files  *int   `json:"files"`
		Dirs   *int   `json:"dirs"`
		Bytes  *int64 `json:"bytes"`
	}
	short := head
	if len(short) > 200 {
		short = short[:200] + "..."
	}
	dec := json.NewDecoder(strings.NewReader(head))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, integrity(RuleDeclared, idx, entry, "the declaration %q is not %s JSON (%v)", short, f, err)
	}
	if v.Schema != string(f) {
		if v.Schema == string(V1) || v.Schema == string(V2) {
			return nil, integrity(RuleDeclared, idx, entry, "declaration schema %q in a %s stream", v.Schema, f)
		}
		return nil, integrity(RuleDeclared, idx, entry, "declaration schema %q, this piship reads %s and %s: install it with a newer piship", v.Schema, V1, V2)
	}
	if v.Files == nil || v.Dirs == nil || v.Bytes == nil || *v.Files < 0 || *v.Dirs < 0 || *v.Bytes < 0 {
		return nil, integrity(RuleDeclared, idx, entry, "the declaration %q lacks a count or has a negative one", short)
	}
	d := &Declared{Files: *v.Files, Dirs: *v.Dirs, Bytes: *v.Bytes}
	switch {
	case f == V1 && hasIndex:
		return nil, integrity(RuleDeclared, idx, entry, "a %s declaration with an index", V1)
	case f == V2 && (!hasIndex || index == "null"):
		return nil, integrity(RuleIndex, idx, entry, "a %s declaration without an index", V2)
	case f == V1:
		return d, nil
	}
	ix, err := parseIndex([]byte(index))
	if err != nil {
		return nil, integrity(RuleDeclared, idx, entry, "the declaration's %v", err)
	}
	if len(ix) != d.Files {
		return nil, integrity(RuleIndex, idx, entry, "the index lists %d files, the declaration %d", len(ix), d.Files)
	}
	d.Index = ix
	return d, nil
}
