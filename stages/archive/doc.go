// Package archive writes and extracts the release archive: a ustar stream
// of a payload directory, compressed in one of two formats (Format): V2,
// piship-archive/v2, a ".tar.zst" of independent zstd frames with a file
// index (what Write writes by default and releases ship), or V1,
// piship-archive/v1, a ".tar.gz" of gzip block members (still written
// on request, read for ever). Readers tell them apart by their first
// bytes (gzip 1f 8b, zstd 28 b5 2f fd), never by name; FormatOfName and
// Format.Ext are the one rule for names; NewTarReader gives the tar
// stream of either to a reader of a file or two.
//
// Write (and Create, which adds a temp sibling and a rename) produces a
// reproducible archive: first a declaration (a PAX global header whose
// comment record is {"schema":"piship-archive/v1","files","dirs","bytes"}
// in V1, see Declared; tar ignores it), then entries sorted by the bytes of their path ("a/b",
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
// V2, byte by byte. The tar stream is V1's, entry for entry, but for the
// declaration's comment: {"schema":"piship-archive/v2","files":F,"dirs":D,
// "bytes":B,"index":[[path,frame,offset,size,sha256],...]}, one array per
// regular file in archive order: its path (a JSON string), the frame
// holding its header (where its data starts), the offset of its first
// byte from the start of that frame's decompressed bytes, its size, its
// lowercase hex SHA-256; the index is the last key, counts are plain
// integers. The stream is cut into frames: frame 0 holds the
// declaration alone (its header block, content and padding), so the
// index's own length moves no offset; then each frame takes whole entries
// (an entry: its PAX header if any, its header block, its data and
// padding) while they fit in FrameSize (4 MiB) of tar bytes; an entry
// larger than FrameSize starts a frame and is cut every FrameSize bytes
// from its start, and the entry after it starts a new frame; the end
// marker (two zero blocks) is placed as an entry of 1024 bytes (planV2).
// Each frame is one zstd frame (RFC 8878) encoded on its own by
// klauspost/compress's EncodeAll at ZstdLevel, with Frame_Content_Size
// and a content checksum, no dictionary, a window of at most 8 MiB;
// frames are encoded on all cores and written in order, so the bytes
// depend only on the tree, the mtime and the level. Last comes the seek
// table of the zstd seekable format, a skippable frame: magic 5e 2a 4d 18,
// its length (8 x frames + 9, little-endian uint32), then per frame its
// compressed and decompressed sizes (little-endian uint32 each, frame 0
// first), then the number of frames (uint32), a descriptor byte 0 (no
// checksums) and the magic b1 ea 92 8f. zstd -dc skips it: zstd -dc
// x.tar.zst | tar -x extracts the tree. Write hashes every file before it
// writes (the index comes first) and again as it archives it, and fails
// if a file changed in between.
//
// Extract of V2: one goroutine reads the stream in order and finds each
// frame's end from its frame header and block headers (zstread.go),
// refusing a frame without content size or checksum, with a dictionary,
// a reserved bit or block type, a window or content size over the bounds
// (8 MiB + FrameSize; 64 MiB + 1 KiB for frame 0), and any skippable
// frame but the seek table, which must be last, match every frame's
// sizes and their count, and be followed by nothing; frames are decoded
// on all cores (a shared zstd.Decoder's DecodeAll into a buffer of the
// declared content size, at most min(2 x GOMAXPROCS, 8) in flight) and
// fed in order to the same tar parser and writers as V1. Every V1 rule
// holds; besides (Rule*): the first header must be the declaration, with
// an index, alone in frame 0 (RuleIndex, RuleFrameCut); every file's
// header must match its index entry's path, size, frame and offset before
// anything of it is read (RuleIndex); no frame may start inside an entry
// but every FrameSize bytes inside one larger than a frame
// (RuleFrameCut, checked as each entry ends, and as each chunk of a
// streamed file is read, before it is written); a file whose bytes do not
// hash to its index entry is refused (RuleIndex) before it is written
// when it is up to SmallFile, once written (failing the extraction) when
// streamed. A lying seek table is found at the end (RuleSeekTable).
//
// V1's gzip stream is made of block members (see pgzip.go): every 1 MiB of
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
