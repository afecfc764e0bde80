package delta

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
)

// Schema is the format's name, in the magic and in the header.
const Schema = "piship-delta/v1"

// Magic opens every delta: the schema and a newline, 16 bytes.
const Magic = Schema + "\n"

// Bounds of what Apply (and ReadHeader) accept.
const (
	// MaxHeaderBytes bounds the header's zstd frame.
	MaxHeaderBytes = 16 << 20
	// MaxHeaderJSON bounds the header's JSON once decoded.
	MaxHeaderJSON = 64 << 20
	// MaxOps bounds the ops, and the directories added or removed,
	// each (archive.DefaultMaxEntries).
	MaxOps = archive.DefaultMaxEntries
	// MaxFileBytes bounds one file of the result (and the result's
	// total: archive.DefaultMaxBytes).
	MaxFileBytes = archive.DefaultMaxBytes
	// MaxPatchBytes bounds one op's data.
	MaxPatchBytes = 1 << 30
	// MaxDictBytes caps a dictionary made of a directory's files of one
	// extension (a new or renamed file's).
	MaxDictBytes = 8 << 20
	// MaxWindow is the largest zstd window a patch uses (and Apply
	// accepts): 128 MiB, what `zstd -d` decodes without --memory. A
	// file whose dictionary and content together are larger is encoded
	// without a dictionary.
	MaxWindow = 1 << 27
	// MaxMetaBytes bounds each Meta field.
	MaxMetaBytes = 256
)

// The op kinds.
const (
	OpCopy   = "copy"   // the file's bytes are the installed file From's
	OpPatch  = "patch"  // zstd data decoded with the installed files Base as raw dictionary
	OpNew    = "new"    // zstd data decoded without a dictionary
	OpDelete = "delete" // the installed file Path is not in the result
)

// Meta says which release a delta goes from and to.
type Meta struct {
	FromVersion string `json:"fromVersion"`
	ToVersion   string `json:"toVersion"`
	Target      string `json:"target"`
}

// Source is one installed file a patch's dictionary is made of.
type Source struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Op is one entry of a delta's op list (see the package documentation).
type Op struct {
	Op     string   `json:"op"`
	Path   string   `json:"path"`
	From   *Source  `json:"from,omitempty"` // copy
	Base   []Source `json:"base,omitempty"` // patch: the dictionary, in order
	Data   int64    `json:"data,omitempty"` // patch, new: bytes of zstd data
	Size   int64    `json:"size,omitempty"`
	Exec   bool     `json:"exec,omitempty"`
	SHA256 string   `json:"sha256,omitempty"`
}

// Header is a delta's header: what it goes from and to, and its ops.
type Header struct {
	Schema   string `json:"schema"`
	Meta     `json:"meta"`
	FromTree string `json:"fromTree"` // Tree.Digest of the base
	ToTree   string `json:"toTree"`   // Tree.Digest of the result
	Files    int    `json:"files"`    // files of the result
	Dirs     int    `json:"dirs"`     // directories of the result
	Bytes    int64  `json:"bytes"`    // bytes of the result's files
	Kept     int    `json:"kept"`     // files kept implicitly (same path, bytes and exec bit)
	Copied   int    `json:"copied"`
	Patched  int    `json:"patched"`
	Added    int    `json:"added"`
	Deleted  int    `json:"deleted"`
	// DataBytes is the sum of the ops' Data: the bytes after the header.
	DataBytes int64 `json:"dataBytes"`
	// Mkdirs are the result's directories the base lacks, Rmdirs the
	// base's directories the result lacks, each sorted.
	Mkdirs []string `json:"mkdirs"`
	Rmdirs []string `json:"rmdirs"`
	// Ops are sorted by Path; the data of the patch and new ops follows
	// the header in this order.
	Ops []Op `json:"ops"`

	// read is the sha256 of the bytes ReadHeader decoded this header
	// from (magic, length, frame), so Apply can take it again without
	// decoding (ApplyOptions.Header).
	read [32]byte
}

// encodeHeader writes the magic, the header's length and its zstd frame.
func encodeHeader(w io.Writer, h *Header) (int64, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return 0, err
	}
	if len(js) > MaxHeaderJSON {
		return 0, refuse(ReasonBounds, "", "the header is %d bytes of JSON, over %d", len(js), MaxHeaderJSON)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
	if err != nil {
		return 0, err
	}
	frame := enc.EncodeAll(js, nil)
	enc.Close()
	if len(frame) > MaxHeaderBytes {
		return 0, refuse(ReasonBounds, "", "the header's zstd frame is %d bytes, over %d", len(frame), MaxHeaderBytes)
	}
	var b bytes.Buffer
	b.WriteString(Magic)
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
	b.Write(frame)
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// ReadHeader reads a delta's magic and header from r, bounded
// (MaxHeaderBytes, MaxHeaderJSON, MaxOps), checks it (schema, digests,
// paths, counts, duplicates) and leaves r at the first byte of the data.
// A malformed header is an *Error (INTEGRITY_FAILED).
func ReadHeader(r io.Reader) (*Header, error) {
	return readHeader(r, nil)
}

// readHeader is ReadHeader; when known is a header ReadHeader returned
// from the same bytes, it is returned as it is, without decoding again.
func readHeader(r io.Reader, known *Header) (*Header, error) {
	var pre [len(Magic) + 4]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, readErr(err, "the magic")
	}
	if string(pre[:len(Magic)]) != Magic {
		return nil, refuse(ReasonFormat, "", "the stream does not start with %q: not a piship delta", Magic)
	}
	n := binary.BigEndian.Uint32(pre[len(Magic):])
	if n > MaxHeaderBytes {
		return nil, refuse(ReasonBounds, "", "the header's zstd frame declares %d bytes, over %d", n, MaxHeaderBytes)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, readErr(err, "the header")
	}
	sum := sha256.New()
	sum.Write(pre[:])
	sum.Write(frame)
	var read [32]byte
	sum.Sum(read[:0])
	if known != nil && known.read == read {
		return known, nil
	}
	js, err := decodeBounded(frame, nil, MaxHeaderJSON)
	if err != nil {
		return nil, refuse(ReasonFormat, "", "the header's zstd frame: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	var h Header
	if err := dec.Decode(&h); err != nil {
		return nil, refuse(ReasonFormat, "", "the header's JSON: %v", err)
	}
	if dec.More() {
		return nil, refuse(ReasonFormat, "", "the header's JSON has more than one value")
	}
	if err := h.check(); err != nil {
		return nil, err
	}
	h.read = read
	return &h, nil
}

// check holds a decoded header to the format's rules that need no base.
func (h *Header) check() error {
	if h.Schema != Schema {
		return refuse(ReasonFormat, "", "schema %q, want %q", h.Schema, Schema)
	}
	for _, d := range []string{h.FromTree, h.ToTree} {
		if !canon.IsSHA256Hex(d) {
			return refuse(ReasonFormat, "", "tree digest %q is not 64 lowercase hex digits", d)
		}
	}
	if err := checkMeta(h.Meta); err != nil {
		return err
	}
	if len(h.Ops) > MaxOps || len(h.Mkdirs) > MaxOps || len(h.Rmdirs) > MaxOps {
		return refuse(ReasonBounds, "", "%d ops, %d directories added and %d removed: over %d each", len(h.Ops), len(h.Mkdirs), len(h.Rmdirs), MaxOps)
	}
	if h.Files < 0 || h.Dirs < 0 || h.Files > MaxOps || h.Dirs > MaxOps || h.Bytes < 0 || h.Bytes > archive.DefaultMaxBytes {
		return refuse(ReasonBounds, "", "a result of %d files, %d directories and %d bytes is out of bounds", h.Files, h.Dirs, h.Bytes)
	}
	var counts [4]int
	var data int64
	seen := make(map[string]bool, len(h.Ops))
	prev := ""
	for i, op := range h.Ops {
		if err := checkRelPath(op.Path); err != nil {
			return err
		}
		if seen[op.Path] {
			return refuse(ReasonDuplicate, op.Path, "two ops on one path")
		}
		seen[op.Path] = true
		if i > 0 && op.Path < prev {
			return refuse(ReasonFormat, op.Path, "ops are not sorted by path (after %q)", prev)
		}
		prev = op.Path
		if err := op.check(); err != nil {
			return err
		}
		data += op.Data
		if data > archive.DefaultMaxBytes {
			return refuse(ReasonBounds, op.Path, "the ops' data add up to over %d bytes", archive.DefaultMaxBytes)
		}
		switch op.Op {
		case OpCopy:
			counts[0]++
		case OpPatch:
			counts[1]++
		case OpNew:
			counts[2]++
		case OpDelete:
			counts[3]++
		}
	}
	if data != h.DataBytes {
		return refuse(ReasonFormat, "", "dataBytes %d, but the ops' data add up to %d", h.DataBytes, data)
	}
	if counts != [4]int{h.Copied, h.Patched, h.Added, h.Deleted} {
		return refuse(ReasonFormat, "", "the counts (copied %d, patched %d, added %d, deleted %d) are not the ops' (%d, %d, %d, %d)", h.Copied, h.Patched, h.Added, h.Deleted, counts[0], counts[1], counts[2], counts[3])
	}
	if h.Kept < 0 || h.Kept+h.Copied+h.Patched+h.Added != h.Files {
		return refuse(ReasonFormat, "", "kept %d + copied + patched + added is not the result's %d files", h.Kept, h.Files)
	}
	for _, list := range [][]string{h.Mkdirs, h.Rmdirs} {
		for i, d := range list {
			if err := checkRelPath(d); err != nil {
				return err
			}
			if i > 0 && d <= list[i-1] {
				return refuse(ReasonDuplicate, d, "directory lists must be sorted without repeats")
			}
		}
	}
	return nil
}

// check holds one op to its kind's fields.
func (op *Op) check() error {
	bad := func(format string, args ...any) error { return refuse(ReasonFormat, op.Path, format, args...) }
	if op.Op == OpDelete {
		if op.From != nil || op.Base != nil || op.Data != 0 || op.Size != 0 || op.Exec || op.SHA256 != "" {
			return bad("a delete op carries only its path")
		}
		return nil
	}
	if !canon.IsSHA256Hex(op.SHA256) {
		return bad("sha256 %q is not 64 lowercase hex digits", op.SHA256)
	}
	if op.Size < 0 || op.Size > MaxFileBytes {
		return refuse(ReasonBounds, op.Path, "size %d is out of bounds (0 to %d)", op.Size, int64(MaxFileBytes))
	}
	checkSource := func(s Source) error {
		if err := checkRelPath(s.Path); err != nil {
			return err
		}
		if !canon.IsSHA256Hex(s.SHA256) {
			return bad("source %q: sha256 %q is not 64 lowercase hex digits", s.Path, s.SHA256)
		}
		return nil
	}
	switch op.Op {
	case OpCopy:
		if op.From == nil || op.Base != nil || op.Data != 0 {
			return bad("a copy op has a from and no base or data")
		}
		if op.From.SHA256 != op.SHA256 {
			return bad("a copy's from sha256 is not its sha256")
		}
		return checkSource(*op.From)
	case OpPatch, OpNew:
		if op.From != nil || (op.Op == OpPatch) != (len(op.Base) > 0) {
			return bad("a patch op has a base, a new op none, neither a from")
		}
		if op.Data <= 0 || op.Data > MaxPatchBytes {
			return refuse(ReasonBounds, op.Path, "data of %d bytes is out of bounds (1 to %d)", op.Data, MaxPatchBytes)
		}
		if len(op.Base) > MaxOps {
			return refuse(ReasonBounds, op.Path, "a base of %d files", len(op.Base))
		}
		for _, s := range op.Base {
			if err := checkSource(s); err != nil {
				return err
			}
		}
		return nil
	}
	return bad("unknown op %q", op.Op)
}

// checkRelPath applies archive's path rules to one path.
func checkRelPath(p string) error {
	if err := archive.NewNames().Check(p); err != nil {
		ae, _ := archive.IsIntegrity(err)
		return &Error{Reason: ReasonPath, Path: p, Rule: ae.Rule, Detail: ae.Detail}
	}
	return nil
}

func checkMeta(m Meta) error {
	for _, v := range []string{m.FromVersion, m.ToVersion, m.Target} {
		if len(v) > MaxMetaBytes {
			return refuse(ReasonMeta, "", "a meta field of %d bytes, over %d", len(v), MaxMetaBytes)
		}
		for _, c := range []byte(v) {
			if c < 0x20 || c == 0x7f {
				return refuse(ReasonMeta, "", "a meta field holds a control character: %q", v)
			}
		}
	}
	return nil
}

func readErr(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return refuse(ReasonTruncated, "", "the stream ends inside %s", what)
	}
	return unavailable("cannot read the delta: %w", err)
}

// errTooLarge is what decodeBounded says of output over its bound.
var errTooLarge = errors.New("decodes to more bytes than allowed")

// decodeBounded decodes one or more zstd frames from src with the raw
// dictionary dict (nil: none) and returns at most limit bytes: more is
// errTooLarge, whatever the frames declare.
func decodeBounded(src, dict []byte, limit int64) ([]byte, error) {
	var out bytes.Buffer
	// Sized once from the frame's declared content size (the encoder
	// writes it), instead of doubling from 512 bytes: the header of
	// Pi's unbundled delta is megabytes of JSON.
	var fh zstd.Header
	if fh.Decode(src) == nil && fh.HasFCS && fh.FrameContentSize <= uint64(limit) {
		out.Grow(int(fh.FrameContentSize) + bytes.MinRead)
	}
	if _, err := decodeTo(&out, bytes.NewReader(src), dict, limit, MaxWindow); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// decodeTo streams the zstd frames of r, decoded against dict, into w and
// returns the decoded length; output beyond limit is errTooLarge, a
// frame whose window is over window an error (so a frame cannot make the
// decoder allocate more than its file needs).
func decodeTo(w io.Writer, r io.Reader, dict []byte, limit int64, window int) (int64, error) {
	opts := []zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(window)), zstd.WithDecoderLowmem(true)}
	if dict != nil {
		opts = append(opts, zstd.WithDecoderDictRaw(0, dict))
	}
	dec, err := zstd.NewReader(r, opts...)
	if err != nil {
		return 0, err
	}
	defer dec.Close()
	n, err := copyBuffered(w, io.LimitReader(dec, limit+1))
	if err != nil {
		return n, err
	}
	if n > limit {
		return n, errTooLarge
	}
	return n, nil
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func copyBuffered(w io.Writer, r io.Reader) (int64, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	return io.CopyBuffer(w, r, *bp)
}

// errWriter distinguishes a failed write from a failed read in decodeTo's
// copy.
type writeErr struct{ err error }

func (e writeErr) Error() string { return e.err.Error() }
func (e writeErr) Unwrap() error { return e.err }
