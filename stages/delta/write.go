package delta

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"

	"github.com/klauspost/compress/zstd"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/tracing/phase"
)

// Result describes a delta written.
type Result struct {
	SHA256                                string // lowercase hex sha256 of the delta's bytes
	Size                                  int64  // bytes of the delta
	FromTree, ToTree                      string // the trees' digests (Tree.Digest)
	Kept, Copied, Patched, Added, Deleted int
	PatchBytes                            int64 // bytes of zstd data (the patch and new ops')
}

// Write computes the delta that turns the tree in fromDir into the tree
// in toDir and writes it to w (see the package documentation for the
// format and its rules). Both trees are scanned and the patches encoded
// on all cores; the bytes do not depend on the core count.
func Write(ctx context.Context, w io.Writer, fromDir, toDir string, meta Meta) (res Result, err error) {
	ctx, ph := phase.Start(ctx, "delta write")
	defer func() {
		ph.SetInt("piship.delta.bytes", res.Size)
		ph.SetInt("piship.delta.patched", int64(res.Patched+res.Added))
		ph.End(err)
	}()
	if err := checkMeta(meta); err != nil {
		return Result{}, err
	}
	var from, to Tree
	err = parallel.ForEach(ctx, 2, 2, func(i int) error {
		var err error
		if i == 0 {
			from, err = ScanTree(ctx, fromDir)
		} else {
			to, err = ScanTree(ctx, toDir)
		}
		return err
	})
	if err != nil {
		return Result{}, err
	}
	h := plan(from, to, meta)
	data := make([][]byte, len(h.Ops))
	// The frames to encode, by window class: a worker keeps its encoders
	// while the class stays (a best-compression encoder's tables are
	// tens of megabytes to allocate). Their bytes do not depend on which
	// worker encodes them.
	sizes := make(map[string]int64, len(from.Files))
	for _, f := range from.Files {
		sizes[f.Path] = f.Size
	}
	type frame struct{ op, class int }
	var enc []frame
	for i, op := range h.Ops {
		if op.Op == OpPatch || op.Op == OpNew {
			n := op.Size
			for _, s := range op.Base {
				n += sizes[s.Path]
			}
			enc = append(enc, frame{i, windowClass(n)})
		}
	}
	slices.SortStableFunc(enc, func(a, b frame) int { return a.class - b.class })
	err = parallel.ForEachWorker(ctx, len(enc), runtime.GOMAXPROCS(0), func() func(int) error {
		var e encoders
		return func(k int) error {
			op := &h.Ops[enc[k].op]
			b, err := encodeOp(op, fromDir, toDir, &e, enc[k].class)
			if err != nil {
				return err
			}
			data[enc[k].op], op.Data = b, int64(len(b))
			if k == len(enc)-1 {
				e.close()
			}
			return nil
		}
	})
	if err != nil {
		return Result{}, err
	}
	for _, op := range h.Ops {
		h.DataBytes += op.Data
	}
	hw := &hashWriter{w: bufio.NewWriterSize(w, 256<<10), h: sha256.New()}
	if _, err := encodeHeader(hw, h); err != nil {
		return Result{}, err
	}
	for _, b := range data {
		if _, err := hw.Write(b); err != nil {
			return Result{}, err
		}
	}
	if err := hw.w.(*bufio.Writer).Flush(); err != nil {
		return Result{}, err
	}
	return Result{
		SHA256: hex.EncodeToString(hw.h.Sum(nil)), Size: hw.n,
		FromTree: h.FromTree, ToTree: h.ToTree,
		Kept: h.Kept, Copied: h.Copied, Patched: h.Patched, Added: h.Added, Deleted: h.Deleted,
		PatchBytes: h.DataBytes,
	}, nil
}

// plan decides every op (data not yet encoded): the rules of the package
// documentation.
func plan(from, to Tree, meta Meta) *Header {
	h := &Header{Schema: Schema, Meta: meta, FromTree: from.Digest(), ToTree: to.Digest(),
		Files: len(to.Files), Dirs: len(to.Dirs), Bytes: to.Bytes(), Mkdirs: []string{}, Rmdirs: []string{}, Ops: []Op{}}
	old := make(map[string]File, len(from.Files))
	bySum := make(map[string]string, len(from.Files)) // sha256 -> first path
	byDirExt := make(map[string][]File)               // dir + "\x00" + ext -> files
	for _, f := range from.Files {
		old[f.Path] = f
		if _, ok := bySum[f.SHA256]; !ok {
			bySum[f.SHA256] = f.Path
		}
		k := dirExt(f.Path)
		byDirExt[k] = append(byDirExt[k], f)
	}
	now := make(map[string]bool, len(to.Files))
	for _, f := range to.Files {
		now[f.Path] = true
	}
	for _, f := range to.Files {
		o, had := old[f.Path]
		switch {
		case had && o.SHA256 == f.SHA256 && o.Exec == f.Exec:
			h.Kept++
			continue
		case had && o.SHA256 == f.SHA256:
			h.Ops = append(h.Ops, Op{Op: OpCopy, Path: f.Path, From: &Source{o.Path, o.SHA256}, Size: f.Size, Exec: f.Exec, SHA256: f.SHA256})
			h.Copied++
			continue
		}
		if p, ok := bySum[f.SHA256]; ok {
			h.Ops = append(h.Ops, Op{Op: OpCopy, Path: f.Path, From: &Source{p, f.SHA256}, Size: f.Size, Exec: f.Exec, SHA256: f.SHA256})
			h.Copied++
			continue
		}
		op := Op{Op: OpNew, Path: f.Path, Size: f.Size, Exec: f.Exec, SHA256: f.SHA256}
		if had {
			op.Base = []Source{{o.Path, o.SHA256}}
			if o.Size == 0 || o.Size+f.Size > MaxWindow {
				op.Base = nil
			}
		} else {
			op.Base = dirDict(byDirExt[dirExt(f.Path)], now, f.Size)
		}
		if op.Base != nil {
			op.Op = OpPatch
			h.Patched++
		} else {
			h.Added++
		}
		h.Ops = append(h.Ops, op)
	}
	for _, f := range from.Files {
		if !now[f.Path] {
			h.Ops = append(h.Ops, Op{Op: OpDelete, Path: f.Path})
			h.Deleted++
		}
	}
	slices.SortFunc(h.Ops, func(a, b Op) int {
		if a.Path < b.Path {
			return -1
		}
		return 1 // paths are unique
	})
	h.Mkdirs = minus(to.Dirs, from.Dirs)
	h.Rmdirs = minus(from.Dirs, to.Dirs)
	return h
}

// dirDict is the dictionary of a file new at its path: the base's files
// of its directory and extension, those gone from the result first (a
// renamed bundle chunk's old self is one of them), each group sorted by
// path, taken while they fit in MaxDictBytes (and the window, with the
// file of size size).
func dirDict(cands []File, now map[string]bool, size int64) []Source {
	var out []Source
	var total int64
	for _, gone := range []bool{true, false} {
		for _, c := range cands {
			if now[c.Path] == gone {
				continue
			}
			if total+c.Size > MaxDictBytes || total+c.Size+size > MaxWindow {
				continue
			}
			total += c.Size
			out = append(out, Source{c.Path, c.SHA256})
		}
	}
	if total == 0 {
		return nil // empty files make no dictionary
	}
	return out
}

// dirExt is the key of a path's directory and extension.
func dirExt(p string) string {
	return path.Dir(p) + "\x00" + path.Ext(path.Base(p))
}

// minus is a \ b, both sorted.
func minus(a, b []string) []string {
	out := []string{}
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out
}

// encodeOp reads op's new file (and its base from fromDir) and returns its
// zstd frame, encoded by e at window class.
func encodeOp(op *Op, fromDir, toDir string, e *encoders, class int) ([]byte, error) {
	src, err := readFile(filepath.Join(toDir, filepath.FromSlash(op.Path)), op.Size, op.SHA256)
	if err != nil {
		return nil, err
	}
	var dict []byte
	for _, s := range op.Base {
		b, err := atomicfs.ReadRegular(filepath.Join(fromDir, filepath.FromSlash(s.Path)), MaxWindow)
		if err != nil {
			return nil, unavailable("cannot read %s: %w", s.Path, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != s.SHA256 {
			return nil, unavailable("%s changed while the delta was written", filepath.Join(fromDir, s.Path))
		}
		dict = append(dict, b...)
	}
	z, err := e.get(class, dict)
	if err != nil {
		return nil, err
	}
	return z.EncodeAll(src, nil), nil
}

// minWindow is the smallest window class: below it a smaller window saves
// nothing (the encoder's tables are the same size) and would only make
// more classes.
const minWindow = 1 << 22

// windowClass is the window of a frame whose dictionary and content are
// n bytes together: the next power of two, at least minWindow, at most
// MaxWindow.
func windowClass(n int64) int {
	return min(max(minWindow, 1<<bits.Len64(uint64(n))), MaxWindow)
}

// encoders are one worker's zstd encoders of one window class: one with a
// raw dictionary (replaced per frame), one without.
type encoders struct {
	class       int
	plain, dict *zstd.Encoder
}

// get returns an encoder of window class with dict (nil: none) as its raw
// dictionary of id 0: SpeedBestCompression, no checksum, one goroutine,
// an empty input makes an empty frame.
func (e *encoders) get(class int, dict []byte) (*zstd.Encoder, error) {
	if class != e.class {
		e.close()
		e.class = class
	}
	opts := []zstd.EOption{zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderCRC(false),
		zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true), zstd.WithWindowSize(class)}
	var err error
	switch {
	case dict == nil && e.plain == nil:
		e.plain, err = zstd.NewWriter(nil, opts...)
	case dict == nil:
	case e.dict == nil:
		e.dict, err = zstd.NewWriter(nil, append(opts, zstd.WithEncoderDictRaw(0, dict))...)
	default:
		err = e.dict.ResetWithOptions(nil, zstd.WithEncoderDictRaw(0, dict))
	}
	if err != nil {
		return nil, fmt.Errorf("delta: zstd: %w", err)
	}
	if dict == nil {
		return e.plain, nil
	}
	return e.dict, nil
}

func (e *encoders) close() {
	for _, z := range []*zstd.Encoder{e.plain, e.dict} {
		if z != nil {
			z.Close()
		}
	}
	e.plain, e.dict = nil, nil
}

// readFile reads the regular file p, which must be size bytes of sha256
// sum (it was scanned so).
func readFile(p string, size int64, sum string) ([]byte, error) {
	b, err := atomicfs.ReadRegular(p, size)
	if err != nil {
		return nil, unavailable("cannot read %s: %w", p, err)
	}
	if s := sha256.Sum256(b); int64(len(b)) != size || hex.EncodeToString(s[:]) != sum {
		return nil, unavailable("%s changed while the delta was written", p)
	}
	return b, nil
}

// FromArchives extracts two release archives (archive.Extract, the
// hardened reader, into temporary directories beside path that it
// removes) and writes the delta between them to path, through a temporary
// sibling and a rename.
func FromArchives(ctx context.Context, path, fromArchive, toArchive string, meta Meta) (res Result, err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".delta-")
	if err != nil {
		return Result{}, unavailable("cannot make a temporary directory beside %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	dirs := [2]string{filepath.Join(tmp, "from"), filepath.Join(tmp, "to")}
	err = parallel.ForEach(ctx, 2, 2, func(i int) error {
		a := [2]string{fromArchive, toArchive}[i]
		f, err := atomicfs.OpenRegular(a)
		if err != nil {
			return unavailable("cannot open %s: %w", a, err)
		}
		defer f.Close()
		if _, err := archive.Extract(ctx, f, dirs[i], archive.Limits{}); err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	f, err := atomicfs.Create(path, 0o644, atomicfs.Options{})
	if err != nil {
		return Result{}, unavailable("cannot create %s: %w", path, err)
	}
	defer f.Abort()
	if res, err = Write(ctx, f.File, dirs[0], dirs[1], meta); err != nil {
		return Result{}, err
	}
	if err := f.Commit(); err != nil {
		return Result{}, unavailable("cannot write %s: %w", path, err)
	}
	return res, nil
}

// hashWriter hashes and counts what it forwards to w.
type hashWriter struct {
	w io.Writer
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	hw.h.Write(p)
	n, err := hw.w.Write(p)
	hw.n += int64(n)
	return n, err
}
