package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// The V2 format: the V1 tar stream in independent zstd frames (see the
// package documentation for the bytes).
const (
	// FrameSize is how many bytes of the tar stream a frame holds at most,
	// but for the first (the declaration): frames end at entry boundaries,
	// and a file whose entry is larger gets frames of its own, cut every
	// FrameSize bytes from the start of its entry.
	FrameSize = 4 << 20

	// maxFrameRaw bounds what a frame after the first may decompress to,
	// and the window of any frame.
	maxFrameRaw = 8<<20 + FrameSize
	// maxFrame0Raw bounds the first frame: the declaration's header
	// block, its content and padding.
	maxFrame0Raw = maxDeclarationV2 + 1024

	seekTableMagic    = 0x184D2A5E // the skippable frame of the seekable format
	seekableFootMagic = 0x8F92EAB1
)

// ZstdLevel is the zstd level of every V2 frame: SpeedBetterCompression.
// Measured on the 2-core machine (shared, load 3.5; BenchmarkZstdLevel,
// -benchtime 2x, 2026-12-05), SpeedDefault against it: the unbundled-like
// tree (5,000 modules, 22 MB) 8.68 MB in 0.45 s against 8.45 MB in
// 0.33 s; the bundled-like payload (100 files, 20 MB) 8.32 MB in 0.09 s
// against 8.18 MB in 0.13 s; the real Node.js 22 distribution (120 MB,
// mostly its binary) 42.6 MB in 0.72 s against 40.7 MB in 0.71 s.
// Decoding on two cores stays 22-87 ms either way. Better is 2-5%
// smaller for about the same time, since reading and hashing the files
// is the serial part. Independent frames cost 0.4-0.6% (3.7% on the
// Node.js binary) against one frame of the whole tar at the same level.
// No real Pi payload was at hand; PISHIP_ARCHIVE_BENCH_TREE repeats this
// on one.
const ZstdLevel = zstd.SpeedBetterCompression

// zstdLevel is ZstdLevel, but for BenchmarkZstdLevel.
var zstdLevel = ZstdLevel

var encoders sync.Map // zstd.EncoderLevel -> *zstd.Encoder

// encoder is the one encoder of every V2 frame at zstdLevel: EncodeAll
// is safe for concurrent use and its output depends only on the input
// and the level.
func encoder() *zstd.Encoder {
	if e, ok := encoders.Load(zstdLevel); ok {
		return e.(*zstd.Encoder)
	}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevel), zstd.WithEncoderCRC(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		panic(err) // only options, all valid
	}
	got, _ := encoders.LoadOrStore(zstdLevel, e)
	return got.(*zstd.Encoder)
}

// layout is where Write puts every entry of a V2 archive: the tar offsets
// at which frames end, and every file's index entry. One rule, planV2,
// makes it; the extractor checks the same rule (checkSpan).
type layout struct {
	cuts  []int64 // tar offsets where frames 0, 1, ... end; the last is the tar's length
	index []IndexEntry
}

// tarHeaderLen is how many bytes archive/tar writes for h (the header
// block, and a PAX header with its content when it needs one).
func tarHeaderLen(h *tar.Header) (int64, error) {
	var c countWriter
	if err := tar.NewWriter(&c).WriteHeader(h); err != nil {
		return 0, err
	}
	return c.n, nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func padded(n int64) int64 { return n + (-n & 511) }

// planV2 lays the entries out in frames after a first frame of decl
// bytes (the declaration alone): a frame takes whole entries while they
// fit in FrameSize; an entry larger than FrameSize starts a frame and is
// cut every FrameSize bytes, and the next entry starts a new frame; the
// end marker (two zero blocks) goes where an entry of 1024 bytes would.
func planV2(decl int64, entries []entry, hdrLens []int64, sums [][32]byte) layout {
	l := layout{cuts: []int64{decl}}
	start, cur := decl, decl              // the current frame's start, the next entry's
	place := func(n int64) (int, int64) { // n bytes of entry at cur: its frame and the frame's start
		if cur > start && cur+n-start > FrameSize {
			l.cuts = append(l.cuts, cur)
			start = cur
		}
		frame, fs := len(l.cuts), start
		cur += n
		if n > FrameSize {
			for k := fs + FrameSize; k < cur; k += FrameSize {
				l.cuts = append(l.cuts, k)
			}
			l.cuts = append(l.cuts, cur)
			start = cur
		}
		return frame, fs
	}
	for i, e := range entries {
		hdr := hdrLens[i]
		if e.dir {
			place(hdr)
			continue
		}
		at := cur
		frame, fs := place(hdr + padded(e.size))
		l.index = append(l.index, IndexEntry{Path: e.name, Frame: frame, Offset: at + hdr - fs, Size: e.size, SHA256: hex.EncodeToString(sums[i][:])})
	}
	place(1024)
	if cur > start {
		l.cuts = append(l.cuts, cur)
	}
	return l
}

// hashFiles hashes every file of entries on all cores (the index, which
// comes first, needs every digest before the first frame is written).
func hashFiles(ctx context.Context, entries []entry) ([][32]byte, error) {
	sums := make([][32]byte, len(entries))
	work := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 256<<10)
			h := sha256.New()
			for i := range work {
				h.Reset()
				if err := copyFile(h, entries[i], buf); err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				h.Sum(sums[i][:0])
			}
		}()
	}
feed:
	for i, e := range entries {
		if e.dir {
			continue
		}
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		case err := <-errs:
			errs <- err
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case err := <-errs:
		return nil, err
	default:
	}
	return sums, nil
}

// writeV2 writes the V2 archive of entries (see Write).
func writeV2(ctx context.Context, w io.Writer, entries []entry, decl Declared, opts Options) (Result, error) {
	sums, err := hashFiles(ctx, entries)
	if err != nil {
		return Result{}, err
	}
	hdrLens := make([]int64, len(entries))
	for i, e := range entries {
		if hdrLens[i], err = tarHeaderLen(tarHeader(e.name, e.dir, e.exec, e.size, opts.MTime)); err != nil {
			return Result{}, fmt.Errorf("archive: %s: %w", e.abs, err)
		}
	}
	// The index's offsets count from each frame's start, and the first
	// frame holds only the declaration: lay out with a declaration of 0
	// bytes, then move every cut by its real length.
	l := planV2(0, entries, hdrLens, sums)
	decl.Index = l.index
	dh, err := declarationV2(decl)
	if err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	dlen := int64(len(dh))
	if dlen > maxFrame0Raw {
		return Result{}, &Error{Code: CodeInvalid, Rule: RuleDeclared, Detail: fmt.Sprintf("the declaration of %d files takes %d bytes, over the %d an install reads: archive fewer files", decl.Files, dlen, maxFrame0Raw)}
	}
	cuts := []int64{dlen}
	for _, c := range l.cuts[1:] {
		cuts = append(cuts, c+dlen)
	}

	hw := &hashWriter{w: bufio.NewWriterSize(w, 256<<10), h: sha256.New()}
	zw := newZstWriter(hw, cuts)
	tw := tar.NewWriter(zw)
	buf := make([]byte, 256<<10)
	var res Result
	if _, err := zw.Write(dh); err != nil {
		zw.abort()
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	h := sha256.New()
	for i, e := range entries {
		if err := ctx.Err(); err != nil {
			zw.abort()
			return Result{}, err
		}
		if err := tw.WriteHeader(tarHeader(e.name, e.dir, e.exec, e.size, opts.MTime)); err != nil {
			zw.abort()
			return Result{}, fmt.Errorf("archive: %s: %w", e.abs, err)
		}
		if e.dir {
			res.Dirs++
			continue
		}
		res.Files++
		h.Reset()
		if err := copyFile(io.MultiWriter(tw, h), e, buf); err != nil {
			zw.abort()
			return Result{}, err
		}
		if [32]byte(h.Sum(nil)) != sums[i] {
			zw.abort()
			return Result{}, fmt.Errorf("archive: %s changed while it was archived", e.abs)
		}
	}
	if err := tw.Close(); err != nil {
		zw.abort()
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	if err := zw.Close(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	if err := hw.w.(*bufio.Writer).Flush(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	res.SHA256 = hex.EncodeToString(hw.h.Sum(nil))
	res.Size = hw.n
	return res, nil
}

// declarationV2 is the V2 declaration as the tar's first entry: a PAX
// global header (typeflag 'g', named GlobalHead.0.0 as archive/tar names
// one, mode, ids, mtime 0) whose content is the one record comment=<the
// declaration's JSON>, padded to a block. It is written by hand:
// archive/tar refuses a PAX header over 1 MiB, and a file index of
// 10,000 files is larger.
func declarationV2(d Declared) ([]byte, error) {
	data := paxRecord("comment", d.commentV2())
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "GlobalHead.0.0", Size: int64(len(data)), ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}); err != nil {
		return nil, err
	}
	blk := hdr.Bytes()[:512]
	blk[156] = tar.TypeXGlobalHeader
	// The checksum over the block with its own field as spaces.
	copy(blk[148:156], "        ")
	sum := 0
	for _, c := range blk {
		sum += int(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
	out := make([]byte, 0, padded(int64(512+len(data))))
	out = append(append(out, blk...), data...)
	return append(out, make([]byte, int(padded(int64(len(out))))-len(out))...), nil
}

// paxRecord is one PAX record, "<len> <key>=<value>\n", its length
// counting its own digits.
func paxRecord(k, v string) string {
	size := len(k) + len(v) + 3
	size += len(strconv.Itoa(size))
	rec := strconv.Itoa(size) + " " + k + "=" + v + "\n"
	if len(rec) != size { // the length's digits made it one longer
		rec = strconv.Itoa(len(rec)) + " " + k + "=" + v + "\n"
	}
	return rec
}

type zstFrameOut struct {
	raw  []byte
	out  []byte
	done chan struct{}
}

// zstWriter cuts the tar stream at the planned offsets, encodes every
// frame on its own goroutine (at most maxQ at once) and writes them in
// order, then the seek table.
type zstWriter struct {
	w     io.Writer
	cuts  []int64
	next  int // index of the next cut
	off   int64
	buf   []byte
	queue []*zstFrameOut
	maxQ  int
	sizes [][2]uint32 // compressed, decompressed, per frame written
	free  [][]byte    // raw and encoded buffers of written frames
	err   error
}

// newBuf returns an empty buffer of at least n bytes' capacity.
func (z *zstWriter) newBuf(n int) []byte {
	for i, b := range z.free {
		if cap(b) >= n {
			z.free = append(z.free[:i], z.free[i+1:]...)
			return b[:0]
		}
	}
	return make([]byte, 0, n)
}

func newZstWriter(w io.Writer, cuts []int64) *zstWriter {
	return &zstWriter{w: w, cuts: cuts, maxQ: min(2*runtime.GOMAXPROCS(0), 8)}
}

func (z *zstWriter) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := len(p)
	for len(p) > 0 {
		if z.next == len(z.cuts) {
			z.err = fmt.Errorf("the tar stream runs past its layout's end at %d", z.off)
			return 0, z.err
		}
		if z.buf == nil {
			// The frame's length is known: one buffer, no growing.
			z.buf = z.newBuf(int(z.cuts[z.next] - z.off))
		}
		m := min(int64(len(p)), z.cuts[z.next]-z.off)
		z.buf = append(z.buf, p[:m]...)
		p = p[m:]
		z.off += m
		if z.off == z.cuts[z.next] {
			z.next++
			if err := z.submit(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (z *zstWriter) submit() error {
	f := &zstFrameOut{raw: z.buf, out: z.newBuf(len(z.buf)/2 + 1024), done: make(chan struct{})}
	z.buf = nil
	z.queue = append(z.queue, f)
	go func() {
		defer close(f.done)
		f.out = encoder().EncodeAll(f.raw, f.out)
	}()
	if len(z.queue) >= z.maxQ {
		return z.flushOldest()
	}
	return nil
}

func (z *zstWriter) flushOldest() error {
	f := z.queue[0]
	z.queue = z.queue[1:]
	<-f.done
	z.sizes = append(z.sizes, [2]uint32{uint32(len(f.out)), uint32(len(f.raw))})
	if _, err := z.w.Write(f.out); err != nil {
		z.err = err
		return err
	}
	if len(z.free) < 2*z.maxQ+2 {
		z.free = append(z.free, f.raw, f.out)
	}
	return nil
}

// abort waits for the frames in flight.
func (z *zstWriter) abort() {
	for _, f := range z.queue {
		<-f.done
	}
	z.queue = nil
	z.err = io.ErrClosedPipe
}

// Close writes the frames left and the seek table.
func (z *zstWriter) Close() error {
	if z.err != nil {
		z.abort()
		return z.err
	}
	if z.next != len(z.cuts) || len(z.buf) > 0 {
		z.abort()
		return fmt.Errorf("the tar stream ends at %d, its layout at %d", z.off, z.cuts[len(z.cuts)-1])
	}
	for len(z.queue) > 0 {
		if err := z.flushOldest(); err != nil {
			z.abort()
			return err
		}
	}
	z.err = io.ErrClosedPipe
	_, err := z.w.Write(seekTable(z.sizes))
	return err
}

// seekTable is the skippable frame of the zstd seekable format: magic
// 0x184D2A5E, the size of what follows, one {compressed, decompressed}
// pair of little-endian uint32 per frame, then the footer: the number of
// frames, a descriptor byte 0 (no checksums), the magic 0x8F92EAB1.
func seekTable(sizes [][2]uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, seekTableMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(8*len(sizes)+9))
	for _, s := range sizes {
		b = binary.LittleEndian.AppendUint32(b, s[0])
		b = binary.LittleEndian.AppendUint32(b, s[1])
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(sizes)))
	b = append(b, 0)
	return binary.LittleEndian.AppendUint32(b, seekableFootMagic)
}
