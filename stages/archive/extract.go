package archive

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"

	"piship.dev/piship/cache/atomicfs"
)

// Default limits of Extract.
const (
	DefaultMaxBytes   int64 = 2 << 30 // total file content
	DefaultMaxEntries       = 200_000 // files and directories
	DefaultMaxPAX           = 64 << 10
	DefaultWriters          = 8

	// SmallFile is the largest file that is buffered and handed to a
	// parallel writer; larger files are streamed to a writer in chunks, in order.
	SmallFile = 1 << 20
)

// Limits bound what Extract accepts. Zero fields take the defaults.
type Limits struct {
	MaxBytes   int64 // total bytes of file content (default 2 GiB)
	MaxEntries int   // files plus directories created, implied parents included (default 200,000)
	MaxPAX     int   // bytes of one PAX extended header (default 64 KiB)
	// Writers is the number of parallel writers of files up to SmallFile
	// (default 8). Memory held for them is at most Writers x SmallFile.
	Writers int
	// Store, if set, places eligible files of up to SmallFile bytes by
	// linking a stored object instead of writing them, and keeps the ones
	// it had not (see contentstore.Store).
	Store Store
}

// Store is a content-addressed store of file objects (contentstore.Store). Its
// failures are never the extraction's: a file it does not place is written.
type Store interface {
	// Eligible reports whether the file at archive path name is stored.
	Eligible(name string) bool
	// Place makes path a link to the object holding exactly data (sum is
	// its SHA-256, already computed) and reports whether it did.
	Place(path string, data []byte, sum [32]byte, perm os.FileMode) bool
	// Keep adds the file just written at path as the object of sum.
	Keep(path string, sum [32]byte, perm os.FileMode)
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxPAX <= 0 {
		l.MaxPAX = DefaultMaxPAX
	}
	if l.Writers <= 0 {
		l.Writers = DefaultWriters
	}
	return l
}

// Extracted describes a successful extraction.
type Extracted struct {
	SHA256 string            // lowercase hex SHA-256 of the compressed archive, every byte read from r
	Size   int64             // compressed bytes read from r
	Files  map[string]string // archive path -> lowercase hex SHA-256, every regular file
	Bytes  int64             // total bytes of file content
	Dirs   int               // directories created (explicit and implied)
	Linked int               // files placed by linking a stored object (Limits.Store), included in Files
	// Executables are the files written executable (0755 less the umask;
	// every other file 0644), archive paths, sorted.
	Executables []string
	// Declared is the archive's declaration, which the tree matched
	// exactly; nil for an archive without one (see Declared).
	Declared *Declared
	// Sizes is every regular file's size and DirNames every directory
	// made (explicit and implied), sorted: with Files and Executables,
	// the tree as written, so an install records its digest
	// (stages/delta.TreeOf) without listing it again. Nil where a
	// producer does not give them (a directory install).
	Sizes    map[string]int64
	DirNames []string
}

// Extract reads an archive of either format (told by its first bytes)
// once from r and writes it into dest, which must
// not exist or be an empty directory: Open, then Reader.Extract. It
// computes the SHA-256 of the compressed bytes and of every file written
// while reading. Files up to
// SmallFile are buffered and written by lim.Writers parallel writers; larger
// ones are streamed to a writer in chunks, in order; the reader waits for a
// free writer and stops at the first writer error. A stream of block
// members (what Write produces in V1) is inflated on every core, as are
// V2's frames. It returns only
// once every writer and inflater has stopped.
//
// Every entry is checked before anything is written for it (see Rule for
// the rules), and every file is created in a directory handle that came
// from an os.Root on dest, one component at a time, never following a link
// (a file a Store places is linked by its path under dest, whose
// directories only the writers made). A corrupt or
// hostile archive fails with an *Error (Code INTEGRITY_FAILED). On any
// error dest holds whatever was written so far, inside dest only; the
// caller removes it. r is read to its end: anything after the single gzip
// member (or after the last block member) is refused, so Extracted.SHA256
// covers all of r.
func Extract(ctx context.Context, r io.Reader, dest string, lim Limits) (*Extracted, error) {
	if err := prepareDest(dest); err != nil {
		return nil, err // before reading: a full dest is refused as it stands
	}
	a, err := Open(r, lim)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	return a.Extract(ctx, dest)
}

// Reader is an archive opened for extraction: its first header read, so
// its declaration is known before anything is written (an install sizes
// its free space check on it), and the same read goes on into Extract.
type Reader struct {
	x    *extractor
	br   *bufio.Reader
	pz   *pgzReader // nil for a single gzip member or V2
	zr   *zstReader // V2's frames, nil for V1
	used bool
}

// Open starts reading the archive r (V1 or V2, by its first bytes) under
// lim: the compression's header and the archive's first entry header, with the declaration before it if there
// is one (checked against lim at once). It fails with an *Error as
// Extract does. The caller extracts with Reader.Extract or closes it.
func Open(r io.Reader, lim Limits) (*Reader, error) {
	lim = lim.withDefaults()
	src := &hashReader{r: r, h: sha256.New()}
	br := bufio.NewReaderSize(src, 64<<10)
	x := &extractor{
		lim:    lim,
		store:  lim.Store,
		src:    src,
		seen:   make(map[string]uint8),
		sizes:  make(map[string]int64),
		names:  NewNames(),
		files:  make(map[string]string),
		jobs:   make(chan job),
		free:   make(chan []byte, lim.Writers),
		chunks: make(chan []byte, streamChunks),
	}
	a := &Reader{x: x, br: br}
	head, _ := br.Peek(4)
	f, ok := formatOf(head)
	if !ok {
		if src.err != nil {
			return nil, fmt.Errorf("archive: reading the archive: %w", src.err)
		}
		return nil, notAnArchive(head)
	}
	x.format = f
	if f == V2 {
		a.zr = newZstReader(br)
		x.zr = a.zr
		x.tr = bufio.NewReaderSize(a.zr, 64<<10)
	} else if hdr, _ := br.Peek(pgzHeaderLen); isPGZ(hdr) {
		// The block-member format piship writes: inflate on every core.
		a.pz = newPGZReader(br)
		x.tr = bufio.NewReaderSize(a.pz, 64<<10)
	} else {
		// Any other gzip stream: one member, inflated here.
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, x.readErr(err, "in the gzip header")
		}
		gz.Multistream(false) // a second member is data after the end
		x.tr = bufio.NewReaderSize(gz, 64<<10)
	}
	first, err := x.next()
	if err != nil {
		a.Close()
		return nil, err
	}
	x.first, x.peeked = first, true
	return a, nil
}

// Declared is the archive's declaration, nil for an archive without one.
// Extract holds the tree to it.
func (a *Reader) Declared() *Declared { return a.x.decl }

// Close stops the inflaters of an archive that was not extracted; after
// Extract it does nothing.
func (a *Reader) Close() {
	if a.pz != nil {
		a.pz.Close()
	}
	if a.zr != nil {
		a.zr.Close()
	}
}

// Format is the archive's format, told by its first bytes.
func (a *Reader) Format() Format { return a.x.format }

// Extract writes the opened archive into dest (see the package function
// Extract); a Reader extracts once.
func (a *Reader) Extract(ctx context.Context, dest string) (*Extracted, error) {
	if a.used {
		return nil, errors.New("archive: a Reader extracts once")
	}
	a.used = true
	x, br, pz := a.x, a.br, a.pz
	if err := prepareDest(dest); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	defer root.Close()
	x.ctx, x.dest, x.root, x.droots = ctx, dest, root, atomicfs.NewDirCache(root)
	for range streamChunks {
		x.chunks <- nil
	}
	for range x.lim.Writers {
		x.free <- nil
		x.wg.Add(1)
		go x.writer()
	}
	err = x.run()
	close(x.jobs)
	x.wg.Wait()
	x.droots.Close()
	if err == nil || x.failed.Load() && errors.Is(err, errWriterFailed) {
		if werr := x.writerErr(); werr != nil {
			err = werr
		}
	}
	if err != nil {
		return nil, err
	}
	if pz != nil {
		// finish read the stream to its end: every member was read and
		// checked, and nothing but members followed.
		pz.Close()
	} else if a.zr != nil {
		// The same for frames, and the seek table was checked.
		a.zr.Close()
	} else if _, err := br.ReadByte(); err == nil {
		// Nothing may follow the single gzip member: not a second member,
		// not padding.
		return nil, integrity(RuleTrailingData, 0, "", "data after the end of the gzip stream (a second gzip member or garbage)")
	} else if err != io.EOF {
		return nil, x.readErr(err, "after the gzip stream")
	}
	return &Extracted{
		Declared:    x.decl,
		Linked:      int(x.linked.Load()),
		SHA256:      hex.EncodeToString(x.src.h.Sum(nil)),
		Size:        x.src.n,
		Files:       x.files,
		Executables: slices.Sorted(slices.Values(x.execs)),
		Bytes:       x.total,
		Dirs:        x.dirs,
		Sizes:       x.sizes,
		DirNames:    x.dirNames(),
	}, nil
}

// dirNames lists the directories made, explicit and implied, sorted.
func (x *extractor) dirNames() []string {
	var out []string
	for name, st := range x.seen {
		if st == seenDir || st == seenImpliedDir {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// prepareDest creates dest or checks that it is an empty directory.
func prepareDest(dest string) error {
	fi, err := os.Stat(dest)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", ErrDestNotEmpty, dest)
	}
	d, err := os.Open(dest)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer d.Close()
	if names, err := d.Readdirnames(1); len(names) > 0 {
		return fmt.Errorf("%w: %s holds %s", ErrDestNotEmpty, dest, names[0])
	} else if err != nil && err != io.EOF {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// States of a path in extractor.seen.
const (
	seenFile uint8 = iota + 1
	seenImpliedDir
	seenDir
)

// job is one unit of work for a writer: the directories to make first
// (outermost first; they may already exist, made by another writer), then
// either a batch of small files of one directory, held back to back in
// data, or one file streamed through chunks (over SmallFile). A job with
// neither only makes directories.
type job struct {
	mkdirs []string
	batch  []batchFile // small files, in data in this order
	data   []byte      // the batch's bytes, or the writer token (streamed)
	name   string      // the streamed file
	perm   os.FileMode
	size   int64
	chunks chan []byte // nil unless streamed
	want   *[32]byte   // V2: the streamed file's SHA-256 in the index
}

// batchFile is one small file of a batch: size bytes of job.data.
type batchFile struct {
	name string
	size int
	perm os.FileMode
	want *[32]byte // V2: the index's SHA-256
}

// A batch holds the small files of one directory that follow each other
// in the archive, up to batchFiles files and the capacity of its writer's
// buffer (at least batchBytes, at most SmallFile). One writer creates them
// all: files of one directory created on several writers at once only
// queue for the directory's lock in the kernel (where creating a file is
// slow, one writer spins while another creates), while writers in
// different directories create in parallel. Batches stay small enough
// that a large directory still spreads over several writers.
const (
	batchFiles = 64
	batchBytes = 256 << 10
)

// Streamed files move in chunks of streamChunk bytes, at most
// streamChunks of them in flight.
const (
	streamChunk  = 256 << 10
	streamChunks = 8
)

var errWriterFailed = errors.New("archive: a writer failed")

type extractor struct {
	ctx    context.Context
	lim    Limits
	dest   string
	store  Store        // nil: write every file
	linked atomic.Int64 // files placed from the store
	root   *os.Root
	droots *atomicfs.DirCache // a Root per directory, for the writers
	src    *hashReader
	tr     *bufio.Reader // the decompressed tar stream
	format Format
	zr     *zstReader // V2: where frames start (checkSpan, checkIndex)
	// V2: the span of the entry being read, from its first header block
	// (spanStart), and whether it is a file entry larger than a frame.
	spanStart int64
	spanLarge bool

	blk     [512]byte
	begun   bool      // a header was read: a declaration can only come first
	decl    *Declared // the archive's declaration, nil without one
	first   *header   // the first entry header, read by Open (nil: the end marker)
	peeked  bool      // first is still to be handed to run
	nfiles  int       // regular files accepted so far
	entries int       // entries accepted so far
	created int       // files and directories created, implied parents included
	total   int64
	dirs    int
	seen    map[string]uint8
	sizes   map[string]int64 // every regular file's size, as its header says (Extracted.Sizes)
	names   *Names           // the folded paths: collisions on case-insensitive or normalising file systems

	jobs   chan job
	free   chan []byte // one token (a reusable buffer) per writer
	pend   *job        // the batch being filled, not yet handed over
	pendOf string      // the directory of pend's files
	chunks chan []byte // free chunks of streamed files
	wg     sync.WaitGroup
	failed atomic.Bool
	mu     sync.Mutex // guards files and werr
	files  map[string]string
	werr   error
	execs  []string // the files written 0755 (the reader's alone)
}

// header is one parsed entry header, with its PAX records applied.
type header struct {
	name string
	typ  byte
	size int64
	mode int64
}

func (x *extractor) run() error {
	for {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		if x.failed.Load() {
			return errWriterFailed
		}
		var h *header
		var err error
		if x.peeked {
			h, x.peeked = x.first, false
		} else {
			h, err = x.next()
		}
		if err != nil {
			return err
		}
		if h == nil {
			x.flush()
			return x.finish()
		}
		if err := x.entry(h); err != nil {
			return err
		}
	}
}

// next reads the next entry header, applying a preceding PAX extended
// header. It returns nil at a valid end marker (two zero blocks).
func (x *extractor) next() (*header, error) {
	idx := x.entries + 1
	var pax map[string]string
	if x.zr != nil && x.begun {
		// The entry before ends here: no frame may start inside it.
		here := x.pos()
		if err := x.checkSpan(x.spanStart, here, x.spanLarge, idx-1); err != nil {
			return nil, err
		}
		x.spanStart, x.spanLarge = here, false
	}
	for {
		if err := x.readFull(x.blk[:], idx, "", "before the end marker"); err != nil {
			return nil, err
		}
		if isZero(x.blk[:]) {
			if pax != nil {
				return nil, integrity(RulePAX, idx, "", "an extended header is followed by the end marker")
			}
			if err := x.readFull(x.blk[:], idx, "", "inside the end marker (one zero block of two)"); err != nil {
				return nil, err
			}
			if !isZero(x.blk[:]) {
				return nil, integrity(RuleTrailingData, idx, cstring(x.blk[:100]), "data after the end marker (a header after a zero block)")
			}
			if x.zr != nil {
				if !x.begun {
					return nil, integrity(RuleIndex, 0, "", "a %s archive without a declaration", V2)
				}
				if err := x.checkSpan(x.spanStart, x.pos(), false, idx); err != nil {
					return nil, err
				}
			}
			return nil, nil
		}
		b := &x.blk
		rawName := cstring(b[0:100])
		if !checksumOK(b) {
			return nil, integrity(RuleChecksum, idx, rawName, "header checksum mismatch")
		}
		first := !x.begun
		x.begun = true
		if first && x.zr != nil && b[156] != 'g' {
			return nil, integrity(RuleIndex, idx, rawName, "a %s archive whose first header is not its declaration", V2)
		}
		var prefix string
		switch {
		case string(b[257:263]) == "ustar\x00":
			prefix = cstring(b[345:500])
		case string(b[257:265]) == "ustar  \x00": // GNU: no prefix field
		default:
			return nil, integrity(RuleHeader, idx, rawName, "not a ustar header (magic %q)", b[257:265])
		}
		name := rawName
		if prefix != "" {
			name = prefix + "/" + rawName
		}
		typ := b[156]
		size, ok := parseNumeric(b[124:136])
		if !ok {
			return nil, integrity(RuleHeader, idx, name, "bad size field %q", b[124:136])
		}
		mode, ok := parseNumeric(b[100:108])
		if !ok {
			return nil, integrity(RuleHeader, idx, name, "bad mode field %q", b[100:108])
		}
		switch typ {
		case 'x':
			if pax != nil {
				return nil, integrity(RulePAX, idx, name, "two extended headers in a row")
			}
			if size > int64(x.lim.MaxPAX) {
				return nil, integrity(RulePAXSize, idx, name, "extended header of %d bytes exceeds the limit of %d", size, x.lim.MaxPAX)
			}
			data := make([]byte, size)
			if err := x.readFull(data, idx, name, "inside an extended header"); err != nil {
				return nil, err
			}
			if err := x.skipPadding(size, idx, name); err != nil {
				return nil, err
			}
			var err error
			if pax, err = parsePAX(data, idx, name); err != nil {
				return nil, err
			}
			continue
		case 'g':
			if !first {
				return nil, integrity(RuleEntryType, idx, name, "global extended headers are not accepted (but for the declaration, as the first header)")
			}
			if err := x.declaration(name, size, idx); err != nil {
				return nil, err
			}
			if x.zr != nil {
				// The first frame holds the declaration and nothing else.
				x.spanStart = x.pos()
				if n := x.zr.lens[0]; x.spanStart != n {
					return nil, integrity(RuleFrameCut, idx, name, "the first frame holds %d bytes, the declaration %d: it must hold the declaration alone", n, x.spanStart)
				}
			}
			continue
		}
		if p, ok := pax["path"]; ok {
			name = p
		}
		if s, ok := pax["size"]; ok {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return nil, integrity(RulePAX, idx, name, "bad size record %q", s)
			}
			size = n
		}
		return &header{name: name, typ: typ, size: size, mode: mode}, nil
	}
}

// declaration reads the archive's declaration, the content of a global
// extended header of size bytes that is the first header, and refuses one
// over the limits at once.
func (x *extractor) declaration(name string, size int64, idx int) error {
	bound := int64(maxDeclaration)
	if x.format == V2 {
		bound = maxDeclarationV2
	}
	if size > bound {
		return integrity(RuleDeclared, idx, name, "a declaration of %d bytes (at most %d)", size, bound)
	}
	data := make([]byte, size)
	if err := x.readFull(data, idx, name, "inside the declaration"); err != nil {
		return err
	}
	if err := x.skipPadding(size, idx, name); err != nil {
		return err
	}
	d, err := parseDeclaration(data, idx, name, x.format)
	if err != nil {
		return err
	}
	if d.Bytes > x.lim.MaxBytes {
		return integrity(RuleMaxBytes, idx, name, "the archive declares %d bytes of content, over the limit of %d", d.Bytes, x.lim.MaxBytes)
	}
	if int64(d.Files)+int64(d.Dirs) > int64(x.lim.MaxEntries) {
		return integrity(RuleMaxEntries, idx, name, "the archive declares %d files and %d directories, over the limit of %d", d.Files, d.Dirs, x.lim.MaxEntries)
	}
	x.decl = d
	return nil
}

// typeNames describes the entry types that are refused.
var typeNames = map[byte]string{
	'1': "hard link", '2': "symbolic link", '3': "character device", '4': "block device",
	'6': "FIFO", '7': "contiguous file", 'D': "GNU dump directory", 'K': "GNU long link name",
	'L': "GNU long name", 'M': "GNU multi-volume continuation", 'N': "GNU old long name",
	'S': "GNU sparse file", 'V': "GNU volume header",
}

// entry checks one entry against every rule, then creates it.
func (x *extractor) entry(h *header) error {
	idx := x.entries + 1
	var dir bool
	switch h.typ {
	case '0', 0:
		if strings.HasSuffix(h.name, "/") {
			return integrity(RuleHeader, idx, h.name, "regular file with a directory name")
		}
	case '5':
		dir = true
		if h.size != 0 {
			return integrity(RuleHeader, idx, h.name, "directory with %d bytes of content", h.size)
		}
	default:
		what, ok := typeNames[h.typ]
		if !ok {
			what = fmt.Sprintf("unknown type %q", h.typ)
		}
		return integrity(RuleEntryType, idx, h.name, "%s: only regular files and directories are accepted", what)
	}
	name := h.name
	if dir {
		name = strings.TrimSuffix(name, "/")
	}
	if rule, detail := checkPath(name); rule != "" {
		return integrity(rule, idx, h.name, "%s", detail)
	}
	state := x.seen[name]
	if dir {
		switch state {
		case seenFile:
			return integrity(RuleDuplicate, idx, h.name, "a file and a directory share this path")
		case seenDir:
			return integrity(RuleDuplicate, idx, h.name, "duplicate directory")
		}
	} else if state != 0 {
		if state == seenFile {
			return integrity(RuleDuplicate, idx, h.name, "duplicate file")
		}
		return integrity(RuleDuplicate, idx, h.name, "a file and a directory share this path")
	}
	missing, err := x.missingParents(name, idx, h.name)
	if err != nil {
		return err
	}
	if state == 0 {
		// New paths: none may fold to a path of another spelling.
		for _, p := range missing {
			if rule, detail := x.names.collides(p); rule != "" {
				return integrity(rule, idx, h.name, "%s", detail)
			}
		}
		if rule, detail := x.names.collides(name); rule != "" {
			return integrity(rule, idx, h.name, "%s", detail)
		}
	}
	need := len(missing)
	if !dir || state == 0 {
		need++
	}
	if d := x.decl; d != nil {
		// Nothing beyond what the archive declared: checked on the
		// header, so not one byte of the entry is written.
		newDirs := len(missing)
		if dir && state == 0 {
			newDirs++
		}
		switch {
		case x.dirs+newDirs > d.Dirs:
			return integrity(RuleDeclared, idx, h.name, "more directories than the %d the archive declares", d.Dirs)
		case !dir && x.nfiles >= d.Files:
			return integrity(RuleDeclared, idx, h.name, "more files than the %d the archive declares", d.Files)
		case !dir && h.size > d.Bytes-x.total:
			return integrity(RuleDeclared, idx, h.name, "content beyond the %d bytes the archive declares (%d bytes before this file of %d)", d.Bytes, x.total, h.size)
		}
	}
	if need > x.lim.MaxEntries-x.created {
		return integrity(RuleMaxEntries, idx, h.name, "more than %d files and directories", x.lim.MaxEntries)
	}
	if !dir && h.size > x.lim.MaxBytes-x.total {
		return integrity(RuleMaxBytes, idx, h.name, "content exceeds the limit of %d bytes", x.lim.MaxBytes)
	}
	var want *[32]byte
	if x.zr != nil && !dir {
		var err error
		if want, err = x.checkIndex(h, name, idx); err != nil {
			return err
		}
	}

	// Every rule holds: create. The writers make the directories, the
	// first job under a new directory carrying it.
	for _, p := range missing {
		x.seen[p] = seenImpliedDir
		x.dirs++
	}
	x.created += need
	x.entries++
	if dir {
		if state == 0 {
			missing = append(missing, name)
			x.dirs++
		}
		x.seen[name] = seenDir
		if len(missing) == 0 {
			return nil
		}
		return x.dispatch(job{mkdirs: missing})
	}
	x.seen[name] = seenFile
	x.sizes[name] = h.size
	x.nfiles++
	x.total += h.size
	perm := os.FileMode(0o644)
	if h.mode&0o111 != 0 {
		perm = 0o755
		x.execs = append(x.execs, name)
	}
	if h.size <= SmallFile {
		return x.small(name, missing, h, perm, idx, want)
	}
	return x.stream(name, missing, h, perm, idx, want)
}

// token waits for a free writer and returns its buffer.
func (x *extractor) token() ([]byte, error) {
	select {
	case buf := <-x.free:
		return buf, nil
	case <-x.ctx.Done():
		return nil, x.ctx.Err()
	}
}

// dispatch hands a directory-only job to a writer.
func (x *extractor) dispatch(j job) error {
	x.flush()
	buf, err := x.token()
	if err != nil {
		return err
	}
	j.data = buf
	x.jobs <- j
	return nil
}

// missingParents returns the directories above name that do not exist
// yet, outermost first, refusing a parent that is a file.
func (x *extractor) missingParents(name string, idx int, entry string) ([]string, error) {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return nil, nil
	}
	if s := x.seen[name[:i]]; s == seenDir || s == seenImpliedDir {
		return nil, nil // its own parents were made when it was
	}
	var missing []string
	for i := 0; i < len(name); i++ {
		if name[i] != '/' {
			continue
		}
		p := name[:i]
		switch x.seen[p] {
		case seenFile:
			return nil, integrity(RuleDuplicate, idx, entry, "parent %q is a file", p)
		case 0:
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// small reads a file of up to SmallFile bytes into the batch of its
// directory, handing the batch before it to a writer when this file does
// not belong to it or fit in it, and waiting for a free writer to start a
// new one.
func (x *extractor) small(name string, mkdirs []string, h *header, perm os.FileMode, idx int, want *[32]byte) error {
	dir, _ := atomicfs.Split(name)
	size := int(h.size)
	if p := x.pend; p != nil && (dir != x.pendOf || len(mkdirs) > 0 || len(p.batch) == batchFiles || len(p.data)+size > cap(p.data)) {
		x.flush()
	}
	if x.pend == nil {
		buf, err := x.token()
		if err != nil {
			return err
		}
		if want := max(size, batchBytes); cap(buf) < want {
			buf = make([]byte, 0, want)
		}
		x.pend = &job{mkdirs: mkdirs, data: buf[:0]}
		x.pendOf = dir
	}
	p := x.pend
	at := len(p.data)
	p.data = p.data[:at+size]
	err := x.readFull(p.data[at:], idx, h.name, "inside a file")
	if err == nil {
		err = x.skipPadding(h.size, idx, h.name)
	}
	if err != nil {
		p.data = p.data[:at]
		x.flush()
		return err
	}
	p.batch = append(p.batch, batchFile{name: name, size: size, perm: perm, want: want})
	return nil
}

// flush hands the batch being filled, if any, to a writer.
func (x *extractor) flush() {
	if p := x.pend; p != nil {
		x.pend = nil
		x.jobs <- *p
	}
}

func (x *extractor) writer() {
	defer x.wg.Done()
	for j := range x.jobs {
		if !x.failed.Load() {
			if err := x.mkdirs(j.mkdirs); err != nil {
				x.fail(err)
			}
		}
		if j.chunks != nil {
			x.writeStream(j)
		} else {
			x.writeBatch(j)
		}
		x.free <- j.data[:0]
	}
}

// writeBatch creates the small files of a batch, hashing each, and stops
// at the first failure.
func (x *extractor) writeBatch(j job) {
	if seen := onBatch; seen != nil && len(j.batch) > 0 {
		seen(j.batch)
	}
	at := 0
	for _, f := range j.batch {
		if x.failed.Load() {
			return
		}
		data := j.data[at : at+f.size : at+f.size]
		at += f.size
		sum := sha256.Sum256(data)
		if f.want != nil && sum != *f.want {
			// Refused before it is written.
			x.fail(x.sumMismatch(f.name, sum[:], f.want))
			return
		}
		stored := x.store != nil && x.store.Eligible(f.name)
		if stored && x.haveDir(f.name) && x.store.Place(x.path(f.name), data, sum, f.perm) {
			x.record(f.name, sum[:])
			x.linked.Add(1)
		} else if err := x.create(f.name, func(dir *atomicfs.Dir, base string) error { return writeFile(dir, base, data, f.perm) }); err != nil {
			x.fail(err)
		} else {
			x.record(f.name, sum[:])
			if stored {
				x.store.Keep(x.path(f.name), sum, f.perm)
			}
		}
	}
}

// openDir returns the handle of dir (the caller releases it). The
// directory may not exist yet: the job that carries it can still be queued
// on another writer, since jobs run on the writers in any order. Then it
// is made here, with its parents. Nothing but a directory can be in the
// way, since the reader refuses a file and a directory of the same path
// and dest started empty.
func (x *extractor) openDir(dir string) (*atomicfs.Dir, error) {
	h, err := x.droots.Acquire(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := x.root.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		h, err = x.droots.Acquire(dir)
	}
	return h, err
}

// mkdirs makes the directories of a job; one may exist already (made for
// a job that ran first, see openDir).
func (x *extractor) mkdirs(dirs []string) error {
	for _, d := range dirs {
		parent, base := atomicfs.Split(d)
		h, err := x.openDir(parent)
		if err == nil {
			err = h.Root.Mkdir(base, 0o755)
			x.droots.Release(parent)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("archive: %w", err)
		}
	}
	return nil
}

// create runs op, which creates the file base in the directory of name.
func (x *extractor) create(name string, op func(dir *atomicfs.Dir, base string) error) error {
	dir, base := atomicfs.Split(name)
	h, err := x.openDir(dir)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer x.droots.Release(dir)
	return op(h, base)
}

// haveDir makes sure the directory of name exists before the store links
// into it by path, and reports whether it does.
func (x *extractor) haveDir(name string) bool {
	dir, _ := atomicfs.Split(name)
	if _, err := x.openDir(dir); err != nil {
		return false
	}
	x.droots.Release(dir)
	return true
}

// path is the file system path of the archive path name under dest, for
// the store, which links by path (an object lives outside dest's Root).
// Every component was checked by the reader and created by the writers as
// a directory, so it stays under dest.
func (x *extractor) path(name string) string { return filepath.Join(x.dest, filepath.FromSlash(name)) }

func (x *extractor) record(name string, sum []byte) {
	x.mu.Lock()
	x.files[name] = hex.EncodeToString(sum)
	x.mu.Unlock()
}

// writeStream writes a streamed file from its chunks, in order, hashing
// them. It takes every chunk the reader sends even after a failure, so the
// reader never waits on it; a file whose chunks stop short (the reader
// failed) is not recorded.
func (x *extractor) writeStream(j job) {
	var f *os.File
	if !x.failed.Load() {
		err := x.create(j.name, func(dir *atomicfs.Dir, base string) error {
			var err error
			f, err = dir.Root.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, j.perm)
			return err
		})
		if err != nil {
			x.fail(fmt.Errorf("archive: %w", err))
		}
	}
	sum := sha256.New()
	var got int64
	for c := range j.chunks {
		got += int64(len(c))
		if f != nil && !x.failed.Load() {
			sum.Write(c)
			if _, err := f.Write(c); err != nil {
				x.fail(fmt.Errorf("archive: %w", err))
			}
		}
		x.chunks <- c[:cap(c)]
	}
	if f == nil {
		return
	}
	if err := f.Close(); err != nil {
		x.fail(fmt.Errorf("archive: %w", err))
		return
	}
	if got == j.size && !x.failed.Load() {
		s := sum.Sum(nil)
		if j.want != nil && [32]byte(s) != *j.want {
			// Written, then refused: the extraction fails.
			x.fail(x.sumMismatch(j.name, s, j.want))
			return
		}
		x.record(j.name, s)
	}
}

// writeFile writes one buffered file; a variable so tests can make a
// writer fail.
var writeFile = writeSmallFile

func writeSmallFile(dir *atomicfs.Dir, name string, data []byte, perm os.FileMode) error {
	if err := dir.Create(name, data, perm); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

func (x *extractor) fail(err error) {
	x.mu.Lock()
	if x.werr == nil {
		x.werr = err
	}
	x.mu.Unlock()
	x.failed.Store(true)
	if failed := onWriterFailure; failed != nil {
		failed()
	}
}

// onWriterFailure, when set (tests only), runs once a writer failure is
// recorded: what starts after it is what the failure did not stop.
var onWriterFailure func()

// onBatch, when set (tests only), sees every batch a writer takes.
var onBatch func([]batchFile)

func (x *extractor) writerErr() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.werr
}

// stream hands a large file to a writer in chunks, in order, and reads
// them from the archive while the writer writes and hashes the previous
// ones. At most streamChunks chunks are in flight.
func (x *extractor) stream(name string, mkdirs []string, h *header, perm os.FileMode, idx int, want *[32]byte) error {
	x.flush()
	tok, err := x.token()
	if err != nil {
		return err
	}
	ch := make(chan []byte, streamChunks)
	x.jobs <- job{mkdirs: mkdirs, name: name, data: tok, perm: perm, size: h.size, chunks: ch, want: want}
	defer close(ch)
	for left := h.size; left > 0; {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		if x.failed.Load() {
			return errWriterFailed
		}
		c := <-x.chunks
		if c == nil {
			c = make([]byte, streamChunk)
		}
		c = c[:min(left, streamChunk)]
		if err := x.readFull(c, idx, h.name, "inside a file"); err != nil {
			x.chunks <- c[:cap(c)]
			return err
		}
		if x.zr != nil {
			// V2: a frame cut where none may be is refused before the
			// chunk past it is written.
			if err := x.checkSpan(x.spanStart, x.pos(), x.spanLarge, idx); err != nil {
				x.chunks <- c[:cap(c)]
				return err
			}
		}
		ch <- c
		left -= int64(len(c))
	}
	return x.skipPadding(h.size, idx, h.name)
}

// finish checks that the tree is what the archive declared, if it did,
// and that only zero padding follows the end marker, up to the end of the
// gzip member (whose CRC and length the gzip reader verifies). The padding
// is bounded by one tar record with a declaration, else by what is left
// of the byte limit.
func (x *extractor) finish() error {
	if d := x.decl; d != nil && (x.nfiles != d.Files || x.dirs != d.Dirs || x.total != d.Bytes) {
		return integrity(RuleDeclared, 0, "", "the archive declares %d files, %d directories and %d bytes, and holds %d, %d and %d", d.Files, d.Dirs, d.Bytes, x.nfiles, x.dirs, x.total)
	}
	budget := x.lim.MaxBytes - x.total
	if x.decl != nil {
		budget = tarRecord
	}
	buf := make([]byte, 64<<10)
	var pad int64
	for {
		n, err := x.tr.Read(buf)
		if !isZero(buf[:n]) {
			return integrity(RuleTrailingData, 0, "", "data after the end marker")
		}
		pad += int64(n)
		if pad > budget {
			return integrity(RuleTrailingData, 0, "", "more than %d bytes of padding after the end marker", budget)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return x.readErr(err, "after the end marker")
		}
	}
}

func (x *extractor) readFull(b []byte, idx int, entry, where string) error {
	if _, err := io.ReadFull(x.tr, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if x.src.err != nil {
				return fmt.Errorf("archive: reading the archive: %w", x.src.err)
			}
			return integrity(RuleTruncated, idx, entry, "the archive ends %s", where)
		}
		e := x.readErr(err, where)
		if ie, ok := e.(*Error); ok {
			ie.Index, ie.Entry = idx, entry
		}
		return e
	}
	return nil
}

func (x *extractor) skipPadding(size int64, idx int, entry string) error {
	pad := int(-size & 511)
	if pad == 0 {
		return nil
	}
	if _, err := x.tr.Discard(pad); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if x.src.err != nil {
				return fmt.Errorf("archive: reading the archive: %w", x.src.err)
			}
			return integrity(RuleTruncated, idx, entry, "the archive ends inside block padding")
		}
		return x.readErr(err, "inside block padding")
	}
	return nil
}

// readErr tells a failure of the source (an I/O error, returned as is)
// from a corrupt stream (an integrity error).
func (x *extractor) readErr(err error, where string) error {
	if x.src.err != nil {
		return fmt.Errorf("archive: reading the archive: %w", x.src.err)
	}
	if e, ok := err.(*Error); ok {
		return e // already said by the block-member reader
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return integrity(RuleTruncated, 0, "", "the archive ends %s", where)
	}
	return integrity(RuleGzip, 0, "", "corrupt gzip stream %s: %v", where, err)
}

// hashReader hashes and counts what it reads from r and keeps r's first
// error other than io.EOF.
type hashReader struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	err error
}

func (hr *hashReader) Read(p []byte) (int, error) {
	n, err := hr.r.Read(p)
	hr.h.Write(p[:n])
	hr.n += int64(n)
	if err != nil && err != io.EOF && hr.err == nil {
		hr.err = err
	}
	return n, err
}

func isZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func cstring(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// checksumOK verifies a header block's checksum, as the unsigned or (as
// some old writers did) signed sum of its bytes with the field as spaces.
func checksumOK(b *[512]byte) bool {
	stored, ok := parseNumeric(b[148:156])
	if !ok {
		return false
	}
	var u, s int64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		u += int64(c)
		s += int64(int8(c))
	}
	return stored == u || stored == s
}

// parseNumeric parses a tar numeric field: octal, space or NUL padded, or
// GNU base-256 (non-negative only).
func parseNumeric(b []byte) (int64, bool) {
	if len(b) > 0 && b[0]&0x80 != 0 {
		if b[0]&0x40 != 0 {
			return 0, false // negative
		}
		var v uint64
		for i, c := range b {
			if i == 0 {
				c &= 0x7f
			}
			if v>>56 != 0 {
				return 0, false
			}
			v = v<<8 | uint64(c)
		}
		if v > 1<<63-1 {
			return 0, false
		}
		return int64(v), true
	}
	s := strings.TrimLeft(string(b), " ")
	s = strings.TrimRight(s, " \x00")
	if s == "" {
		return 0, true
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '7' || v > (1<<63-1)>>3 {
			return 0, false
		}
		v = v<<3 | int64(c-'0')
	}
	return v, true
}

// parsePAX parses the records of an extended header ("<len> key=value\n").
// Only path and size matter; sparse files are refused; other keys are
// ignored as POSIX says. A record may not repeat a key.
func parsePAX(data []byte, idx int, entry string) (map[string]string, error) {
	recs := make(map[string]string)
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 || sp > 20 {
			return nil, integrity(RulePAX, idx, entry, "malformed record length")
		}
		n, err := strconv.Atoi(string(data[:sp]))
		if err != nil || n <= sp+2 || n > len(data) {
			return nil, integrity(RulePAX, idx, entry, "malformed record length %q", data[:sp])
		}
		rec := data[sp+1 : n]
		data = data[n:]
		if rec[len(rec)-1] != '\n' {
			return nil, integrity(RulePAX, idx, entry, "record does not end in a newline")
		}
		k, v, ok := strings.Cut(string(rec[:len(rec)-1]), "=")
		if !ok || k == "" {
			return nil, integrity(RulePAX, idx, entry, "record without key=value")
		}
		if _, dup := recs[k]; dup {
			return nil, integrity(RulePAX, idx, entry, "repeated key %q", k)
		}
		if strings.HasPrefix(k, "GNU.sparse.") {
			return nil, integrity(RuleEntryType, idx, entry, "sparse files are not accepted")
		}
		if k == "path" && v == "" {
			return nil, integrity(RulePAX, idx, entry, "empty path record")
		}
		recs[k] = v
	}
	return recs, nil
}
