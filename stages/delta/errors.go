package delta

import (
	"errors"
	"fmt"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/stage/errcode"
)

// Reason names why a delta (or a tree) was refused, as archive.Rule names
// a refused archive entry.
type Reason string

// The reasons. Every refusal has Code INTEGRITY_FAILED.
const (
	ReasonFormat    Reason = "format"    // not a delta: the magic, the header's zstd frame or its JSON (an unknown field, a wrong schema, a malformed digest or op)
	ReasonTruncated Reason = "truncated" // the stream ends inside the header or the data
	ReasonTrailing  Reason = "trailing"  // bytes after the last op's data
	ReasonBounds    Reason = "bounds"    // a size or count over its bound (MaxHeaderBytes, MaxHeaderJSON, MaxOps, MaxFileBytes, MaxPatchBytes, archive.DefaultMaxBytes), or data that decodes to more or fewer bytes than its op says
	ReasonPath      Reason = "path"      // a path archive's rules refuse (Rule says which), or a file path that is also a directory or under a file
	ReasonDuplicate Reason = "duplicate" // two ops, or two directory entries, on one path
	ReasonBase      Reason = "base"      // the installed tree is not the delta's base: its digest is not FromTree, an op's source is missing or holds other bytes, a kept file differs from the listing
	ReasonPatch     Reason = "patch"     // a patch's zstd data does not decode against its dictionary
	ReasonResult    Reason = "result"    // a written file's sha256, or the written tree's digest, is not what the delta says
	ReasonTree      Reason = "tree"      // ScanTree: a symlink, a special file or a path archive's rules refuse
	ReasonMeta      Reason = "meta"      // Write: a Meta field over MaxMetaBytes or holding a control character
)

// Error is a refused delta or tree: Code is INTEGRITY_FAILED, Reason says
// why, Path names the file (when about one), Rule is the archive path
// rule broken (ReasonPath, ReasonTree).
type Error struct {
	Reason Reason
	Path   string
	Rule   archive.Rule
	Detail string
}

func (e *Error) Error() string {
	what := "delta refused"
	if e.Reason == ReasonTree {
		what = "release tree refused"
	}
	r := string(e.Reason)
	if e.Rule != "" {
		r += ": " + string(e.Rule)
	}
	if e.Path != "" {
		return fmt.Sprintf("%s: %s at %q (%s): %s; %s", errcode.IntegrityFailed, what, e.Path, r, e.Detail, e.hint())
	}
	return fmt.Sprintf("%s: %s (%s): %s; %s", errcode.IntegrityFailed, what, r, e.Detail, e.hint())
}

// hint says what to do.
func (e *Error) hint() string {
	switch e.Reason {
	case ReasonBase:
		return "install the full release archive instead (the installed release is not the one the delta was made from)"
	case ReasonTree:
		return "a release directory holds only regular files and directories whose names every target can hold: rebuild the release, or repair the installed one (piship repair ID)"
	case ReasonMeta:
		return "give versions and a target of printable characters"
	}
	return "do not use this delta: fetch it again, or install the full release archive"
}

// ErrorCode returns INTEGRITY_FAILED (errcode.Coder).
func (e *Error) ErrorCode() string { return errcode.IntegrityFailed }

var _ errcode.Coder = (*Error)(nil)

// IsRefused reports whether err is (or wraps) a refused delta or tree, and
// returns it.
func IsRefused(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// IsBase reports whether err says the installed tree is not the delta's
// base (ReasonBase): the caller installs the full archive instead.
func IsBase(err error) bool {
	e, ok := IsRefused(err)
	return ok && e.Reason == ReasonBase
}

func refuse(reason Reason, path, format string, args ...any) *Error {
	return &Error{Reason: reason, Path: path, Detail: fmt.Sprintf(format, args...)}
}

// unavailable is a file the delta's work cannot read or write: not the
// delta's fault.
func unavailable(format string, args ...any) error {
	return errcode.Newf(errcode.ConfigUnavailable, "delta: "+format, args...)
}
