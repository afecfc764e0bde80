package archive

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Parallel reading of V2's frames (see zst.go).
//
// One goroutine reads the archive in order (the caller's hash of the
// compressed bytes sees every byte once), finds each frame's extent from
// its frame header and block headers without decompressing it, and hands
// it to the shared decoder (DecodeAll on all cores) on a goroutine of its
// own, into a buffer of the frame's declared content size; Read returns
// the decoded frames in order. At most min(2 x GOMAXPROCS, 8) frames are
// in flight. A frame must declare its content size and carry a checksum,
// have no dictionary, a window and content size within the bounds
// (maxFrameRaw, maxFrame0Raw for the declaration's) and nothing but
// known block types; the only skippable frame is the seek table, which
// must come last, match every frame's sizes and be followed by nothing.

var (
	zstDecOnce sync.Once
	zstDec     *zstd.Decoder
)

func decoder() *zstd.Decoder {
	zstDecOnce.Do(func() {
		var err error
		zstDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxFrame0Raw),
			zstd.WithDecoderMaxWindow(maxFrameRaw), zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // only options, all valid
		}
	})
	return zstDec
}

type zstFrame struct {
	index  int
	offset int64 // in the archive
	comp   []byte
	rawLen int
	out    []byte
	err    error
	done   chan struct{}
}

type zstReader struct {
	src    *bufio.Reader
	ready  chan *zstFrame
	stop   chan struct{}
	exited chan struct{}
	once   sync.Once

	cur *zstFrame
	off int
	err error
	// starts holds the tar offset of every frame Read has begun to
	// return, delivered the tar bytes it has returned (the reader's
	// goroutine alone).
	starts    []int64
	lens      []int64
	delivered int64
}

var (
	zstCompBufs sync.Pool
	zstOutBufs  sync.Pool
)

func newZstReader(src *bufio.Reader) *zstReader {
	z := &zstReader{
		src:    src,
		ready:  make(chan *zstFrame, min(2*runtime.GOMAXPROCS(0), 8)),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go z.produce()
	return z
}

func zstErr(i int, off int64, format string, args ...any) *Error {
	return integrity(RuleZstd, 0, "", "zstd frame %d (offset %d): %s", i, off, fmt.Sprintf(format, args...))
}

func (z *zstReader) produce() {
	defer close(z.exited)
	defer close(z.ready)
	var off int64
	var sizes [][2]uint32
	send := func(m *zstFrame) bool {
		select {
		case z.ready <- m:
			return true
		case <-z.stop:
			return false
		}
	}
	fail := func(err error) {
		m := &zstFrame{err: err, done: make(chan struct{})}
		close(m.done)
		send(m)
	}
	for i := 0; ; i++ {
		select {
		case <-z.stop:
			return
		default:
		}
		magic, err := z.src.Peek(4)
		if len(magic) < 4 {
			switch {
			case err != io.EOF && err != io.ErrUnexpectedEOF:
				fail(err) // the source failed; the extractor reports its error
			case len(magic) == 0:
				fail(integrity(RuleSeekTable, 0, "", "the archive ends after %d frames without its seek table (truncated?)", i))
			default:
				fail(integrity(RuleTruncated, 0, "", "the archive ends inside the magic number at offset %d", off))
			}
			return
		}
		switch m := binary.LittleEndian.Uint32(magic); {
		case m == seekTableMagic:
			if i == 0 {
				fail(integrity(RuleSeekTable, 0, "", "a seek table before the first frame"))
			} else {
				fail(z.seekTable(off, sizes))
			}
			return
		case m&0xFFFFFFF0 == 0x184D2A50:
			fail(integrity(RuleSeekTable, 0, "", "a skippable frame (magic %#x, offset %d) that is not the seek table", m, off))
			return
		case m != 0xFD2FB528:
			fail(zstErr(i, off, "not a zstd frame (bytes % x)", magic))
			return
		}
		f := &zstFrame{index: i, offset: off, done: make(chan struct{})}
		f.comp, f.rawLen, f.err = z.readFrame(i, off)
		if f.err != nil {
			close(f.done)
			send(f)
			return
		}
		sizes = append(sizes, [2]uint32{uint32(len(f.comp)), uint32(f.rawLen)})
		off += int64(len(f.comp))
		go f.decode()
		if !send(f) {
			return
		}
	}
}

// readFrame reads one frame whole, checking its header and finding its
// end from its block headers.
func (z *zstReader) readFrame(i int, off int64) ([]byte, int, error) {
	trunc := func(n int) error {
		return integrity(RuleTruncated, 0, "", "the archive ends inside zstd frame %d (offset %d, after %d bytes)", i, off, n)
	}
	read := func(b []byte, n int) ([]byte, error) {
		at := len(b)
		b = append(b, make([]byte, n)...)
		if _, err := io.ReadFull(z.src, b[at:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return b, trunc(at)
			}
			return b, err
		}
		return b, nil
	}
	buf, _ := zstCompBufs.Get().(*[]byte)
	var b []byte
	if buf != nil {
		b = (*buf)[:0]
	}
	b, err := read(b, 6)
	if err != nil {
		return nil, 0, err
	}
	fhd := b[4]
	fcsFlag, single, checksum, dict := fhd>>6, fhd>>5&1 == 1, fhd>>2&1 == 1, fhd&3
	switch {
	case fhd&8 != 0:
		return nil, 0, zstErr(i, off, "a reserved bit of the frame header is set")
	case dict != 0:
		return nil, 0, zstErr(i, off, "a dictionary id: frames of %s use no dictionary", V2)
	case !checksum:
		return nil, 0, zstErr(i, off, "no content checksum: every frame of %s carries one", V2)
	case fcsFlag == 0 && !single:
		return nil, 0, zstErr(i, off, "no Frame_Content_Size: every frame of %s declares it", V2)
	}
	fcsLen := [4]int{1, 2, 4, 8}[fcsFlag]
	var window uint64
	n := fcsLen
	if !single {
		n++
	}
	if b, err = read(b, n-1); err != nil {
		return nil, 0, err
	}
	p := 5
	if !single {
		wd := b[5]
		base := uint64(1) << (10 + wd>>3)
		window = base + base/8*uint64(wd&7)
		p++
	}
	var fcs uint64
	switch fcsLen {
	case 1:
		fcs = uint64(b[p])
	case 2:
		fcs = uint64(binary.LittleEndian.Uint16(b[p:])) + 256
	case 4:
		fcs = uint64(binary.LittleEndian.Uint32(b[p:]))
	case 8:
		fcs = binary.LittleEndian.Uint64(b[p:])
	}
	if single {
		window = fcs
	}
	bound := uint64(maxFrameRaw)
	if i == 0 {
		bound = maxFrame0Raw
	}
	switch {
	case fcs == 0:
		return nil, 0, zstErr(i, off, "an empty frame")
	case fcs > bound:
		return nil, 0, zstErr(i, off, "a content size of %d bytes, over the %d a frame of %s may hold", fcs, bound, V2)
	case window > maxFrameRaw:
		return nil, 0, zstErr(i, off, "a window of %d bytes, over %d", window, maxFrameRaw)
	}
	blockMax := min(window, 128<<10)
	maxComp := int(fcs) + int(fcs)/16 + 4096
	for {
		at := len(b)
		if b, err = read(b, 3); err != nil {
			return nil, 0, err
		}
		bh := uint32(b[at]) | uint32(b[at+1])<<8 | uint32(b[at+2])<<16
		last, typ, size := bh&1 == 1, bh>>1&3, uint64(bh>>3)
		if size > blockMax {
			return nil, 0, zstErr(i, off, "a block of %d bytes, over the %d its window allows", size, blockMax)
		}
		switch typ {
		case 1: // RLE: one byte, repeated
			size = 1
		case 3:
			return nil, 0, zstErr(i, off, "a block of the reserved type")
		}
		if len(b)+int(size) > maxComp {
			return nil, 0, zstErr(i, off, "over %d compressed bytes for %d decompressed", maxComp, fcs)
		}
		if b, err = read(b, int(size)); err != nil {
			return nil, 0, err
		}
		if last {
			break
		}
	}
	if b, err = read(b, 4); err != nil { // the checksum
		return nil, 0, err
	}
	return b, int(fcs), nil
}

// seekTable reads and checks the seek table at off, after the frames of
// sizes, and that nothing follows it.
func (z *zstReader) seekTable(off int64, sizes [][2]uint32) error {
	want := 8*len(sizes) + 9
	var hdr [8]byte
	if _, err := io.ReadFull(z.src, hdr[:]); err != nil {
		return z.eof(err, "inside the seek table's header")
	}
	if n := int(binary.LittleEndian.Uint32(hdr[4:])); n != want {
		return integrity(RuleSeekTable, 0, "", "a seek table of %d bytes after %d frames (it takes %d)", n, len(sizes), want)
	}
	b := make([]byte, want)
	if _, err := io.ReadFull(z.src, b); err != nil {
		return z.eof(err, "inside the seek table")
	}
	foot := b[len(b)-9:]
	switch {
	case int(binary.LittleEndian.Uint32(foot)) != len(sizes):
		return integrity(RuleSeekTable, 0, "", "the seek table counts %d frames, the archive holds %d", binary.LittleEndian.Uint32(foot), len(sizes))
	case foot[4] != 0:
		return integrity(RuleSeekTable, 0, "", "seek table descriptor %#x (%s writes 0: no checksums)", foot[4], V2)
	case binary.LittleEndian.Uint32(foot[5:]) != seekableFootMagic:
		return integrity(RuleSeekTable, 0, "", "the seek table's footer lacks the seekable magic")
	}
	for k, s := range sizes {
		c, d := binary.LittleEndian.Uint32(b[8*k:]), binary.LittleEndian.Uint32(b[8*k+4:])
		if c != s[0] || d != s[1] {
			return integrity(RuleSeekTable, 0, "", "the seek table gives frame %d %d bytes decompressing to %d; it has %d decompressing to %d", k, c, d, s[0], s[1])
		}
	}
	if rest, _ := z.src.Peek(1); len(rest) > 0 {
		return integrity(RuleSeekTable, 0, "", "bytes after the seek table (offset %d): it must be last", off+8+int64(want))
	}
	return io.EOF
}

func (z *zstReader) eof(err error, where string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return integrity(RuleTruncated, 0, "", "the archive ends %s", where)
	}
	return err
}

func (f *zstFrame) decode() {
	defer close(f.done)
	buf, _ := zstOutBufs.Get().(*[]byte)
	if buf != nil && cap(*buf) >= f.rawLen {
		f.out = (*buf)[:0]
	} else {
		f.out = make([]byte, 0, f.rawLen)
	}
	out, err := decoder().DecodeAll(f.comp, f.out)
	switch {
	case err != nil:
		f.err = zstErr(f.index, f.offset, "%v", err)
	case len(out) != f.rawLen:
		f.err = zstErr(f.index, f.offset, "decompresses to %d bytes, its header says %d", len(out), f.rawLen)
	}
	f.out = out
}

// Read returns the decoded frames in order: io.EOF once the seek table
// was read and checked, or the first error (sticky).
func (z *zstReader) Read(p []byte) (int, error) {
	for z.cur == nil || z.off == len(z.cur.out) {
		if z.err != nil {
			return 0, z.err
		}
		if z.cur != nil {
			z.recycle(z.cur)
			z.cur = nil
		}
		f, ok := <-z.ready
		if !ok {
			z.err = io.ErrUnexpectedEOF // stopped by Close
			return 0, z.err
		}
		<-f.done
		if f.err != nil {
			z.err = f.err
			z.recycle(f)
			return 0, f.err
		}
		z.cur, z.off = f, 0
		z.starts = append(z.starts, z.delivered)
		z.lens = append(z.lens, int64(len(f.out)))
	}
	n := copy(p, z.cur.out[z.off:])
	z.off += n
	z.delivered += int64(n)
	return n, nil
}

// frameOf returns the frame holding tar offset pos (one Read returned)
// and that frame's start.
func (z *zstReader) frameOf(pos int64) (int, int64) {
	k := sort.Search(len(z.starts), func(k int) bool { return z.starts[k] > pos }) - 1
	return k, z.starts[k]
}

func (z *zstReader) recycle(f *zstFrame) {
	if f.comp != nil {
		c := f.comp
		zstCompBufs.Put(&c)
	}
	if f.out != nil {
		o := f.out
		zstOutBufs.Put(&o)
	}
	f.comp, f.out = nil, nil
}

// Close stops the reading goroutine and waits for it and every decoding
// in flight.
func (z *zstReader) Close() {
	z.once.Do(func() { close(z.stop) })
	for f := range z.ready {
		<-f.done
		z.recycle(f)
	}
	<-z.exited
	if z.cur != nil {
		z.recycle(z.cur)
		z.cur = nil
	}
}
