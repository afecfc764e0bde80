package archive

import (
	"archive/tar"
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/tracing/phase"
)

// DefaultLevel is the gzip level used when Options.Level is 0: level 5,
// which is also what klauspost/compress picks for DefaultCompression.
// Measured on the real Pi runtime (19,634 files, 150 MB of content) on the
// 2-core machine, with the parallel compressor: level 1 gives 40.6 MB in
// 1.16 s, 3 gives 38.3 MB in 1.37 s, 5 gives 35.0 MB in 1.10 s, 6 gives
// 34.4 MB in 1.57 s, 7 gives 34.1 MB in 3.1 s, 9 gives 33.2 MB in 7.7 s
// (serially: 1.39 s, 2.32 s, 2.98 s for levels 1, 5, 6). Level 5 gives
// 14% smaller downloads than BestSpeed at about the same cost, since
// reading 19,634 files is the serial part; past it each percent costs
// seconds. Inflating on two cores (the inflate-ms BenchmarkWriteLevel
// reports) differs between levels 5, 6 and 7 by less than this machine's
// run-to-run noise: on the bundled Pi payload 59, 68, 70 ms in one run and
// 57, 50, 48 ms in another; unbundled 185, 151, 168 ms.
// BenchmarkWriteLevel with PISHIP_ARCHIVE_BENCH_TREE set repeats this.
const DefaultLevel = 5

// Options for Create and Write.
type Options struct {
	// MTime is the tar mtime of every entry, in Unix seconds:
	// SOURCE_DATE_EPOCH or 0 (the caller decides). It must not be negative.
	MTime int64
	// Level is V1's gzip level, 1-9; 0 means DefaultLevel. V2 has one
	// level (ZstdLevel): Level must be 0.
	Level int
	// Format is the archive format; "" means V2.
	Format Format
}

// Result describes the archive written.
type Result struct {
	SHA256 string // lowercase hex SHA-256 of the compressed stream
	Size   int64  // bytes of the compressed stream
	Files  int    // regular files archived
	Dirs   int    // directories archived (the root itself is not an entry)
}

// entry is one item of the walked tree.
type entry struct {
	name string // archive path; directories end in "/"
	abs  string
	dir  bool
	exec bool
	size int64
}

// Write walks root (directories and regular files only; a symlink or
// special file is an error naming it) and writes the archive of it, in
// opts.Format, to w. See the package documentation for the exact format. The SHA-256
// and size of the compressed stream are computed while it is written.
func Write(ctx context.Context, w io.Writer, root string, opts Options) (Result, error) {
	if opts.MTime < 0 {
		return Result{}, fmt.Errorf("archive: negative mtime %d", opts.MTime)
	}
	if opts.Level < 0 || opts.Level > 9 {
		return Result{}, fmt.Errorf("archive: gzip level %d is not 1-9 (or 0 for the default)", opts.Level)
	}
	switch opts.Format {
	case "":
		opts.Format = V2
	case V1, V2:
	default:
		return Result{}, errFormat(opts.Format)
	}
	if opts.Format == V2 && opts.Level != 0 {
		return Result{}, fmt.Errorf("archive: a gzip level (%d) for a %s archive, which has one zstd level", opts.Level, V2)
	}
	level := opts.Level
	if level == 0 {
		level = DefaultLevel
	}
	entries, err := walk(ctx, root)
	if err != nil {
		return Result{}, err
	}

	// The declaration first: what follows, so an install knows the
	// expanded size before it writes anything (see Declared).
	var decl Declared
	for _, e := range entries {
		if e.dir {
			decl.Dirs++
		} else {
			decl.Files++
			decl.Bytes += e.size
		}
	}
	if opts.Format == V2 {
		return writeV2(ctx, w, entries, decl, opts)
	}
	hw := &hashWriter{w: bufio.NewWriterSize(w, 256<<10), h: sha256.New()}
	gz := newPGZWriter(hw, level)
	tw := tar.NewWriter(gz)
	buf := make([]byte, 256<<10)
	var res Result
	if err := tw.WriteHeader(declarationHeader(decl)); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := tw.WriteHeader(tarHeader(e.name, e.dir, e.exec, e.size, opts.MTime)); err != nil {
			return Result{}, fmt.Errorf("archive: %s: %w", e.abs, err)
		}
		if e.dir {
			res.Dirs++
			continue
		}
		res.Files++
		if err := copyFile(tw, e, buf); err != nil {
			return Result{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	if err := gz.Close(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	if err := hw.w.(*bufio.Writer).Flush(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	res.SHA256 = hex.EncodeToString(hw.h.Sum(nil))
	res.Size = hw.n
	return res, nil
}

// declarationHeader is the PAX global extended header carrying d: its
// name (GlobalHead.0.0), mode, owner and times are archive/tar's fixed
// ones, so its bytes are a function of d.
func declarationHeader(d Declared) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": d.comment()}}
}

// tarHeader returns the tar header of one entry. The format is left to
// archive/tar, which picks ustar whenever ustar can represent the header
// (including the 155+100 prefix split of long paths) and PAX otherwise;
// PAX records are sorted and the PAX header block itself has fixed fields
// (mode 0, uid/gid 0, mtime 0), so the output is a function of the entry.
func tarHeader(name string, dir, exec bool, size, mtime int64) *tar.Header {
	h := &tar.Header{
		Name:    name,
		Mode:    0o644,
		ModTime: time.Unix(mtime, 0),
	}
	switch {
	case dir:
		h.Typeflag = tar.TypeDir
		h.Mode = 0o755
	default:
		h.Typeflag = tar.TypeReg
		h.Size = size
		if exec {
			h.Mode = 0o755
		}
	}
	return h
}

// copyFile copies exactly e.size bytes of e into tw and fails if the file
// changed size while it was archived.
func copyFile(tw io.Writer, e entry, buf []byte) error {
	f, err := os.Open(e.abs)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	n, err := io.CopyBuffer(tw, io.LimitReader(f, e.size), buf)
	if err != nil {
		return fmt.Errorf("archive: %s: %w", e.abs, err)
	}
	if n != e.size {
		return fmt.Errorf("archive: %s shrank while it was archived (%d of %d bytes)", e.abs, n, e.size)
	}
	if m, _ := f.Read(buf[:1]); m != 0 {
		return fmt.Errorf("archive: %s grew while it was archived", e.abs)
	}
	return nil
}

// walk lists root's tree, sorted by the bytes of the archive paths.
func walk(ctx context.Context, root string) ([]entry, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("archive: %s is not a directory", root)
	}
	var entries []entry
	names := NewNames()
	var visit func(abs, rel string) error
	visit = func(abs, rel string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		des, err := os.ReadDir(abs)
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		for _, d := range des {
			name := rel + d.Name()
			p := filepath.Join(abs, d.Name())
			if rule, detail := names.check(name); rule != "" {
				return &Error{Code: CodeInvalid, Rule: rule, Entry: name, Detail: fmt.Sprintf("%s, in %s: every install would refuse it, on every target", detail, root)}
			}
			switch t := d.Type(); {
			case t.IsDir():
				entries = append(entries, entry{name: name + "/", abs: p, dir: true})
				if err := visit(p, name+"/"); err != nil {
					return err
				}
			case t.IsRegular():
				info, err := d.Info()
				if err != nil {
					return fmt.Errorf("archive: %w", err)
				}
				if !info.Mode().IsRegular() { // replaced since ReadDir
					return fmt.Errorf("archive: %s is not a regular file", p)
				}
				entries = append(entries, entry{name: name, abs: p, exec: info.Mode().Perm()&0o111 != 0, size: info.Size()})
			case t&fs.ModeSymlink != 0:
				return fmt.Errorf("archive: %s is a symlink: only regular files and directories can be archived", p)
			default:
				return fmt.Errorf("archive: %s is a special file (%s): only regular files and directories can be archived", p, t)
			}
		}
		return nil
	}
	if err := visit(root, ""); err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.name, b.name) })
	return entries, nil
}

// hashWriter hashes and counts what it forwards to w.
type hashWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (hw *hashWriter) Write(p []byte) (int, error) {
	hw.h.Write(p)
	n, err := hw.w.Write(p)
	hw.n += int64(n)
	return n, err
}

// Create writes the archive of root to path through a temporary sibling
// and a rename, so path never holds a partial archive, and returns Write's
// result. The file is created with mode 0644. It is not fsynced: like every
// release output but the receipt, it is rebuilt rather than recovered.
func Create(ctx context.Context, path, root string, opts Options) (res Result, err error) {
	// Compressing the tree is the archive stage's whole cost.
	ctx, ph := phase.Start(ctx, "archive write")
	defer func() {
		ph.SetInt("piship.archive.bytes", res.Size)
		ph.SetInt("piship.archive.files", int64(res.Files))
		ph.End(err)
	}()
	f, err := atomicfs.Create(path, 0o644, atomicfs.Options{})
	if err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	defer f.Abort() // nothing once committed
	if res, err = Write(ctx, f.File, root, opts); err != nil {
		return Result{}, err
	}
	if err = f.Commit(); err != nil {
		return Result{}, fmt.Errorf("archive: %w", err)
	}
	return res, nil
}
