package archive

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Parallel gzip: the block-member format.
//
// The tar stream is cut into blocks of pgzBlockSize bytes and each block
// becomes a gzip member of its own (RFC 1952 allows any number of members;
// gunzip, tar -xz and every gzip library read them as one stream). Every
// member is compressed on its own goroutine from a fresh dictionary, so
// every member can also be inflated on its own goroutine: that is what lets
// install decompress on all cores (see pgzread.go).
//
// A member is: the 10-byte header (ID1 ID2, CM 8, FLG FEXTRA, MTIME 0,
// XFL, OS 255), XLEN 12 and one extra subfield, SI1 'P' SI2 'Z', LEN 8,
// holding two little-endian uint32s: the member's total length in bytes
// (header to trailer) and its uncompressed length; then the raw deflate
// data (ending with a final block) and the CRC-32 and ISIZE trailer. The
// length in the header lets a reader find the next member without
// inflating this one, as BGZF does. An empty input still gives one member.
//
// The bytes depend only on the input and the level, not on the number of
// cores or on scheduling. Starting each 1 MiB block from an empty
// dictionary costs 0.2-0.3% in size against one serial member (measured on
// the real Pi payload, bundled and unbundled).
const (
	pgzBlockSize = 1 << 20
	pgzHeaderLen = 10 + 2 + 4 + 8 // fixed header, XLEN, subfield header, subfield data
	pgzTrailer   = 8
	// pgzMaxMember bounds one member: deflate's worst case (stored blocks)
	// adds 5 bytes per 64 KiB block, far below this.
	pgzMaxMember = pgzBlockSize + pgzBlockSize/16 + pgzHeaderLen + pgzTrailer
)

type pgzBlock struct {
	data  []byte
	level int
	out   *bytes.Buffer
	err   error
	done  chan struct{}
}

// flateWriters holds reusable flate writers, one pool per level. Reset
// leaves a writer in the state NewWriter would (klauspost keeps the
// standard library's guarantee that a reset writer produces the same bytes
// as a new one; TestParallelGzip checks it across core counts), and saves
// allocating and clearing ~1 MB of tables per block.
var flateWriters [10]sync.Pool

// compress writes the whole member of one block to b.out.
func (b *pgzBlock) compress() {
	defer close(b.done)
	b.out.Grow(len(b.data)/2 + 64)
	var hdr [pgzHeaderLen]byte
	b.out.Write(hdr[:]) // patched below, once the length is known
	pool := &flateWriters[b.level]
	fw, _ := pool.Get().(*flate.Writer)
	if fw == nil {
		var err error
		if fw, err = flate.NewWriter(b.out, b.level); err != nil {
			b.err = err
			return
		}
	} else {
		fw.Reset(b.out)
	}
	defer pool.Put(fw)
	if _, err := fw.Write(b.data); err != nil {
		b.err = err
		return
	}
	if err := fw.Close(); err != nil {
		b.err = err
		return
	}
	var tr [pgzTrailer]byte
	binary.LittleEndian.PutUint32(tr[0:4], crc32.ChecksumIEEE(b.data))
	binary.LittleEndian.PutUint32(tr[4:8], uint32(len(b.data)))
	b.out.Write(tr[:])
	putPGZHeader(b.out.Bytes(), b.level, b.out.Len(), len(b.data))
}

// putPGZHeader fills in the header of a member of memberLen bytes holding
// rawLen uncompressed bytes.
func putPGZHeader(h []byte, level, memberLen, rawLen int) {
	copy(h, []byte{0x1f, 0x8b, 8, 4, 0, 0, 0, 0, xfl(level), 255, 12, 0, 'P', 'Z', 8, 0})
	binary.LittleEndian.PutUint32(h[16:20], uint32(memberLen))
	binary.LittleEndian.PutUint32(h[20:24], uint32(rawLen))
}

// pgzWriter cuts what is written into blocks and writes their members in
// order, compressing up to maxQ blocks at once.
type pgzWriter struct {
	w       io.Writer
	level   int
	block   int // input bytes per member: pgzBlockSize (smaller in tests)
	buf     []byte
	queue   []*pgzBlock
	maxQ    int
	free    [][]byte
	outs    []*bytes.Buffer
	written bool // a member has been submitted
	err     error
}

func newPGZWriter(w io.Writer, level int) *pgzWriter {
	return &pgzWriter{w: w, level: level, block: pgzBlockSize, maxQ: min(2*runtime.GOMAXPROCS(0), 16)}
}

func (z *pgzWriter) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := len(p)
	for len(p) > 0 {
		if z.buf == nil {
			z.buf = z.newBuf()
		}
		m := min(len(p), z.block-len(z.buf))
		z.buf = append(z.buf, p[:m]...)
		p = p[m:]
		if len(z.buf) == z.block {
			if err := z.submit(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (z *pgzWriter) newBuf() []byte {
	if k := len(z.free); k > 0 {
		b := z.free[k-1]
		z.free = z.free[:k-1]
		return b[:0]
	}
	return make([]byte, 0, z.block)
}

func (z *pgzWriter) newOut() *bytes.Buffer {
	if k := len(z.outs); k > 0 {
		o := z.outs[k-1]
		z.outs = z.outs[:k-1]
		o.Reset()
		return o
	}
	return new(bytes.Buffer)
}

func (z *pgzWriter) submit() error {
	if z.buf == nil {
		z.buf = []byte{}
	}
	b := &pgzBlock{data: z.buf, level: z.level, out: z.newOut(), done: make(chan struct{})}
	z.buf = nil
	z.written = true
	z.queue = append(z.queue, b)
	go b.compress()
	if len(z.queue) >= z.maxQ {
		return z.flushOldest()
	}
	return nil
}

// flushOldest waits for the oldest block in flight and writes its member.
func (z *pgzWriter) flushOldest() error {
	b := z.queue[0]
	z.queue = z.queue[1:]
	<-b.done
	if b.err != nil {
		z.err = b.err
		return z.err
	}
	if _, err := z.w.Write(b.out.Bytes()); err != nil {
		z.err = err
		return err
	}
	if cap(b.data) == z.block {
		z.free = append(z.free, b.data)
	}
	z.outs = append(z.outs, b.out)
	return nil
}

// Close compresses what is left as the last block (an empty member when
// nothing was written at all) and writes every member in order.
func (z *pgzWriter) Close() error {
	if z.err != nil {
		return z.err
	}
	if len(z.buf) > 0 || !z.written {
		if err := z.submit(); err != nil {
			return err
		}
	}
	for len(z.queue) > 0 {
		if err := z.flushOldest(); err != nil {
			return err
		}
	}
	z.err = io.ErrClosedPipe
	return nil
}

// xfl is the gzip XFL byte klauspost and the standard library write.
func xfl(level int) byte {
	switch level {
	case flate.BestCompression:
		return 2
	case flate.BestSpeed:
		return 4
	}
	return 0
}
