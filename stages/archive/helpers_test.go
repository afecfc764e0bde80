package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// file is one file of a test tree.
type file struct {
	data string
	mode os.FileMode
}

// mkTree creates files (path -> file; a path ending in "/" is a directory)
// under dir in the given order.
func mkTree(t testing.TB, dir string, order []string, files map[string]file) {
	t.Helper()
	for _, p := range order {
		f := files[p]
		abs := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "/")))
		if strings.HasSuffix(p, "/") {
			mode := f.mode
			if mode == 0 {
				mode = 0o755
			}
			if err := os.MkdirAll(abs, 0o755); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(abs, mode) // after the children are made
			continue
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(abs, []byte(f.data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(abs, mode); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readTree returns path -> content of every regular file under dir and
// path+"/" -> "" for every directory.
func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func writeArchive(t testing.TB, root string, opts Options) ([]byte, Result) {
	t.Helper()
	var buf bytes.Buffer
	res, err := Write(context.Background(), &buf, root, opts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// --- hand-built archives ---

// ent is one raw tar entry.
type ent struct {
	name   string
	prefix string
	typ    byte
	data   string
	mode   int64
	link   string
	magic  string           // default "ustar\x0000"
	mangle func(*[512]byte) // applied after the checksum is set
}

func octal(b []byte, v int64) {
	s := fmt.Sprintf("%0*o", len(b)-1, v)
	copy(b, s)
	b[len(b)-1] = 0
}

func rawHeader(e ent) [512]byte {
	var b [512]byte
	copy(b[0:100], e.name)
	mode := e.mode
	if mode == 0 {
		mode = 0o644
	}
	octal(b[100:108], mode)
	octal(b[108:116], 0)
	octal(b[116:124], 0)
	octal(b[124:136], int64(len(e.data)))
	octal(b[136:148], 0)
	typ := e.typ
	if typ == 0 {
		typ = '0'
	}
	b[156] = typ
	copy(b[157:257], e.link)
	magic := e.magic
	if magic == "" {
		magic = "ustar\x0000"
	}
	copy(b[257:265], magic)
	copy(b[345:500], e.prefix)
	for i := 148; i < 156; i++ {
		b[i] = ' '
	}
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	if e.mangle != nil {
		e.mangle(&b)
	}
	return b
}

// tarBytes builds a tar stream of es, the two-block end marker, then tail.
func tarBytes(es []ent, tail []byte) []byte {
	var buf bytes.Buffer
	for _, e := range es {
		h := rawHeader(e)
		buf.Write(h[:])
		buf.WriteString(e.data)
		if pad := -len(e.data) & 511; pad > 0 {
			buf.Write(make([]byte, pad))
		}
	}
	buf.Write(make([]byte, 1024))
	buf.Write(tail)
	return buf.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// pz writes b in the block-member format, cutting members every block
// bytes (so small test archives have several).
func pz(b []byte, block int) []byte {
	var buf bytes.Buffer
	w := newPGZWriter(&buf, DefaultLevel)
	w.block = block
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// members splits a block-member stream into its members.
func members(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= pgzHeaderLen {
		n := min(len(b), int(binary.LittleEndian.Uint32(b[16:20])))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

// paxData builds extended header records.
func paxData(kv ...string) string {
	var s strings.Builder
	for i := 0; i < len(kv); i += 2 {
		rec := " " + kv[i] + "=" + kv[i+1] + "\n"
		n := len(rec)
		for {
			m := len(fmt.Sprint(n)) + len(rec)
			if m == n {
				break
			}
			n = m
		}
		fmt.Fprintf(&s, "%d%s", n, rec)
	}
	return s.String()
}
