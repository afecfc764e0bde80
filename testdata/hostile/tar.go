package hostile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
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

// TarGz writes entries as one gzip member of a tar stream. An entry whose
// header declares more bytes than its Data holds ends the stream there
// (the header and the data it has, nothing after): an archive that lies
// about a size.
func TarGz(entries []Entry) ([]byte, error) {
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	short := false
	for _, e := range entries {
		h := e.Header
		if h.Typeflag != tar.TypeXGlobalHeader { // a global header carries its records only
			h.ModTime, h.Uid, h.Gid = time.Unix(0, 0), 0, 0
		}
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if len(e.Data) > 0 {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
		if int64(len(e.Data)) < h.Size && (h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeRegA) {
			short = true
			break
		}
	}
	if !short {
		if err := tw.Close(); err != nil {
			return nil, err
		}
	}
	var gb bytes.Buffer
	zw := gzip.NewWriter(&gb)
	if _, err := zw.Write(tb.Bytes()); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return gb.Bytes(), nil
}
