// Package archive writes and extracts the release archive: a gzip-compressed
// ustar stream of a payload directory.
//
// Write (and Create, which adds a temp sibling and a rename) produces a
// reproducible archive: entries sorted by the bytes of their path ("a/b",
// directories with a trailing "/", no "./" prefix), ustar headers with PAX
// records only where ustar cannot say it (paths over 256 bytes or not
// splittable, non-ASCII paths, sizes of 8 GiB and more), uid/gid 0, no
// user or group names, one caller-chosen mtime, modes 0644/0755, and a gzip
// header with no name, no comment, MTIME 0 and OS 255. The SHA-256 and
// size of the compressed stream are computed as it is written. Identical
// trees give identical bytes whatever the file system order, umask, owner,
// timezone, locale or number of cores. Write refuses symlinks, special
// files and any path that Extract would refuse, so a release can never
// ship an archive that cannot be installed.
//
// The deflate stream is compressed in parallel: 1 MiB blocks, each by a
// fresh klauspost/compress flate writer primed with the previous 32 KiB,
// joined by sync flushes into one ordinary gzip member (see pgzip.go). On
// two cores this halves the time of the stage for about 0.01% more bytes;
// the output does not depend on the core count.
//
// Extract reads an archive once, from any io.Reader, straight into an empty
// destination. It hashes the compressed stream and every file while
// reading; files up to 1 MiB are buffered and written by parallel writers
// (8 by default), larger ones are streamed in order by the reader. Every
// entry is checked before anything is written for it, and all writes go
// through an os.Root opened on the destination, so nothing can land
// outside it. Corrupt or hostile archives fail with an *Error whose Code is
// INTEGRITY_FAILED and whose Rule and Entry say what was refused. Beyond
// the rules of the reference, paths are bounded (MaxPathBytes, MaxDepth),
// must be valid UTF-8 without C1 controls, and implied parent directories
// count toward Limits.MaxEntries, so no archive can make the extractor do
// unbounded work.
package archive
