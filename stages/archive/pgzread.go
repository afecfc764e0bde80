package archive

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"runtime"
	"sync"
)

// Parallel gunzip of the block-member format (see pgzip.go).
//
// One goroutine reads the archive in order (so the caller's hash of the
// compressed bytes sees every byte once, off the tar parser's goroutine),
// finds each member by the length in its header, and starts inflating it
// on a goroutine of its own; the reader hands the inflated blocks to the
// tar parser in order. At most 2 x GOMAXPROCS members (and never more than
// 16) are in flight, so memory stays bounded (about 2 MiB per member)
// whatever the archive and the machine.
// Every member is checked: header fields, declared lengths within bounds,
// a deflate stream that ends exactly at the trailer, its CRC-32 and ISIZE.

// isPGZ reports whether b starts with the header of a block member.
func isPGZ(b []byte) bool {
	return len(b) >= pgzHeaderLen &&
		b[0] == 0x1f && b[1] == 0x8b && b[2] == 8 && b[3] == 4 && // FLG: FEXTRA only
		b[10] == 12 && b[11] == 0 && b[12] == 'P' && b[13] == 'Z' && b[14] == 8 && b[15] == 0
}

type pgzMember struct {
	index  int
	offset int64
	comp   []byte // the whole member
	rawLen int
	out    []byte
	err    error
	done   chan struct{}
}

type pgzReader struct {
	src    *bufio.Reader
	ready  chan *pgzMember
	stop   chan struct{}
	exited chan struct{}
	once   sync.Once

	cur *pgzMember
	off int
	err error
}

var (
	pgzCompBufs sync.Pool // *[]byte, cap pgzMaxMember
	pgzOutBufs  sync.Pool // *[]byte, cap pgzBlockSize

	// pgzReadDepth is how many members may be in flight: at most 16, about
	// 34 MiB, whatever the machine.
	pgzReadDepth = func() int { return min(2*runtime.GOMAXPROCS(0), 16) }
)

const errNotAMember = "bytes at offset %d are not a gzip member of the block format (data after the last member, or a damaged member header)"

func getBuf(p *sync.Pool, n, capacity int) []byte {
	if b, ok := p.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n, capacity)
}

func putBuf(p *sync.Pool, b []byte) {
	if b != nil {
		p.Put(&b)
	}
}

// newPGZReader starts reading members from src, which must start with one.
func newPGZReader(src *bufio.Reader) *pgzReader {
	z := &pgzReader{
		src:    src,
		ready:  make(chan *pgzMember, pgzReadDepth()),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	go z.produce()
	return z
}

func (z *pgzReader) produce() {
	defer close(z.exited)
	defer close(z.ready)
	var off int64
	for i := 1; ; i++ {
		select {
		case <-z.stop:
			return // Close: read no further
		default:
		}
		m := &pgzMember{index: i, offset: off, done: make(chan struct{})}
		hdr, err := z.src.Peek(pgzHeaderLen)
		switch {
		case len(hdr) == 0 && err == io.EOF && i > 1:
			return // the end, at a member boundary
		case len(hdr) < pgzHeaderLen && (err == io.EOF || err == io.ErrUnexpectedEOF):
			if bytes.HasPrefix([]byte{0x1f, 0x8b, 8, 4}, hdr[:min(len(hdr), 4)]) {
				m.err = integrity(RuleTruncated, 0, "", "the archive ends inside the header of gzip member %d (offset %d)", i, off)
			} else {
				m.err = integrity(RuleTrailingData, 0, "", errNotAMember, off)
			}
		case len(hdr) < pgzHeaderLen:
			m.err = err // the source failed; the extractor reports its error
		case !isPGZ(hdr):
			m.err = integrity(RuleTrailingData, 0, "", errNotAMember, off)
		}
		if m.err == nil {
			mlen := int(binary.LittleEndian.Uint32(hdr[16:20]))
			m.rawLen = int(binary.LittleEndian.Uint32(hdr[20:24]))
			if mlen < pgzHeaderLen+2+pgzTrailer || mlen > pgzMaxMember || m.rawLen > pgzBlockSize {
				m.err = integrity(RuleGzip, 0, "", "gzip member %d (offset %d) declares %d bytes holding %d: out of bounds", i, off, mlen, m.rawLen)
			} else {
				m.comp = getBuf(&pgzCompBufs, mlen, pgzMaxMember)
				if n, err := io.ReadFull(z.src, m.comp); err != nil {
					if err == io.EOF || err == io.ErrUnexpectedEOF {
						err = integrity(RuleTruncated, 0, "", "the archive ends inside gzip member %d (offset %d, %d of %d bytes)", i, off, n, mlen)
					}
					m.err = err
				}
				off += int64(mlen)
			}
		}
		failed := m.err != nil
		if failed {
			close(m.done)
		} else {
			go m.inflate() // m.err is the inflater's from here on
		}
		select {
		case z.ready <- m:
		case <-z.stop:
			return
		}
		if failed {
			return
		}
	}
}

// inflate decompresses one member and checks it completely: the deflate
// data must fill exactly the length its header declares and end exactly at
// the trailer (inflateExact), whose CRC-32 and ISIZE must match.
func (m *pgzMember) inflate() {
	defer close(m.done)
	m.out = getBuf(&pgzOutBufs, m.rawLen, pgzBlockSize)
	if err := inflateExact(m.out, m.comp[pgzHeaderLen:len(m.comp)-pgzTrailer]); err != nil {
		m.err = m.corrupt("%v", err)
	} else if tr := m.comp[len(m.comp)-pgzTrailer:]; binary.LittleEndian.Uint32(tr[0:4]) != crc32.ChecksumIEEE(m.out) {
		m.err = m.corrupt("CRC-32 mismatch")
	} else if int(binary.LittleEndian.Uint32(tr[4:8])) != m.rawLen {
		m.err = m.corrupt("ISIZE %d, header says %d", binary.LittleEndian.Uint32(tr[4:8]), m.rawLen)
	}
}

func (m *pgzMember) corrupt(format string, args ...any) error {
	return integrity(RuleGzip, 0, "", "gzip member %d (offset %d): %s", m.index, m.offset, fmt.Sprintf(format, args...))
}

// Read returns the inflated stream in order: io.EOF after the last member,
// or the first error of a member (sticky).
func (z *pgzReader) Read(p []byte) (int, error) {
	for z.cur == nil || z.off == len(z.cur.out) {
		if z.err != nil {
			return 0, z.err
		}
		if z.cur != nil {
			z.recycle(z.cur)
			z.cur = nil
		}
		m, ok := <-z.ready
		if !ok {
			z.err = io.EOF
			return 0, io.EOF
		}
		<-m.done
		if m.err != nil {
			z.err = m.err
			z.recycle(m)
			return 0, m.err
		}
		z.cur, z.off = m, 0
	}
	n := copy(p, z.cur.out[z.off:])
	z.off += n
	return n, nil
}

func (z *pgzReader) recycle(m *pgzMember) {
	putBuf(&pgzCompBufs, m.comp)
	putBuf(&pgzOutBufs, m.out)
	m.comp, m.out = nil, nil
}

// Close stops the reading goroutine and waits for it and for every
// inflation in flight, so the source is no longer read once it returns.
func (z *pgzReader) Close() {
	z.once.Do(func() { close(z.stop) })
	for m := range z.ready {
		<-m.done
		z.recycle(m)
	}
	<-z.exited
	if z.cur != nil {
		z.recycle(z.cur)
		z.cur = nil
	}
}
