package archive

import (
	"errors"
	"fmt"

	"piship.dev/piship/stages/stage/errcode"
)

// CodeIntegrity is the user-facing error code of a corrupt or hostile archive.
const CodeIntegrity = errcode.IntegrityFailed

// CodeInvalid is the code of a tree Write refuses to archive (a path an
// install would refuse, a symlink): the release is wrong, not an archive.
const CodeInvalid = errcode.ConfigInvalid

// Rule names the archive rule an entry or stream broke.
type Rule string

// The rules Extract enforces (and Write, for paths).
const (
	RuleGzip             Rule = "gzip"               // not a gzip stream, or a corrupt one (bad deflate data, CRC or length)
	RuleTruncated        Rule = "truncated"          // the stream ends inside an entry or before the end marker
	RuleChecksum         Rule = "header-checksum"    // a header block whose checksum does not match
	RuleHeader           Rule = "header"             // a malformed header: magic, numeric field, directory with content
	RuleEntryType        Rule = "entry-type"         // anything but a regular file or a directory (symlink, hardlink, device, fifo, sparse, GNU/global extensions)
	RulePAX              Rule = "pax"                // a malformed PAX extended header
	RulePAXSize          Rule = "pax-size"           // a PAX extended header over Limits.MaxPAX
	RulePathLength       Rule = "path-length"        // a path over MaxPathBytes bytes or MaxDepth segments, or a segment over MaxSegmentBytes
	RuleEmptyPath        Rule = "empty-path"         // an empty path or an empty segment ("a//b")
	RuleAbsolute         Rule = "absolute-path"      // a path starting with "/"
	RuleDotSegment       Rule = "dot-segment"        // a "." or ".." segment
	RuleBackslash        Rule = "backslash"          // a "\" anywhere in the path
	RuleDrive            Rule = "drive-prefix"       // a path starting with a drive letter and ":" ("C:x")
	RuleControl          Rule = "control-char"       // a byte below 0x20 or 0x7f, or a C1 control character
	RuleEncoding         Rule = "encoding"           // a path that is not valid UTF-8
	RuleReservedName     Rule = "reserved-name"      // CON, PRN, AUX, NUL, COM0-9, LPT0-9 (and COM¹²³/LPT¹²³), with or without extension, any case
	RuleReservedChar     Rule = "reserved-char"      // one of < > : " | ? *
	RuleDuplicate        Rule = "duplicate"          // a path seen before (as a file or a directory)
	RuleCollision        Rule = "name-collision"     // two paths that fold to one (case or Unicode normalisation: "A.js" and "a.js"), see Names
	RuleTrailingDotSpace Rule = "trailing-dot-space" // a segment ending in "." or " " (Windows drops them)
	RuleTrailingData     Rule = "trailing-data"      // anything but zero padding after the end marker, or after the gzip member
	RuleMaxBytes         Rule = "max-bytes"          // total file content over Limits.MaxBytes
	RuleDeclared         Rule = "declared"           // a malformed declaration, or an entry or byte beyond what the archive declares, or fewer (see Declared)
	RuleMaxEntries       Rule = "max-entries"        // more files and directories (implied parents included) than Limits.MaxEntries

	// V2 (zst.go) only.
	RuleZstd      Rule = "zstd"       // not a zstd frame, a corrupt one, or one outside the format: no content size or checksum, a dictionary, a window or content size over the bounds, an empty frame
	RuleSeekTable Rule = "seek-table" // the seek table is missing, not last, followed by bytes, or disagrees with the frames (count, compressed or decompressed size); any other skippable frame
	RuleFrameCut  Rule = "frame-cut"  // a frame that does not start at an entry boundary (inside a file's data only every FrameSize bytes from a file larger than a frame), or a first frame holding more than the declaration
	RuleIndex     Rule = "index"      // a V2 declaration without an index, or an index entry that disagrees with its file: path, frame, offset, size, SHA-256
)

// Error is a refused archive (Code CodeIntegrity) or, from Write, a tree
// that cannot be archived (Code CodeInvalid, Index 0); Rule says which rule;
// Entry is the entry's path as the archive spells it ("" for stream-level
// faults) and Index its position among the file and directory entries
// (1-based; PAX headers are not counted; 0 when not about one entry).
type Error struct {
	Code   string
	Rule   Rule
	Entry  string
	Index  int
	Detail string
}

func (e *Error) Error() string {
	if e.Index == 0 && e.Entry != "" {
		return fmt.Sprintf("%s: path %q refused (%s): %s", e.Code, e.Entry, e.Rule, e.Detail)
	}
	if e.Entry == "" && e.Index == 0 {
		return fmt.Sprintf("%s: archive refused (%s): %s", e.Code, e.Rule, e.Detail)
	}
	if e.Entry == "" {
		return fmt.Sprintf("%s: archive refused at entry %d (%s): %s", e.Code, e.Index, e.Rule, e.Detail)
	}
	return fmt.Sprintf("%s: archive entry %d %q refused (%s): %s", e.Code, e.Index, e.Entry, e.Rule, e.Detail)
}

// ErrorCode returns the code (errcode.Coder).
func (e *Error) ErrorCode() string { return e.Code }

var _ errcode.Coder = (*Error)(nil)

// IsIntegrity reports whether err is (or wraps) a refused archive, and returns it.
func IsIntegrity(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeIntegrity {
		return e, true
	}
	return nil, false
}

// ErrDestNotEmpty is returned (wrapped) by Extract when the destination
// exists and is not an empty directory. It is not an integrity failure:
// the archive was not read.
var ErrDestNotEmpty = errors.New("archive: destination exists and is not an empty directory")

func integrity(rule Rule, index int, entry, format string, args ...any) *Error {
	return &Error{Code: CodeIntegrity, Rule: rule, Entry: entry, Index: index, Detail: fmt.Sprintf(format, args...)}
}
