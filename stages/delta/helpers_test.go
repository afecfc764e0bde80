package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// tfile is one file of a generated tree.
type tfile struct {
	data []byte
	exec bool
}

// writeTree writes files (slash path -> file) and the empty directories
// dirs under root.
func writeTree(t testing.TB, root string, files map[string]tfile, dirs ...string) {
	t.Helper()
	for p, f := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		perm := os.FileMode(0o644)
		if f.exec {
			perm = 0o755
		}
		if err := os.WriteFile(abs, f.data, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(abs, perm); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// text is n bytes of JavaScript-like text from seed: words from a small
// vocabulary, so it compresses as source does.
func text(seed uint64, n int) []byte {
	words := []string{"function", "return", "const", "let", "if", "else", "await", "async", "import", "export",
		"from", "this", "new", "class", "extends", "=>", "{", "}", "(", ")", ";", "\n", "value", "options", "result", "error"}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(4) == 0 {
			b.WriteString(" x")
			b.WriteString(string(rune('a' + r.IntN(26))))
		}
		b.WriteByte(' ')
	}
	return b.Bytes()[:n]
}

// noise is n random bytes.
func noise(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// edit returns b with a few spans rewritten, as a version bump edits a
// file.
func edit(b []byte, seed uint64) []byte {
	out := bytes.Clone(b)
	r := rand.New(rand.NewPCG(seed, 3))
	for range 3 {
		i := r.IntN(len(out))
		out = append(out[:i:i], append([]byte("/* changed "+string(rune('a'+r.IntN(26)))+" */"), out[i:]...)...)
	}
	return out
}

// pair is a generated base and result tree that exercise every op.
type pair struct{ from, to string }

func makePair(t testing.TB) pair {
	t.Helper()
	dir := t.TempDir()
	p := pair{filepath.Join(dir, "from"), filepath.Join(dir, "to")}
	shared := map[string]tfile{
		"release.json":              {data: []byte(`{"schema":"piship-release/v1"}`)},
		"payload/lib/keep1.js":      {data: text(1, 20_000)},
		"payload/lib/keep2.js":      {data: text(2, 5_000)},
		"payload/lib/deep/keep3.js": {data: text(3, 700)},
	}
	from := map[string]tfile{
		"payload/app.js":               {data: text(10, 60_000)},
		"payload/chunks/chunk-AAAA.js": {data: text(11, 40_000)},
		"payload/chunks/chunk-KEEP.js": {data: text(12, 3_000)},
		"payload/moved/a.txt":          {data: text(13, 9_000)},
		"payload/gone.txt":             {data: text(14, 2_000)},
		"payload/bin/tool":             {data: noise(15, 3_000)},
		"payload/thing":                {data: text(16, 100)},
		"payload/dup/one.txt":          {data: text(17, 1_000)},
	}
	to := map[string]tfile{
		"payload/app.js":               {data: edit(from["payload/app.js"].data, 1)},
		"payload/chunks/chunk-BBBB.js": {data: edit(from["payload/chunks/chunk-AAAA.js"].data, 2)},
		"payload/chunks/chunk-KEEP.js": from["payload/chunks/chunk-KEEP.js"],
		"payload/other/a.txt":          from["payload/moved/a.txt"],
		"payload/bin/tool":             {data: from["payload/bin/tool"].data, exec: true},
		"payload/thing/x.js":           {data: text(18, 500)},
		"payload/newdir/brand.bin":     {data: noise(19, 4_000)},
		"payload/newdir/empty.txt":     {data: nil},
		"payload/dup/one.txt":          from["payload/dup/one.txt"],
		"payload/dup/two.txt":          from["payload/dup/one.txt"],
	}
	for k, v := range shared {
		from[k], to[k] = v, v
	}
	writeTree(t, p.from, from, "payload/empty-old", "payload/moved")
	writeTree(t, p.to, to, "payload/empty-new", "payload/empty-new/inner")
	return p
}

// writeDelta writes the delta of p and returns its bytes.
func writeDelta(t testing.TB, p pair) ([]byte, Result) {
	t.Helper()
	var b bytes.Buffer
	res, err := Write(context.Background(), &b, p.from, p.to, Meta{FromVersion: "1.0.0", ToVersion: "1.1.0", Target: "linux-x64"})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), res
}

// scan is ScanTree or a fatal error.
func scan(t testing.TB, dir string) Tree {
	t.Helper()
	tr, err := ScanTree(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// split parses a delta into its header and its data.
func split(t testing.TB, d []byte) (*Header, []byte) {
	t.Helper()
	r := bytes.NewReader(d)
	h, err := ReadHeader(r)
	if err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	return h, rest
}

// join encodes h (as it stands: no check) and appends data.
func join(t testing.TB, h *Header, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := encodeHeader(&b, h); err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	return b.Bytes()
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
