package archive

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
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

// UnmarshalJSON reads an entry's five-element array.
func (e *IndexEntry) UnmarshalJSON(b []byte) error {
	var a []json.RawMessage
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 5 {
		return fmt.Errorf("an index entry of %d elements, not 5", len(a))
	}
	if err := json.Unmarshal(a[0], &e.Path); err != nil {
		return err
	}
	var err error
	num := func(r json.RawMessage) int64 {
		n, perr := strconv.ParseInt(string(r), 10, 64)
		if perr != nil || n < 0 {
			err = fmt.Errorf("%s is not a count", r)
		}
		return n
	}
	e.Frame, e.Offset, e.Size = int(num(a[1])), num(a[2]), num(a[3])
	if err != nil {
		return err
	}
	if err := json.Unmarshal(a[4], &e.SHA256); err != nil {
		return err
	}
	if s, err := hex.DecodeString(e.SHA256); err != nil || len(s) != 32 || hex.EncodeToString(s) != e.SHA256 {
		return fmt.Errorf("%q is not a lowercase hex SHA-256", e.SHA256)
	}
	return nil
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
	var v struct {
		Schema string        `json:"schema"`
		Files  *int          `json:"files"`
		Dirs   *int          `json:"dirs"`
		Bytes  *int64        `json:"bytes"`
		Index  *[]IndexEntry `json:"index"`
	}
	short := c
	if len(short) > 200 {
		short = short[:200] + "..."
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(c)))
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
	case f == V1 && v.Index != nil:
		return nil, integrity(RuleDeclared, idx, entry, "a %s declaration with an index", V1)
	case f == V2 && v.Index == nil:
		return nil, integrity(RuleIndex, idx, entry, "a %s declaration without an index", V2)
	case f == V2 && len(*v.Index) != d.Files:
		return nil, integrity(RuleIndex, idx, entry, "the index lists %d files, the declaration %d", len(*v.Index), d.Files)
	}
	if v.Index != nil {
		d.Index = *v.Index
	}
	return d, nil
}
