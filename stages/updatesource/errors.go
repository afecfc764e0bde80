package updatesource

import (
	"errors"
	"fmt"

	"piship.dev/piship/stages/stage/errcode"
)

// The error codes users see (declared in stages/stage/errcode).
const (
	CodeConfigInvalid   = errcode.ConfigInvalid
	CodeUpdateFailed    = errcode.UpdateFailed
	CodeNetworkDenied   = errcode.NetworkDenied
	CodeIntegrityFailed = errcode.IntegrityFailed
)

// Reason says which check refused a channel or an update (Error.Reason).
type Reason string

// The reasons of UPDATE_FAILED and NETWORK_DENIED errors.
const (
	ReasonMalformed  Reason = "malformed"  // a fetched document or signature file does not parse
	ReasonSignatures Reason = "signatures" // fewer than Threshold distinct trusted keys signed the exact bytes
	ReasonExpired    Reason = "expired"    // Expires is before now
	ReasonDowngrade  Reason = "downgrade"  // the candidate version is below the current one
	ReasonVersion    Reason = "version"    // a version is not a semantic version
	ReasonNotFound   Reason = "not-found"  // the source has no such file (also errors.Is fs.ErrNotExist)
	ReasonTooLarge   Reason = "too-large"  // a document over its bound
	ReasonFetch      Reason = "fetch"      // the source could not be read (transport error, HTTP status)
	ReasonTimeout    Reason = "timeout"    // a limit fired: connect, header or idle timeout, or the overall budget (see Limits)
	ReasonPolicy     Reason = "policy"     // NETWORK_DENIED: plain http to a remote host, a redirect elsewhere or too many
	ReasonSize       Reason = "size"       // INTEGRITY_FAILED: the archive is not the signed size
	ReasonDigest     Reason = "digest"     // INTEGRITY_FAILED: the archive is not the signed SHA-256
)

// Error is a refusal with the code users see. Error() is "CODE: message".
type Error struct {
	Code   string
	Reason Reason
	Msg    string
	Err    error
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the code (errcode.Coder).
func (e *Error) ErrorCode() string { return e.Code }

var _ errcode.Coder = (*Error)(nil)

// ErrUpToDate is CheckUpgrade's answer when the candidate is the current
// version: there is nothing to update.
var ErrUpToDate = errors.New("already at the newest version")

// AsError returns err's *Error, if it is or wraps one.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// HasReason reports whether err is (or wraps) an *Error with reason r.
func HasReason(err error, r Reason) bool {
	e, ok := AsError(err)
	return ok && e.Reason == r
}

func newErr(code string, r Reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: r, Msg: fmt.Sprintf(format, args...)}
}

func configErr(format string, args ...any) *Error {
	return newErr(CodeConfigInvalid, "", format, args...)
}

func updateErr(r Reason, format string, args ...any) *Error {
	return newErr(CodeUpdateFailed, r, format, args...)
}
