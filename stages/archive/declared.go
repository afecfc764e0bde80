package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DeclarationSchema names the format of an archive's declaration.
const DeclarationSchema = "piship-archive/v1"

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
}

// maxDeclaration bounds the declaration header's content: it holds one
// short JSON object.
const maxDeclaration = 1024

// tarRecord is what a tar writer may pad the stream to after the end
// marker (GNU tar's default record): the zero padding an archive with a
// declaration may carry.
const tarRecord = 10240

func (d Declared) comment() string {
	return fmt.Sprintf(`{"schema":%q,"files":%d,"dirs":%d,"bytes":%d}`, DeclarationSchema, d.Files, d.Dirs, d.Bytes)
}

// parseDeclaration reads the records of a global extended header: one
// comment record holding the declaration, nothing else.
func parseDeclaration(data []byte, idx int, entry string) (*Declared, error) {
	recs, err := parsePAX(data, idx, entry)
	if err != nil {
		return nil, err
	}
	c, ok := recs["comment"]
	if !ok || len(recs) != 1 {
		return nil, integrity(RuleEntryType, idx, entry, "a global extended header that is not a %s declaration is not accepted", DeclarationSchema)
	}
	var v struct {
		Schema string `json:"schema"`
		Files  *int   `json:"files"`
		Dirs   *int   `json:"dirs"`
		Bytes  *int64 `json:"bytes"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(c)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, integrity(RuleDeclared, idx, entry, "the declaration %q is not %s JSON", c, DeclarationSchema)
	}
	if v.Schema != DeclarationSchema {
		return nil, integrity(RuleDeclared, idx, entry, "declaration schema %q, this piship reads %s: install it with a newer piship", v.Schema, DeclarationSchema)
	}
	if v.Files == nil || v.Dirs == nil || v.Bytes == nil || *v.Files < 0 || *v.Dirs < 0 || *v.Bytes < 0 {
		return nil, integrity(RuleDeclared, idx, entry, "the declaration %q lacks a count or has a negative one", c)
	}
	return &Declared{Files: *v.Files, Dirs: *v.Dirs, Bytes: *v.Bytes}, nil
}
