package archive

import (
	"encoding/hex"
	"sort"
)

// The extractor's checks of V2: every file against its index entry, and
// every frame boundary against the layout rule (planV2).

// pos is the tar offset of the next byte the parser reads.
func (x *extractor) pos() int64 { return x.zr.delivered - int64(x.tr.Buffered()) }

// checkSpan refuses a frame that starts strictly inside the entry that
// spans [start, end) of the tar stream (index idx), but for a file entry
// larger than a frame (large), whose frames start every FrameSize bytes
// from start. Every frame up to end was delivered: the parser read there.
func (x *extractor) checkSpan(start, end int64, large bool, idx int) error {
	st := x.zr.starts
	for k := sort.Search(len(st), func(k int) bool { return st[k] > start }); k < len(st) && st[k] < end; k++ {
		if !large || (st[k]-start)%FrameSize != 0 {
			return integrity(RuleFrameCut, idx, "", "frame %d starts at tar offset %d, inside the entry at %d-%d: frames start at entry boundaries (inside a file larger than a frame, every %d bytes from its entry's start)", k, st[k], start, end, FrameSize)
		}
	}
	return nil
}

// checkIndex holds a regular file's header to the next entry of the
// index: path, frame, offset (the parser is at the file's first byte) and
// size, before anything of it is read; the SHA-256 it returns is checked
// by the writer: a file up to SmallFile before it is written, a larger
// (streamed) one once it is, which fails the extraction.
func (x *extractor) checkIndex(h *header, name string, idx int) (*[32]byte, error) {
	k := x.nfiles
	ix := x.decl.Index
	if k >= len(ix) {
		return nil, integrity(RuleIndex, idx, h.name, "a file beyond the %d the index lists", len(ix))
	}
	e := ix[k]
	at := x.pos()
	frame, fs := x.zr.frameOf(at - 1) // the frame of its header
	switch {
	case e.Path != name:
		return nil, integrity(RuleIndex, idx, h.name, "index entry %d names %q", k+1, e.Path)
	case e.Size != h.size:
		return nil, integrity(RuleIndex, idx, h.name, "the index gives %d bytes, the header %d", e.Size, h.size)
	case e.Frame != frame || e.Offset != at-fs:
		return nil, integrity(RuleIndex, idx, h.name, "the index puts the file at frame %d offset %d, it is at frame %d offset %d", e.Frame, e.Offset, frame, at-fs)
	}
	x.spanLarge = at-x.spanStart+padded(h.size) > FrameSize
	var sum [32]byte
	hex.Decode(sum[:], []byte(e.SHA256)) // checked when parsed
	return &sum, nil
}

func (x *extractor) sumMismatch(name string, got []byte, want *[32]byte) error {
	return integrity(RuleIndex, 0, name, "its bytes hash to %x, the index says %x", got, want[:])
}
