package archive

import (
	"bytes"
	stdflate "compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
)

// deflate compresses data with klauspost at level (or the standard
// library's encoder when std is set: other block choices, other codes).
func deflate(t testing.TB, data []byte, level int, std bool) []byte {
	t.Helper()
	var b bytes.Buffer
	var w io.WriteCloser
	var err error
	if std {
		w, err = stdflate.NewWriter(&b, level)
	} else {
		w, err = flate.NewWriter(&b, level)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// inflateSamples are inputs that exercise every block type and code shape
// the encoders produce: empty, tiny (fixed Huffman), runs (overlapping
// matches with distance 1), text, random bytes (stored blocks), a mix.
func inflateSamples() map[string][]byte {
	r := rand.New(rand.NewPCG(3, 4))
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	var mix bytes.Buffer
	for mix.Len() < 900_000 {
		switch r.IntN(4) {
		case 0:
			mix.Write(jsText(r, 1+r.IntN(20_000)))
		case 1:
			mix.Write(binaryish(r, 1+r.IntN(20_000)))
		case 2:
			mix.Write(bytes.Repeat([]byte{byte(r.IntN(256))}, 1+r.IntN(3000)))
		default:
			n := 1 + r.IntN(5000)
			mix.Write(random[:n])
		}
	}
	return map[string][]byte{
		"empty":  {},
		"one":    []byte("x"),
		"tiny":   []byte("hello, hello, hello world"),
		"run":    bytes.Repeat([]byte{'a'}, 70_000),
		"period": bytes.Repeat([]byte("abcdefg"), 20_000),
		"text":   jsText(r, 300_000),
		"random": random,
		"mix":    mix.Bytes()[:pgzBlockSize],
	}
}

// inflateExact decodes what both encoders make, at every level, byte for
// byte.
func TestInflateMatchesTheEncoders(t *testing.T) {
	for name, data := range inflateSamples() {
		for _, std := range []bool{false, true} {
			for _, level := range []int{-2, 0, 1, 2, 5, 6, 9} {
				if std && level < 0 {
					level = stdflate.HuffmanOnly
				}
				t.Run(fmt.Sprintf("%s/std=%v/level=%d", name, std, level), func(t *testing.T) {
					comp := deflate(t, data, level, std)
					dst := make([]byte, len(data))
					if err := inflateExact(dst, comp); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(dst, data) {
						t.Fatal("inflated bytes differ from the input")
					}
				})
			}
		}
	}
}

// Every way a stream can disagree with its declared length or its end is
// an error, never a panic or a short result.
func TestInflateRefuses(t *testing.T) {
	data := inflateSamples()["mix"][:100_000]
	comp := deflate(t, data, 5, false)
	cases := map[string]struct {
		dstLen int
		src    []byte
		want   string
	}{
		"declared too short": {len(data) - 1, comp, "more data than"},
		"declared too long":  {len(data) + 1, comp, "ends after"},
		"truncated":          {len(data), comp[:len(comp)-10], ""},
		"trailing data":      {len(data), append(append([]byte(nil), comp...), 0, 0, 0), "after the end"},
		"block type 3":       {1, []byte{0x07}, "block type 3"},
		"stored complement":  {3, []byte{0x01, 3, 0, 3, 0, 'a', 'b', 'c'}, "complement"},
		"stored truncated":   {3, []byte{0x01, 3, 0, 0xfc, 0xff, 'a'}, "ends early"},
		"empty":              {0, nil, "ends early"},
		"no final block":     {0, deflateNoFinal(t), "ends early"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := inflateExact(make([]byte, c.dstLen), c.src)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to say %q", err, c.want)
			}
		})
	}
	// A distance reaching before the start: a fixed-Huffman block whose
	// first symbol is a match.
	var w bitWriter
	w.bits(1, 1)        // final
	w.bits(1, 2)        // fixed Huffman
	w.rev(0b0000001, 7) // length symbol 257: length 3
	w.rev(0b00000, 5)   // distance symbol 0: distance 1
	w.rev(0, 7)         // end of block
	if err := inflateExact(make([]byte, 3), w.bytes()); err == nil || !strings.Contains(err.Error(), "before the start") {
		t.Fatalf("a match before the start: %v", err)
	}
}

// deflateNoFinal is a stream of one non-final empty stored block.
func deflateNoFinal(t *testing.T) []byte { return []byte{0x00, 0, 0, 0xff, 0xff} }

// bitWriter writes a DEFLATE bit stream by hand (LSB first; Huffman codes
// most significant bit first, through rev).
type bitWriter struct {
	out  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *bitWriter) rev(code uint64, n uint) {
	var r uint64
	for i := range n {
		r |= (code >> i & 1) << (n - 1 - i)
	}
	w.bits(r, n)
}

func (w *bitWriter) bytes() []byte {
	if w.nacc > 0 {
		return append(w.out, byte(w.acc))
	}
	return w.out
}

// FuzzInflate compares inflateExact with klauspost/compress/flate on
// arbitrary bytes taken as a DEFLATE stream: when klauspost decodes the
// whole input to n <= 1 MiB bytes, inflateExact into n bytes must give the
// same bytes; when inflateExact succeeds, klauspost must agree. And
// compressing the input and decoding it must give it back.
func FuzzInflate(f *testing.F) {
	for _, data := range inflateSamples() {
		if len(data) > 4096 {
			data = data[:4096]
		}
		f.Add(deflate(f, data, 5, false))
		f.Add(deflate(f, data, 1, true))
		f.Add(deflate(f, data, -2, false))
	}
	f.Add([]byte{0x01, 3, 0, 0xfc, 0xff, 'a', 'b', 'c'})
	f.Fuzz(func(t *testing.T, in []byte) {
		// Round trip of the input as data, at a level the input picks.
		level := []int{0, 1, 5, -2}[len(in)%4]
		comp := deflate(t, in, level, false)
		back := make([]byte, len(in))
		if err := inflateExact(back, comp); err != nil || !bytes.Equal(back, in) {
			t.Fatalf("round trip at level %d: %v", level, err)
		}
		// The input as a stream.
		r := bytes.NewReader(in)
		want, kerr := io.ReadAll(io.LimitReader(flate.NewReader(r), pgzBlockSize+1))
		kOK := kerr == nil && len(want) <= pgzBlockSize && r.Len() == 0
		n := len(want)
		if n > pgzBlockSize {
			n = pgzBlockSize
		}
		dst := make([]byte, n)
		err := inflateExact(dst, in)
		switch {
		case kOK && err != nil:
			t.Fatalf("klauspost decodes %d bytes, inflateExact fails: %v", len(want), err)
		case kOK && !bytes.Equal(dst, want):
			t.Fatal("inflateExact and klauspost decode different bytes")
		case !kOK && err == nil:
			t.Fatalf("inflateExact accepts what klauspost refuses (%v, %d bytes, %d left)", kerr, len(want), r.Len())
		}
		if err != nil && errors.Is(err, io.EOF) {
			t.Fatalf("bare io.EOF: %v", err)
		}
	})
}

// BenchmarkInflate compares inflateExact with klauspost's streaming
// decoder (what block members used before) on the members of an archive
// Write made: synthetic JavaScript and binaries (1 MiB, level 5), or every
// member of $PISHIP_INFLATE_BENCH_ARCHIVE (a release archive, for example
// the Pi payload's).
func BenchmarkInflate(b *testing.B) {
	type member struct {
		comp []byte
		n    int
	}
	var members []member
	if path := os.Getenv("PISHIP_INFLATE_BENCH_ARCHIVE"); path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for len(raw) > 0 {
			if !isPGZ(raw) {
				b.Fatalf("%s is not in the block-member format", path)
			}
			mlen := int(binary.LittleEndian.Uint32(raw[16:20]))
			members = append(members, member{raw[pgzHeaderLen : mlen-pgzTrailer], int(binary.LittleEndian.Uint32(raw[20:24]))})
			raw = raw[mlen:]
		}
	} else {
		data := inflateSamples()["mix"]
		members = append(members, member{deflate(b, data, DefaultLevel, false), len(data)})
	}
	total := 0
	for _, m := range members {
		total += m.n
	}
	dst := make([]byte, pgzBlockSize)
	b.Run("klauspost", func(b *testing.B) {
		b.SetBytes(int64(total))
		fr := flate.NewReader(bytes.NewReader(nil))
		for b.Loop() {
			for _, m := range members {
				fr.(flate.Resetter).Reset(bytes.NewReader(m.comp), nil)
				if _, err := io.ReadFull(fr, dst[:m.n]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("inflateExact", func(b *testing.B) {
		b.SetBytes(int64(total))
		for b.Loop() {
			for _, m := range members {
				if err := inflateExact(dst[:m.n], m.comp); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
