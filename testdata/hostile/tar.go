package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Entry is one tar entry: a header and, for a regular file, its content.
type Entry struct {
	Header tar.Header
	Data   []byte
}

// File is a regular file entry.
func File(name, data string) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data))}, Data: []byte(data)}
}

// Entries lists a release directory as piship's archive writer does:
// sorted by the bytes of their paths, directories with a trailing "/".
func Entries(dir string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out = append(out, Entry{Header: tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755}})
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		e := File(rel, string(data))
		if fi, err := d.Info(); err == nil && fi.Mode()&0o111 != 0 {
			e.Header.Mode = 0o755
		}
		out = append(out, e)
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Header.Name < out[j].Header.Name })
	return out, err
}

// TarGz writes entries as one gzip member of a tar stream
// (piship-archive/v1, read as any gzip stream). An entry whose header
// declares more bytes than its Data holds ends the stream there (the
// header and the data it has, nothing after): an archive that lies about
// a size.
func TarGz(entries []Entry) ([]byte, error) {
	tb, _, err := tarStream(entries)
	if err != nil {
		return nil, err
	}
	var gb bytes.Buffer
	zw := gzip.NewWriter(&gb)
	if _, err := zw.Write(tb); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return gb.Bytes(), nil
}

// TarZst writes entries as piship-archive/v2 around them, written here
// from the format's description (stages/archive's doc.go), not by its
// writer: frame 0 a declaration that tells the truth about the entries
// (files, directories with implied parents, bytes, and an index of every
// regular file: frame 1, its offset, size and SHA-256), frame 1 the tar
// stream of entries as TarGz writes it, then the seek table. A first
// entry that is a global header (a case's own declaration) gives the
// counts instead, and the index lists only as many files as it says.
func TarZst(entries []Entry) ([]byte, error) { return tarZst(entries, "") }

// tarZst is TarZst, but the index gives the file named lie (if any) the
// SHA-256 of other bytes.
func tarZst(entries []Entry, lie string) ([]byte, error) {
	var claim *struct{ Files, Dirs, Bytes int64 }
	if len(entries) > 0 && entries[0].Header.Typeflag == tar.TypeXGlobalHeader {
		claim = &struct{ Files, Dirs, Bytes int64 }{}
		if err := json.Unmarshal([]byte(entries[0].Header.PAXRecords["comment"]), claim); err != nil {
			return nil, err
		}
		entries = entries[1:]
	}
	tb, offs, err := tarStream(entries)
	if err != nil {
		return nil, err
	}
	var files, bytesN int64
	dirs := map[string]bool{}
	var index []string
	for i, e := range entries[:len(offs)] {
		h := e.Header
		name := strings.TrimSuffix(h.Name, "/")
		for k := 1; k < len(name); k++ {
			if name[k] == '/' {
				dirs[name[:k]] = true
			}
		}
		switch h.Typeflag {
		case tar.TypeDir:
			dirs[name] = true
		case tar.TypeReg:
			files++
			bytesN += h.Size
			sum := sha256.Sum256(e.Data)
			if h.Name == lie {
				sum = sha256.Sum256(append([]byte("not "), e.Data...))
			}
			p, _ := json.Marshal(h.Name)
			index = append(index, fmt.Sprintf(`[%s,1,%d,%d,"%s"]`, p, offs[i], h.Size, hex.EncodeToString(sum[:])))
		}
	}
	counts := [3]int64{files, int64(len(dirs)), bytesN}
	if claim != nil {
		counts = [3]int64{claim.Files, claim.Dirs, claim.Bytes}
		index = index[:min(int64(len(index)), claim.Files)]
	}
	comment := fmt.Sprintf(`{"schema":"piship-archive/v2","files":%d,"dirs":%d,"bytes":%d,"index":[%s]}`, counts[0], counts[1], counts[2], strings.Join(index, ","))
	var db bytes.Buffer
	tw := tar.NewWriter(&db)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": comment}}); err != nil {
		return nil, err
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, err
	}
	defer enc.Close()
	var out []byte
	var table []byte
	for _, frame := range [][]byte{db.Bytes(), tb} {
		c := enc.EncodeAll(frame, nil)
		out = append(out, c...)
		table = binary.LittleEndian.AppendUint32(table, uint32(len(c)))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(frame)))
	}
	// The seek table: skippable magic, length, the entries, then frames,
	// descriptor 0 and the seekable magic.
	out = binary.LittleEndian.AppendUint32(out, 0x184D2A5E)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(table)+9))
	out = append(out, table...)
	out = binary.LittleEndian.AppendUint32(out, 2)
	out = append(out, 0)
	return binary.LittleEndian.AppendUint32(out, 0x8F92EAB1), nil
}

// tarStream is the tar stream of entries (see TarGz) and, per entry, the
// offset of its data, up to the entry the stream ends inside, if any.
func tarStream(entries []Entry) ([]byte, []int64, error) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	short := false
	offs := make([]int64, len(entries))
	for i, e := range entries {
		h := e.Header
		if h.Typeflag != tar.TypeXGlobalHeader { // a global header carries its records only
			h.ModTime, h.Uid, h.Gid = time.Unix(0, 0), 0, 0
		}
		if err := tw.WriteHeader(&h); err != nil {
			return nil, nil, err
		}
		offs[i] = int64(tb.Len())
		if len(e.Data) > 0 {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, nil, err
			}
		}
		if int64(len(e.Data)) < h.Size && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeRegA) {
			offs = offs[:i+1]
			short = true
			break
		}
	}
	if !short {
		if err := tw.Close(); err != nil {
			return nil, nil, err
		}
	}
	return tb.Bytes(), offs, nil
}
