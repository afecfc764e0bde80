package tuf

import (
	"errors"
	"fmt"

	"piship.dev/piship/stages/stage/errcode"
)

// The error codes users see (declared in stages/stage/errcode).
const (
	CodeConfigInvalid = errcode.ConfigInvalid
	CodeUpdateFailed  = errcode.UpdateFailed
)

// Reason says which TUF check refused an update (Error.Reason), so the
// CLI and tests tell the attacks apart without reading messages.
type Reason string

// The reasons of UPDATE_FAILED.
const (
	ReasonRootPin     Reason = "root-pin"      // the initial root is not the one the lock or --expect-root pins: another distribution's repository
	ReasonSignatures  Reason = "signatures"    // a role is not signed by a threshold of its trusted keys (bad signature, untrusted key, key below threshold)
	ReasonRootChain   Reason = "root-chain"    // root N+1 is not signed by the thresholds of root N and of itself, or skips a version
	ReasonRollback    Reason = "rollback"      // a timestamp, snapshot or targets version below the trusted one
	ReasonMixAndMatch Reason = "mix-and-match" // a snapshot or targets version other than the one its parent names
	ReasonExpired     Reason = "expired"       // a role's metadata expired (indefinite freeze)
	ReasonTooLarge    Reason = "too-large"     // metadata or an archive beyond its bound or signed length (endless data)
	ReasonIntegrity   Reason = "integrity"     // a file's length or hashes are not what its parent signs
	ReasonNoRelease   Reason = "no-release"    // the channel has no release for the target
	ReasonDowngrade   Reason = "downgrade"     // the newest release is older than the active version
	ReasonMalformed   Reason = "malformed"     // metadata go-tuf cannot read, or a target piship did not make
	ReasonFetch       Reason = "fetch"         // the repository could not be read (see the wrapped channel error)
)

// Error is a refusal with the code users see. Error() is "CODE: message".
type Error struct {
	Code   string
	Reason Reason
	Msg    string
	Err    error // go-tuf's error or the channel source's, for errors.As
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code (errcode.Coder).
func (e *Error) ErrorCode() string { return e.Code }

var _ errcode.Coder = (*Error)(nil)

// HasReason reports whether err is (or wraps) an *Error with reason r.
func HasReason(err error, r Reason) bool {
	var e *Error
	return errors.As(err, &e) && e.Reason == r
}

func configErr(format string, args ...any) *Error {
	return &Error{Code: CodeConfigInvalid, Msg: fmt.Sprintf(format, args...)}
}

func updateErr(r Reason, cause error, format string, args ...any) *Error {
	return &Error{Code: CodeUpdateFailed, Reason: r, Msg: fmt.Sprintf(format, args...), Err: cause}
}
