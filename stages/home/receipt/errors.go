package receipt

import "piship.dev/piship/stages/stage/errcode"

// The error codes of installs, updates and launches (declared once, in
// stages/stage/errcode).
const (
	CodeIntegrity     = errcode.IntegrityFailed
	CodeConfigInvalid = errcode.ConfigInvalid
	CodeUnavailable   = errcode.ConfigUnavailable
	CodeRollback      = errcode.RollbackFailed
	CodeUpdate        = errcode.UpdateFailed
)

// Error is a failure with a user-facing code: errcode's. Error() is
// "<CODE>: <message>".
type Error = errcode.Error

// Errorf returns an *Error with the code and a message formatted like
// fmt.Errorf (errcode.Errorf: a %w verb is unwrapped by errors.Is and
// errors.As, and a code is not said twice).
func Errorf(code, format string, args ...any) *Error {
	return errcode.Errorf(code, format, args...)
}

// CodeOf returns the code of err: the code of the outermost coded error
// in its chain (errcode.Of), else "".
func CodeOf(err error) string { return errcode.Of(err) }

// IsUsageCode reports whether code is one of a usage or configuration
// error (USAGE_INVALID, CONFIG_INVALID, LOCK_INVALID): the codes piship
// exits 2 for, whichever command found them (pipelines.ExitCode, and the
// launchers, which cannot link pipelines).
func IsUsageCode(code string) bool { return errcode.IsUsage(code) }
