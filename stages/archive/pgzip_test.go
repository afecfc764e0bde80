package archive

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

func pgz(t *testing.T, data []byte, level, procs int) []byte {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	var buf bytes.Buffer
	z := newPGZWriter(&buf, level)
	r := rand.New(rand.NewPCG(9, 9))
	for p := data; len(p) > 0; { // odd chunk sizes
		n := min(len(p), 1+r.IntN(300<<10))
		if _, err := z.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The parallel gzip stream is one standard gzip member, and its bytes do
// not depend on the number of cores.
func TestParallelGzip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := append(jsText(r, 2*pgzBlockSize+12345), binaryish(r, pgzBlockSize/4)...)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"empty", nil}, {"small", []byte("hello")}, {"exact block", data[:pgzBlockSize]}, {"multi-block", data}} {
		t.Run(tc.name, func(t *testing.T) {
			levels := []int{1, DefaultLevel, 9}
			if raceBuild {
				// The workers race the same way at every level; the
				// others sweep in a build without -race.
				levels = []int{DefaultLevel}
			}
			for _, level := range levels {
				data := tc.data
				if level == 9 && tc.name == "exact block" {
					continue // slow, and multi-block covers it
				}
				if level == 9 && len(data) > pgzBlockSize+5000 {
					data = data[:pgzBlockSize+5000] // level 9 is slow; two blocks tell enough
				}
				flateWriters[level] = sync.Pool{} // fresh writers only
				one := pgz(t, data, level, 1)
				pgz(t, binaryish(r, pgzBlockSize+999), level, 4) // leave used writers in the pool
				if !bytes.Equal(one, pgz(t, data, level, 1)) {
					t.Fatalf("level %d: reused writers change the output", level)
				}
				for _, procs := range []int{2, 8} {
					if !bytes.Equal(one, pgz(t, data, level, procs)) {
						t.Fatalf("level %d: output differs between 1 and %d procs", level, procs)
					}
				}
				// Every member is a standard gzip member of its own, with
				// its length in its header, holding one block.
				var got []byte
				members := 0
				for rest := one; len(rest) > 0; members++ {
					if !isPGZ(rest) {
						t.Fatalf("level %d: member %d header % x", level, members, rest[:min(len(rest), pgzHeaderLen)])
					}
					mlen := int(binary.LittleEndian.Uint32(rest[16:20]))
					zr, err := stdgzip.NewReader(bytes.NewReader(rest[:mlen]))
					if err != nil {
						t.Fatal(err)
					}
					zr.Multistream(false)
					block, err := io.ReadAll(zr)
					if err != nil {
						t.Fatalf("level %d member %d: %v", level, members, err)
					}
					if n := int(binary.LittleEndian.Uint32(rest[20:24])); n != len(block) || n > pgzBlockSize {
						t.Fatalf("level %d member %d: header says %d bytes, holds %d", level, members, n, len(block))
					}
					if zr.Name != "" || zr.Comment != "" || zr.OS != 255 || !zr.ModTime.IsZero() {
						t.Fatalf("header %+v", zr.Header)
					}
					got = append(got, block...)
					rest = rest[mlen:]
				}
				if want := max(1, (len(data)+pgzBlockSize-1)/pgzBlockSize); members != want {
					t.Fatalf("level %d: %d members, want %d", level, members, want)
				}
				if !bytes.Equal(got, data) {
					t.Fatalf("level %d: round trip differs", level)
				}
				// And the whole is one ordinary (multi-member) gzip stream.
				zr, err := stdgzip.NewReader(bytes.NewReader(one))
				if err != nil {
					t.Fatal(err)
				}
				if all, err := io.ReadAll(zr); err != nil || !bytes.Equal(all, data) {
					t.Fatalf("level %d: as one stream: %v", level, err)
				}
			}
		})
	}
}
