// Package archive writes and extracts the release archive: a gzip-compressed
// ustar stream of a payload directory.
//
// Write (and Create, which adds a temp sibling and a rename) produces a
// reproducible archive: first a declaration (a PAX global header whose
// comment record is {"schema":"piship-archive/v1","files","dirs","bytes"},
// see Declared; tar ignores it), then entries sorted by the bytes of their path ("a/b",
// directories with a trailing "/", no "./" prefix), ustar headers with PAX
// records only where ustar cannot say it (paths over 256 bytes or not
// splittable, non-ASCII paths, sizes of 8 GiB and more), uid/gid 0, no
// user or group names, one caller-chosen mtime, modes 0644/0755, and a gzip
// header with no name, no comment, MTIME 0 and OS 255. The SHA-256 and
// size of the compressed stream are computed as it is written. Identical
// trees give identical bytes whatever the file system order, umask, owner,
// timezone, locale or number of cores. Write refuses symlinks, special
// files and any path that Extract would refuse (CONFIG_INVALID), so a
// release can never ship an archive that cannot be installed, on any
// target: the path rules (path.go, Names) are one copy that Write,
// Extract and stages/home's directory install call.
//
// The gzip stream is made of block members (see pgzip.go): every 1 MiB of
// the tar stream is compressed on its own goroutine from an empty
// dictionary into a gzip member of its own, whose header carries (in an
// extra subfield 'P' 'Z', as BGZF does) its length and its uncompressed
// length. Concatenated members are one ordinary gzip stream to gunzip and
// tar -xz; the lengths let Extract find every member without inflating
// the previous one. The output does not depend on the core count; the
// cost is 0.2-0.3% in size.
//
// Extract reads an archive once, from any io.Reader, straight into an empty
// destination. It hashes the compressed stream and every file while
// reading. A stream of block members is read in order by one goroutine
// (which hashes it) and inflated on all cores, members in flight bounded,
// each by inflate.go's whole-buffer decoder straight into a buffer of its
// declared length; any other gzip stream (one member) is inflated serially
// by klauspost/compress. Files up to
// 1 MiB are buffered and written by parallel writers (8 by default), in
// batches of one directory (the files of a directory that follow each
// other, up to 64 or a buffer's worth, on one writer: writers then create
// in different directories at once instead of queueing on one
// directory's lock), larger ones handed to a writer in 256 KiB chunks, in
// order; the writers
// also make the directories, so the tar parser only parses, checks and
// hands out. Every entry is checked before anything is written for it, and
// all writes go through an os.Root opened on the destination, so nothing
// can land outside it. Corrupt or hostile archives fail with an *Error
// whose Code is INTEGRITY_FAILED and whose Rule and Entry say what was
// refused. Beyond the rules of the reference, paths are bounded
// (MaxPathBytes, MaxDepth, MaxSegmentBytes), must be valid UTF-8 without
// C1 controls, may not end a segment in a dot or a space (Windows drops
// them), and no two may fold to one path (Unicode case folding and
// normalisation: "A.js" beside "a.js", "é" beside "e"+U+0301, one file
// on macOS and Windows); implied parent directories count toward
// Limits.MaxEntries, so no archive can make the extractor do unbounded
// work. An archive that declares itself is held to its declaration: an
// entry or a byte beyond it is refused on the entry's header, before
// anything of it is written, and fewer than declared is refused at the
// end; Open gives a caller the expanded size before it extracts
// (install's free space check), from the read the extraction goes on with. An archive without one (every archive of
// a piship before the declaration) is read as before, under Limits'
// ceiling (2 GiB, 200,000 entries).
package archive
