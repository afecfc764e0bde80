package receipt

import (
	"errors"
	"fmt"
	"strings"
)

// The error codes users see.
const (
	CodeIntegrity     = "INTEGRITY_FAILED"
	CodeConfigInvalid = "CONFIG_INVALID"
	CodeUnavailable   = "CONFIG_UNAVAILABLE"
	CodeRollback      = "ROLLBACK_FAILED"
	CodeUpdate        = "UPDATE_FAILED"
)

var knownCodes = []string{CodeIntegrity, CodeConfigInvalid, CodeUnavailable, CodeRollback, CodeUpdate,
	"LOCK_INVALID", "POLICY_DENIED", "NETWORK_DENIED"}

// Error is a failure with a user-facing code. Error() is "<CODE>: <message>".
type Error struct {
	Code string
	Msg  string
	Err  error // the cause, if any (also in Msg)
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the code and a message formatted like
// fmt.Errorf (a %w verb is unwrapped by errors.Is and errors.As). A message
// that already starts with "<CODE>: " (an error of another package carrying
// its code) is not prefixed twice, and the same code met again inside it
// ("x.tar.gz: INTEGRITY_FAILED: archive refused ...") is said once: a
// different inner code stays, it tells what the outer one was caused by.
func Errorf(code, format string, args ...any) *Error {
	werr := fmt.Errorf(format, args...)
	msg := werr.Error()
	for _, c := range knownCodes {
		msg = strings.TrimPrefix(msg, c+": ")
	}
	msg = strings.ReplaceAll(msg, ": "+code+": ", ": ")
	return &Error{Code: code, Msg: msg, Err: errors.Unwrap(werr)}
}

// CodeOf returns the code of err: the Code of the outermost *Error in its
// chain, else a known code its message starts with, else "".
func CodeOf(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	msg := err.Error()
	for _, c := range knownCodes {
		if strings.HasPrefix(msg, c+":") {
			return c
		}
	}
	return ""
}

// IsUsageCode reports whether code is one of a usage or configuration
// error (USAGE_INVALID, CONFIG_INVALID, LOCK_INVALID): the codes piship
// exits 2 for, whichever command found them (pipelines.ExitCode, and the
// launchers, which cannot link pipelines).
func IsUsageCode(code string) bool {
	return code == "USAGE_INVALID" || code == CodeConfigInvalid || code == "LOCK_INVALID"
}
