// Package delta makes and applies the delta between two release
// directories: what an update downloads instead of the whole archive when
// it has the release the delta starts from. It is Velopack's idea, per
// file: every file of the new release that the installed one does not
// hold at the same path is a copy of an installed file, or a zstd frame
// that `zstd -d --patch-from=OLD` decodes with installed bytes as its
// dictionary.
//
// # Trees
//
// ScanTree lists a release directory (release.json, checksums.txt,
// sbom, licenses/, payload/ ... whatever it holds) as a Tree: every
// regular file (slash path, size, executable bit, sha256) and every
// directory, each list sorted by the bytes of its paths, the files hashed
// on all cores. It refuses (INTEGRITY_FAILED, ReasonTree) a symlink, a
// special file and any path stages/archive's path rules refuse
// (archive.Names: the one copy of those rules), so a tree is one an
// archive could carry. Tree.Digest is the sha256 (lowercase hex) of
//
//	piship-tree/v1\n
//	f <x|-> <sha256> <size> <path>\n     one per file, in Files' order (x: executable; size in decimal)
//	d <path>\n                           one per directory, in Dirs' order
//
// (no path may hold a newline or any other control character).
//
// # What a delta holds
//
// Write compares the tree of fromDir (the base) with the tree of toDir
// (the result). Per file of the result:
//
//   - same path, same bytes and same executable bit in the base: kept,
//     listed nowhere (the header never lists unchanged files: Pi's 16,000
//     would alone take half a megabyte of digests);
//   - the same bytes at some path of the base: a copy op {path, from},
//     from being the path itself when only the executable bit changed,
//     else the first base path (by bytes) that holds them;
//   - otherwise its bytes compressed into one zstd frame by
//     klauspost/compress at SpeedBestCompression, with a raw dictionary
//     of dictionary ID 0 (so the frame names none, and Debian's `zstd -d
//     --patch-from=DICT` decodes it): a patch op whose base is the base's
//     file of the same path when there is one (not empty); for a file new
//     at its path (a renamed bundle chunk: chunks change names every
//     build) the base's files of the same directory and extension, those
//     gone from the result first (the renamed chunk's old self), each
//     group sorted by path, taken while they fit in MaxDictBytes (8 MiB)
//     and concatenated in that order; with no such file a new op, whose
//     frame has no dictionary. The encoder's window covers the
//     dictionary and the file (the next power of two of their size, at
//     least 4 MiB, at most MaxWindow, 128 MiB: what `zstd -d` decodes
//     without --memory); a file that does not fit in it with its
//     dictionary is a new op. No
//     frame carries a checksum (the op's sha256 is stronger); an empty
//     file is a frame of zero bytes of content.
//
// A base file missing from the result is a delete op. Directories: the
// result's directories the base lacks are listed as mkdirs, the base's
// the result lacks as rmdirs, so an empty directory comes and goes with
// the release. Every op says what its file must be (size, executable
// bit, sha256) and every source it reads (a copy's from, a patch's base)
// the sha256 it expects, so a base that differs is caught before a patch
// is decoded. The same trees give the same bytes whatever the core count.
//
// # Format (piship-delta/v1), byte by byte
//
//	offset 0   16 bytes  the magic "piship-delta/v1\n" (Magic; the schema and a newline)
//	offset 16   4 bytes  H: the header frame's length, big-endian unsigned (at most MaxHeaderBytes, 16 MiB)
//	offset 20   H bytes  the header: one zstd frame (no dictionary, no checksum) of UTF-8 JSON (at most MaxHeaderJSON, 64 MiB)
//	offset 20+H          the data: each patch and new op's frame, Data bytes each, in op order, nothing between
//	then                 the end of the stream: any further byte is refused (ReasonTrailing)
//
// The header's JSON is one object, its fields in this order (Header;
// encoding/json of the struct, so the same delta has the same bytes):
//
//	{"schema":"piship-delta/v1",
//	 "meta":{"fromVersion":"1.5.2","toVersion":"1.6.0","target":"linux-x64"},
//	 "fromTree":"<Tree.Digest of the base>","toTree":"<Tree.Digest of the result>",
//	 "files":16012,"dirs":2304,"bytes":150000000,        the result's files, directories, bytes
//	 "kept":15500,"copied":12,"patched":480,"added":20,"deleted":9,
//	 "dataBytes":1234567,                                the bytes after the header: the sum of the ops' data
//	 "mkdirs":["payload/new"],"rmdirs":["payload/old"],  sorted, no repeats
//	 "ops":[                                             sorted by path, one per path
//	  {"op":"copy","path":"a/x.js","from":{"path":"a/y.js","sha256":"…"},"size":12,"exec":true,"sha256":"…"},
//	  {"op":"delete","path":"a/y.js"},
//	  {"op":"new","path":"b/n.bin","data":812,"size":4000,"sha256":"…"},
//	  {"op":"patch","path":"c/app.js","base":[{"path":"c/app.js","sha256":"…"}],"data":301,"size":60000,"sha256":"…"}]}
//
// exec is left out when false, data and size when 0; a delete op carries only its
// path. Kept files are those of the base that no op names: kept + copied
// + patched + added = files. Unknown fields, a second JSON value, a
// digest that is not 64 lowercase hex digits, an unsorted or repeated op,
// an op missing its kind's fields or holding another kind's, counts that
// do not add up: all refused.
//
// # Applying a delta
//
// Apply(r, installed, installedTree, dest) builds the result in dest
// (which must not exist, or be empty: archive.ErrDestNotEmpty otherwise)
// from the installed release directory, which it only reads, through an
// os.Root on each. Before anything is written it reads the header
// (ReadHeader: bounded, every path through archive's rules; an update
// that read it already passes it as ApplyOptions.Header, taken when the
// stream's header bytes hash the same), checks that
// installedTree (what ScanTree gave just before) has digest FromTree and
// holds every op's source with its sha256, and that the tree the ops make
// of it has digest ToTree, with every path of that tree under archive's
// rules together (no two fold to one) and in a directory of the result
// (no file under a file). It then makes the directories and writes the
// files on Writers writers (8 by default), each directory opened once on
// each side from its parent's handle (atomicfs.DirCache): a kept or
// copied file is read from the installed tree up to its listed size,
// hashed, and written only when it is the listed bytes (never linked:
// the installed release stays independent of the new one; up to 4 MiB in
// one read and one write through the directories' descriptors, larger
// ones streamed, sent to the writers before anything else so that Pi's
// 120 MB Node is not the last file written); a patch's
// dictionary is read from the installed tree and checked against the
// op's sha256 before its frame is decoded; every decode stops at the
// op's size plus one byte, so no declared size is trusted, and a frame
// whose window is over the one its file and dictionary need (the
// encoder's rule above) is refused before the decoder allocates it. Op data up to
// 4 MiB is read into memory and handed to a writer; larger data is
// decoded as it is read. Every file is hashed while it is written, and
// the tree written must have digest ToTree. Apply returns what
// archive.Extract returns for the tree (Files, Bytes, Dirs, Executables;
// SHA256 and Size are those of the delta's bytes, every byte read from r;
// Declared is nil), so an install's checks run unchanged.
//
// # Refusals
//
// A malformed or lying delta is an *Error with code INTEGRITY_FAILED and
// a Reason (like archive.Rule): ReasonFormat, ReasonTruncated,
// ReasonTrailing, ReasonBounds (a size or count over its bound, or data
// that decodes to more or fewer bytes than its op says), ReasonPath
// (Rule: archive's rule), ReasonDuplicate, ReasonPatch (a frame that
// does not decode), ReasonResult (a file or the tree not what the header
// says) and ReasonBase: the installed tree is not the delta's base (its
// digest is not FromTree, a source is missing or holds other bytes, a
// kept file is not what the listing says). IsBase tells the caller to
// fall back to the full archive. On any error dest holds what was written
// so far, inside dest only, and the caller removes it; installed is
// never written.
//
// # Making a delta from archives
//
// FromArchives extracts two release archives with archive.Extract (the
// hardened reader) into a temporary directory beside the delta's path,
// writes the delta through a temporary sibling and a rename, and removes
// the extracted trees. Write holds the patches in memory until they are
// written after the header (the header says each one's length).
package delta
