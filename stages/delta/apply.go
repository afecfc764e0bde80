package delta

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/tracing/phase"
)

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Writers is the number of files written at once (default 8).
	Writers int
	// Header, when set, is what ReadHeader returned for this delta's
	// bytes (an update reads it first, to check the free space): Apply
	// takes it instead of decoding the header again, if the stream's
	// header bytes are the ones it was decoded from.
	Header *Header
}

// bufferedData is the largest op data Apply reads into memory and hands
// to a writer; larger data is decoded by the reader itself, streamed.
const bufferedData = 4 << 20

// job is one file of the result to write: a kept or copied installed file
// (src set), or a patch or new op's data (data, or stream when the
// reader decodes it itself).
type job struct {
	i    int    // index in the result's files
	src  string // the installed file copied
	op   *Op
	data []byte
}

// applier is one Apply.
type applier struct {
	h    *Header
	inst *os.Root
	dest *os.Root
	// A handle per directory of each, opened from its parent's.
	instDirs, destDirs *atomicfs.DirCache
	old                map[string]File
	files              []File   // the result, as the delta says it is
	written            []string // sha256 of each file as written
	dicts              dictCache
}

// dictCache holds each dictionary the ops of one Apply share, read and
// checked once: every renamed bundle chunk of a directory is patched
// against the same concatenation of that directory's old chunks (up to
// MaxDictBytes), and reading and hashing it again for each op was most of
// an Apply of the bundled flagship (38 ops of 8 MiB each).
type dictCache struct {
	mu sync.Mutex
	m  map[string]*dictEntry
}

type dictEntry struct {
	once sync.Once
	b    []byte
	err  error
}

// get returns the dictionary of op, read by load on first use. Its bytes
// are shared read-only by the decoders that use them.
func (c *dictCache) get(op *Op, load func() ([]byte, error)) ([]byte, error) {
	var key strings.Builder
	for _, s := range op.Base {
		key.WriteString(s.Path)
		key.WriteByte(0)
		key.WriteString(s.SHA256)
		key.WriteByte(0)
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*dictEntry{}
	}
	e := c.m[key.String()]
	if e == nil {
		e = &dictEntry{}
		c.m[key.String()] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.b, e.err = load() })
	return e.b, e.err
}

// Apply builds the release directory dest (which must not exist, or be
// empty) from the installed release directory installed, whose listing
// is installedTree (what ScanTree gave just before), and the delta read
// from r, to its end. installed is only read; every write goes through
// an os.Root on dest. Kept and copied files are read, hashed and written
// (never linked: the installed release stays independent), patches
// decoded against their dictionaries with every output byte counted
// against the op's size, each file hashed as it is written, on o.Writers
// writers. The written tree's digest must be the header's ToTree.
//
// A malformed or lying delta is an *Error (INTEGRITY_FAILED); ReasonBase
// (IsBase) says installed is not the delta's base, and the caller
// installs the full archive instead. On any error dest holds what was
// written so far, inside dest only: the caller removes it. The result is
// what archive.Extract returns for the same tree (SHA256 and Size are
// the delta's bytes; Declared is nil), so an install's checks run
// unchanged.
func Apply(ctx context.Context, r io.Reader, installed string, installedTree Tree, dest string, o ApplyOptions) (ex *archive.Extracted, err error) {
	ctx, ph := phase.Start(ctx, "delta apply")
	defer func() {
		if ex != nil {
			ph.SetInt("piship.delta.bytes", ex.Size)
		}
		ph.End(err)
	}()
	writers := o.Writers
	if writers <= 0 {
		writers = 8
	}
	hr := &hashReader{r: r, h: sha256.New()}
	br := bufio.NewReaderSize(hr, 256<<10)
	h, err := readHeader(br, o.Header)
	if err != nil {
		return nil, err
	}
	if d := installedTree.Digest(); d != h.FromTree {
		return nil, refuse(ReasonBase, "", "the installed tree's digest is %s, the delta's base %s (%s): the installed release is not the one the delta starts from", d, h.FromTree, h.FromVersion)
	}
	a := &applier{h: h}
	dirs, jobs, err := a.plan(installedTree)
	if err != nil {
		return nil, err
	}
	// What the ops say they make must be the result, before a byte is
	// written; what they do make is checked again at the end.
	if d := (Tree{Files: a.files, Dirs: dirs}).Digest(); d != h.ToTree {
		return nil, refuse(ReasonResult, "", "the tree the ops make has digest %s, the delta says %s", d, h.ToTree)
	}
	if err := prepareDest(dest); err != nil {
		return nil, err
	}
	if a.inst, err = os.OpenRoot(installed); err != nil {
		return nil, unavailable("cannot open %s: %w", installed, err)
	}
	defer a.inst.Close()
	if a.dest, err = os.OpenRoot(dest); err != nil {
		return nil, unavailable("cannot open %s: %w", dest, err)
	}
	defer a.dest.Close()
	a.destDirs, a.instDirs = atomicfs.NewDirCache(a.dest), atomicfs.NewDirCache(a.inst)
	defer a.destDirs.Close()
	defer a.instDirs.Close()
	if d, err := a.mkdirs(dirs); err != nil {
		return nil, unavailable("cannot create %s in %s: %w", d, dest, err)
	}
	a.written = make([]string, len(a.files))

	g, gctx := errgroup.WithContext(ctx)
	work := make(chan []job, writers)
	for range writers {
		g.Go(func() error {
			for batch := range work {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := a.writeBatch(batch); err != nil {
					return err
				}
			}
			return nil
		})
	}
	send := func(b []job) error {
		select {
		case work <- b:
			return nil
		case <-gctx.Done():
			return gctx.Err()
		}
	}
	// A large copy is one writer's for as long as it takes to read, hash
	// and write it (Pi's Node, 120 MB, kept from version to version), so
	// it goes first, beside everything else, not last and alone.
	large := func(j job) bool {
		return (j.op == nil || j.op.Data == 0) && a.files[j.i].Size > maxBufferedCopy
	}
	g.Go(func() error {
		defer close(work)
		for _, j := range jobs {
			if large(j) {
				if err := send([]job{j}); err != nil {
					return err
				}
			}
		}
		// The data next, in the order it comes; then the other copies.
		for _, j := range jobs {
			if j.op == nil || j.op.Data == 0 {
				continue
			}
			if j.op.Data > bufferedData {
				lr := &countReader{r: io.LimitReader(br, j.op.Data)}
				if err := a.write(j, lr, nil); err != nil {
					if lr.n < j.op.Data {
						return refuse(ReasonTruncated, j.op.Path, "the stream ends inside the op's data (%d of %d bytes)", lr.n, j.op.Data)
					}
					return err
				}
				if lr.n != j.op.Data {
					return refuse(ReasonTruncated, j.op.Path, "the stream ends inside the op's data (%d of %d bytes)", lr.n, j.op.Data)
				}
				continue
			}
			j.data = make([]byte, j.op.Data)
			if _, err := io.ReadFull(br, j.data); err != nil {
				return readErr(err, "the data of "+j.op.Path)
			}
			if err := send([]job{j}); err != nil {
				return err
			}
		}
		n, err := io.Copy(io.Discard, io.LimitReader(br, 1<<20))
		if err != nil {
			return unavailable("cannot read the delta: %w", err)
		}
		if n > 0 {
			return refuse(ReasonTrailing, "", "bytes after the last op's data")
		}
		// Copies in batches of one directory, so a writer opens the
		// directory once (os.Root opens every component of a path).
		var batch []job
		for _, j := range jobs {
			if j.op != nil && j.op.Data != 0 || large(j) {
				continue
			}
			if len(batch) == maxBatch || (len(batch) > 0 && path.Dir(a.files[batch[0].i].Path) != path.Dir(a.files[j.i].Path)) {
				if err := send(batch); err != nil {
					return err
				}
				batch = nil
			}
			batch = append(batch, j)
		}
		if len(batch) > 0 {
			return send(batch)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	got := Tree{Files: slices.Clone(a.files), Dirs: dirs}
	ex = &archive.Extracted{Files: make(map[string]string, len(a.files)), Dirs: len(dirs), SHA256: hex.EncodeToString(hr.h.Sum(nil)), Size: hr.n,
		Sizes: make(map[string]int64, len(a.files)), DirNames: slices.Clone(dirs)}
	for i := range got.Files {
		got.Files[i].SHA256 = a.written[i]
		ex.Files[got.Files[i].Path] = a.written[i]
		ex.Sizes[got.Files[i].Path] = got.Files[i].Size
		ex.Bytes += got.Files[i].Size
	}
	ex.Executables = got.Executables()
	if d := got.Digest(); d != h.ToTree {
		return nil, refuse(ReasonResult, "", "the written tree's digest is %s, the delta's %s", d, h.ToTree)
	}
	return ex, nil
}

// plan checks the ops against the installed tree and returns the
// result's directories (sorted) and one job per result file, sorted by
// path; a.files is the result's listing as the delta says it is.
func (a *applier) plan(base Tree) ([]string, []job, error) {
	h := a.h
	a.old = make(map[string]File, len(base.Files))
	for _, f := range base.Files {
		a.old[f.Path] = f
	}
	need := func(s Source, op *Op) (File, error) {
		f, ok := a.old[s.Path]
		if !ok {
			return File{}, refuse(ReasonBase, op.Path, "its source %s is not in the installed tree", s.Path)
		}
		if f.SHA256 != s.SHA256 {
			return File{}, refuse(ReasonBase, op.Path, "its source %s holds other bytes in the installed tree (sha256 %s, the delta's %s)", s.Path, f.SHA256, s.SHA256)
		}
		return f, nil
	}
	touched := make(map[string]*Op, len(h.Ops))
	for i := range h.Ops {
		op := &h.Ops[i]
		touched[op.Path] = op
		switch op.Op {
		case OpDelete:
			if _, ok := a.old[op.Path]; !ok {
				return nil, nil, refuse(ReasonBase, op.Path, "the delta deletes a file the installed tree does not hold")
			}
		case OpCopy:
			f, err := need(*op.From, op)
			if err != nil {
				return nil, nil, err
			}
			if f.Size != op.Size {
				return nil, nil, refuse(ReasonFormat, op.Path, "a copy of %d bytes from a file of %d", op.Size, f.Size)
			}
		case OpPatch:
			var total int64
			for _, s := range op.Base {
				f, err := need(s, op)
				if err != nil {
					return nil, nil, err
				}
				total += f.Size
			}
			if total > MaxWindow {
				return nil, nil, refuse(ReasonBounds, op.Path, "a dictionary of %d bytes, over %d", total, MaxWindow)
			}
		}
	}
	// The result: the installed files no op touches (kept), then the
	// ops' files, merged by path.
	var jobs []job
	kept := 0
	for _, f := range base.Files {
		if touched[f.Path] == nil {
			jobs = append(jobs, job{src: f.Path})
			a.files = append(a.files, f)
			kept++
		}
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Op == OpDelete {
			continue
		}
		j := job{op: op}
		if op.Op == OpCopy {
			j.src = op.From.Path
		}
		jobs = append(jobs, j)
		a.files = append(a.files, File{Path: op.Path, Size: op.Size, Exec: op.Exec, SHA256: op.SHA256})
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		if a.files[x].Path < a.files[y].Path {
			return -1
		}
		return 1
	})
	files := make([]File, len(order))
	sorted := make([]job, len(order))
	for k, i := range order {
		files[k], sorted[k] = a.files[i], jobs[i]
		sorted[k].i = k
	}
	a.files, jobs = files, sorted
	if kept != h.Kept || len(files) != h.Files {
		return nil, nil, refuse(ReasonFormat, "", "the header says %d files, %d kept; the ops and the base make %d, %d kept", h.Files, h.Kept, len(files), kept)
	}
	var total int64
	for _, f := range files {
		total += f.Size
	}
	if total != h.Bytes {
		return nil, nil, refuse(ReasonFormat, "", "the header says %d bytes, the ops and the base make %d", h.Bytes, total)
	}

	// The directories: the base's, less rmdirs, plus mkdirs.
	set := make(map[string]bool, len(base.Dirs)+len(h.Mkdirs))
	for _, d := range base.Dirs {
		set[d] = true
	}
	for _, d := range h.Rmdirs {
		if !set[d] {
			return nil, nil, refuse(ReasonBase, d, "the delta removes a directory the installed tree does not hold")
		}
		delete(set, d)
	}
	for _, d := range h.Mkdirs {
		if set[d] {
			return nil, nil, refuse(ReasonFormat, d, "the delta adds a directory the installed tree holds")
		}
		set[d] = true
	}
	dirs := make([]string, 0, len(set))
	for d := range set {
		dirs = append(dirs, d)
	}
	slices.Sort(dirs)
	if len(dirs) != h.Dirs {
		return nil, nil, refuse(ReasonFormat, "", "the header says %d directories, the base and the delta make %d", h.Dirs, len(dirs))
	}
	// Every path passes archive's rules together (no two fold to one),
	// and sits in a directory of the result: no file under a file, no
	// directory made implicitly.
	names := archive.NewNames()
	under := func(p string) error {
		if err := names.Check(p); err != nil {
			ae, _ := archive.IsIntegrity(err)
			return &Error{Reason: ReasonPath, Path: p, Rule: ae.Rule, Detail: ae.Detail}
		}
		if parent := path.Dir(p); parent != "." && !set[parent] {
			return refuse(ReasonPath, p, "its directory %s is not a directory of the result", parent)
		}
		return nil
	}
	for _, d := range dirs {
		if err := under(d); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range files {
		if set[f.Path] {
			return nil, nil, refuse(ReasonDuplicate, f.Path, "a file and a directory of the result")
		}
		if err := under(f.Path); err != nil {
			return nil, nil, err
		}
	}
	return dirs, jobs, nil
}

// mkdirs creates dirs (sorted by bytes: a directory before what is in
// it) in a.dest, each with one mkdirat in its parent's cached handle
// (os.Root.Mkdir of the whole path opens every component first: most of
// the time before the first file, for the ~1,000 directories of an npm
// tree). It returns the directory it could not make.
func (a *applier) mkdirs(dirs []string) (string, error) {
	for _, d := range dirs {
		parent, base := path.Dir(d), path.Base(d)
		h, err := a.destDirs.Acquire(parent)
		if err == nil {
			err = h.Root.Mkdir(base, 0o755)
			a.destDirs.Release(parent)
		}
		if err != nil {
			return d, err
		}
	}
	return "", nil
}

// maxBatch is the most files of one directory a writer takes at once.
const maxBatch = 64

// dirRoots are the open handles of one directory of the result and of
// the installed tree (nil: a directory new in the result), for a batch of
// files in it, and the writer's buffer.
type dirRoots struct {
	dir        string
	dest, inst *atomicfs.Dir
	buf        *[]byte
}

// maxBufferedCopy is the largest kept or copied file a writer reads
// whole into its buffer and writes in one call; larger ones stream.
const maxBufferedCopy = 4 << 20

// copyBufs are the writers' buffers for buffered copies.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// writeBatch writes files of one directory, opening it once on each side
// (from the caches: each directory is opened from its parent's handle).
func (a *applier) writeBatch(batch []job) error {
	if len(batch) == 1 && batch[0].src == "" {
		return a.write(batch[0], nil, nil)
	}
	rs := &dirRoots{dir: path.Dir(a.files[batch[0].i].Path)}
	var err error
	if rs.dest, err = a.destDirs.Acquire(rs.dir); err != nil {
		return unavailable("cannot open %s: %w", rs.dir, err)
	}
	defer a.destDirs.Release(rs.dir)
	if rs.inst, err = a.instDirs.Acquire(rs.dir); err == nil {
		defer a.instDirs.Release(rs.dir)
	} else {
		rs.inst = nil // a directory new in the result: copies come from elsewhere
	}
	rs.buf = copyBufs.Get().(*[]byte)
	defer copyBufs.Put(rs.buf)
	for _, j := range batch {
		if err := a.write(j, nil, rs); err != nil {
			return err
		}
	}
	return nil
}

// copyAt writes the result's file want as a copy of the installed file
// src, both in rs's directory, through their handles: the installed file
// read whole into the writer's buffer (on Linux openat, fstat, read,
// close), hashed, and written only when it is the listed bytes (openat,
// write, close). ok is false when this way does not apply (src in
// another directory, a large file) and write streams instead.
func (a *applier) copyAt(want File, src string, perm os.FileMode, rs *dirRoots) (sum string, ok bool, err error) {
	if rs == nil || rs.inst == nil || path.Dir(src) != rs.dir || want.Size > maxBufferedCopy {
		return "", false, nil
	}
	if int64(cap(*rs.buf)) < want.Size {
		*rs.buf = make([]byte, 0, want.Size)
	}
	b := (*rs.buf)[:want.Size]
	if err := rs.inst.ReadFull(path.Base(src), b); err != nil {
		return "", true, refuse(ReasonBase, want.Path, "the installed file %s is not the one the installed tree lists (%d bytes, sha256 %s): %v", src, want.Size, want.SHA256, err)
	}
	h := sha256.Sum256(b)
	if sum = hex.EncodeToString(h[:]); sum != want.SHA256 {
		return "", true, refuse(ReasonBase, want.Path, "the installed file %s is not the one the installed tree lists (sha256 %s; listed %d bytes, %s)", src, sum, want.Size, want.SHA256)
	}
	if err := rs.dest.Create(path.Base(want.Path), b, perm); err != nil {
		return "", true, unavailable("cannot write %s: %w", want.Path, err)
	}
	return sum, true, nil
}

// write writes one file of the result: a copy of an installed file, or
// an op's data (j.data, or stream) decoded; rs, when not nil, holds the
// file's directory open.
func (a *applier) write(j job, stream io.Reader, rs *dirRoots) error {
	want := a.files[j.i]
	perm := os.FileMode(0o644)
	if want.Exec {
		perm = 0o755
	}
	if j.src != "" {
		sum, ok, err := a.copyAt(want, j.src, perm, rs)
		if ok {
			if err == nil {
				a.written[j.i] = sum
			}
			return err
		}
	}
	destRoot, name := a.dest, want.Path
	if rs != nil {
		destRoot, name = rs.dest.Root, path.Base(want.Path)
	}
	out, err := destRoot.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return unavailable("cannot create %s: %w", want.Path, err)
	}
	hw := &hashWriter{w: fileWriter{out}, h: sha256.New()}
	if j.src != "" {
		err = a.copyInstalled(hw, j.src, rs)
	} else {
		err = a.decode(hw, j, stream)
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = unavailable("cannot write %s: %w", want.Path, cerr)
	}
	if err != nil {
		return err
	}
	sum := hex.EncodeToString(hw.h.Sum(nil))
	if j.op == nil || j.op.Op == OpCopy {
		if hw.n != want.Size || sum != want.SHA256 {
			return refuse(ReasonBase, want.Path, "the installed file %s is not the one the installed tree lists (%d bytes, sha256 %s; listed %d, %s)", j.src, hw.n, sum, want.Size, want.SHA256)
		}
	} else if sum != want.SHA256 {
		return refuse(ReasonResult, want.Path, "the patched file's sha256 is %s, the delta's %s", sum, want.SHA256)
	}
	a.written[j.i] = sum
	return nil
}

// copyInstalled copies the installed file src into w, up to its listed
// size (the caller compares what came and its hash; what the file holds
// beyond is not read, as in copyAt and readDict).
func (a *applier) copyInstalled(w io.Writer, src string, rs *dirRoots) error {
	in, err := a.openInstalled(src, rs)
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := copyBuffered(w, io.LimitReader(in, a.old[src].Size)); err != nil {
		return classify(err, src)
	}
	return nil
}

func (a *applier) openInstalled(src string, rs *dirRoots) (*os.File, error) {
	root, name := a.inst, src
	if rs != nil && rs.inst != nil && path.Dir(src) == rs.dir {
		root, name = rs.inst.Root, path.Base(src)
	}
	in, err := atomicfs.OpenRegularIn(root, name)
	if errors.Is(err, atomicfs.ErrNotRegular) {
		return nil, refuse(ReasonBase, src, "the installed tree lists it, but it is not a regular file")
	}
	if err != nil {
		return nil, refuse(ReasonBase, src, "the installed tree lists it, but it cannot be opened: %v", err)
	}
	return in, nil
}

// decode decodes j's op data (j.data, or stream) into w against the op's
// dictionary, read from the installed tree and checked against the op.
func (a *applier) decode(w io.Writer, j job, stream io.Reader) error {
	op := j.op
	dict, err := a.dicts.get(op, func() ([]byte, error) { return a.readDict(op) })
	if err != nil {
		return err
	}
	if op.Op == OpPatch && dict == nil {
		dict = []byte{}
	}
	src := stream
	if src == nil {
		src = bytes.NewReader(j.data)
	}
	n, err := decodeTo(w, src, dict, op.Size, windowClass(op.Size+int64(len(dict))))
	switch {
	case errors.Is(err, errTooLarge):
		return refuse(ReasonBounds, op.Path, "its data decodes to more than its %d bytes", op.Size)
	case err != nil:
		var we writeErr
		if errors.As(err, &we) {
			return unavailable("cannot write %s: %w", op.Path, we.err)
		}
		return refuse(ReasonPatch, op.Path, "its zstd data does not decode: %v", err)
	case n != op.Size:
		return refuse(ReasonBounds, op.Path, "its data decodes to %d bytes, not its %d", n, op.Size)
	}
	return nil
}

// readDict reads op's dictionary, the installed files op.Base in order,
// each checked against the sha256 the op expects, into one buffer of
// their listed sizes (plan bounded the sum by MaxWindow). A file is read
// up to its listed size: what it holds beyond is not the dictionary, and
// what is read is hashed.
func (a *applier) readDict(op *Op) ([]byte, error) {
	var total int64
	for _, s := range op.Base {
		total += a.old[s.Path].Size
	}
	dict := make([]byte, total)
	at := int64(0)
	for _, s := range op.Base {
		b := dict[at : at+a.old[s.Path].Size]
		at += int64(len(b))
		in, err := a.openInstalled(s.Path, nil)
		if err != nil {
			return nil, err
		}
		_, err = io.ReadFull(in, b)
		in.Close()
		if err != nil {
			return nil, refuse(ReasonBase, op.Path, "its source %s is not the file the installed tree lists: %v", s.Path, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != s.SHA256 {
			return nil, refuse(ReasonBase, op.Path, "its source %s holds other bytes than the delta expects (sha256 %s)", s.Path, s.SHA256)
		}
	}
	return dict, nil
}

func classify(err error, p string) error {
	var we writeErr
	if errors.As(err, &we) {
		return unavailable("cannot write %s: %w", p, we.err)
	}
	return unavailable("cannot read the installed %s: %w", p, err)
}

// fileWriter marks its write errors as writeErr.
type fileWriter struct{ f *os.File }

func (w fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = writeErr{err}
	}
	return n, err
}

// hashReader hashes and counts what it reads.
type hashReader struct {
	r io.Reader
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (hr *hashReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	hr.n += int64(n)
	return n, err
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// prepareDest creates dest or checks that it is an empty directory (as
// archive.Extract does: a full dest is archive.ErrDestNotEmpty).
func prepareDest(dest string) error {
	fi, err := os.Stat(dest)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return unavailable("cannot create %s: %w", dest, err)
		}
		return nil
	}
	if err != nil {
		return unavailable("cannot read %s: %w", dest, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", archive.ErrDestNotEmpty, dest)
	}
	d, err := os.Open(dest)
	if err != nil {
		return unavailable("cannot read %s: %w", dest, err)
	}
	defer d.Close()
	if names, err := d.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("%w: %s holds %s", archive.ErrDestNotEmpty, dest, names[0])
	} else if err != nil && err != io.EOF {
		return unavailable("cannot read %s: %w", dest, err)
	}
	return nil
}
