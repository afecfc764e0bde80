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

// Parallel gzip.
//
// The deflate stream is cut into blocks of pgzBlockSize input bytes. Each
// block is compressed on its own goroutine by a klauspost flate writer
// (new, or reset) primed with the last 32 KiB of the previous block as its
// dictionary; every block but the last ends with a sync flush (so it ends
// on a byte boundary) and the last one with the final block. Concatenated
// in order they form one ordinary deflate stream inside one gzip member,
// which any gunzip reads. The bytes depend only on the input, the level and
// the block size, not on the number of cores or on scheduling. The cost in
// size is a few bytes per block for the flush and matches that cannot
// reach past the dictionary: +0.01% on the synthetic payload, -0.01% on
// the real Pi runtime, against klauspost's serial gzip at the same level.
const (
	pgzBlockSize = 1 << 20
	pgzDictSize  = 32 << 10
)

type pgzBlock struct {
	data, dict []byte
	last       bool
	level      int
	out        *bytes.Buffer
	err        error
	done       chan struct{}
}

// flateWriters holds reusable flate writers, one pool per level. ResetDict
// leaves a writer in the state NewWriterDict would (klauspost keeps the
// standard library's guarantee that a reset writer produces the same bytes
// as a new one; TestParallelGzip checks it across core counts), and saves
// allocating and clearing ~1 MB of tables per block.
var flateWriters [10]sync.Pool

func (b *pgzBlock) compress() {
	defer close(b.done)
	b.out.Grow(len(b.data)/2 + 64)
	pool := &flateWriters[b.level]
	fw, _ := pool.Get().(*flate.Writer)
	if fw == nil {
		var err error
		if fw, err = flate.NewWriterDict(b.out, b.level, b.dict); err != nil {
			b.err = err
			return
		}
	} else {
		fw.ResetDict(b.out, b.dict)
	}
	defer pool.Put(fw)
	if _, err := fw.Write(b.data); err != nil {
		b.err = err
		return
	}
	if b.last {
		b.err = fw.Close()
	} else {
		b.err = fw.Flush()
	}
}

// pgzWriter writes a gzip member with a fixed header: no name, no
// comment, no extra field, MTIME 0, OS 255 (unknown).
type pgzWriter struct {
	w       io.Writer
	level   int
	buf     []byte
	dict    []byte
	crc     uint32
	size    uint32 // ISIZE: input length modulo 2^32
	queue   []*pgzBlock
	maxQ    int
	free    [][]byte
	outs    []*bytes.Buffer
	started bool
	err     error
}

func newPGZWriter(w io.Writer, level int) *pgzWriter {
	return &pgzWriter{w: w, level: level, maxQ: min(2*runtime.GOMAXPROCS(0), 16)}
}

func (z *pgzWriter) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := len(p)
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += uint32(n)
	for len(p) > 0 {
		if z.buf == nil {
			z.buf = z.newBuf()
		}
		m := min(len(p), pgzBlockSize-len(z.buf))
		z.buf = append(z.buf, p[:m]...)
		p = p[m:]
		if len(z.buf) == pgzBlockSize {
			if err := z.submit(false); err != nil {
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
	return make([]byte, 0, pgzBlockSize)
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

func (z *pgzWriter) submit(last bool) error {
	if z.buf == nil {
		z.buf = []byte{}
	}
	b := &pgzBlock{data: z.buf, dict: z.dict, last: last, level: z.level, out: z.newOut(), done: make(chan struct{})}
	tail := z.buf[max(0, len(z.buf)-pgzDictSize):]
	z.dict = append([]byte(nil), tail...)
	z.buf = nil
	z.queue = append(z.queue, b)
	go b.compress()
	if len(z.queue) >= z.maxQ {
		return z.flushOldest()
	}
	return nil
}

// flushOldest waits for the oldest block in flight and writes it out.
func (z *pgzWriter) flushOldest() error {
	b := z.queue[0]
	z.queue = z.queue[1:]
	<-b.done
	if b.err != nil {
		z.err = b.err
		return z.err
	}
	if !z.started {
		z.started = true
		hdr := [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl(z.level), 255}
		if _, err := z.w.Write(hdr[:]); err != nil {
			z.err = err
			return err
		}
	}
	if _, err := z.w.Write(b.out.Bytes()); err != nil {
		z.err = err
		return err
	}
	if cap(b.data) == pgzBlockSize {
		z.free = append(z.free, b.data)
	}
	z.outs = append(z.outs, b.out)
	return nil
}

// Close compresses what is left as the final block, writes every block in
// order and the trailer (CRC-32 and length).
func (z *pgzWriter) Close() error {
	if z.err != nil {
		return z.err
	}
	if err := z.submit(true); err != nil {
		return err
	}
	for len(z.queue) > 0 {
		if err := z.flushOldest(); err != nil {
			return err
		}
	}
	var tr [8]byte
	binary.LittleEndian.PutUint32(tr[0:4], z.crc)
	binary.LittleEndian.PutUint32(tr[4:8], z.size)
	if _, err := z.w.Write(tr[:]); err != nil {
		z.err = err
		return err
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
