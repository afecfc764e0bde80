package pipelines

import (
	"errors"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/stage/errcode"
)

// ExitCode is the one rule from an error to piship's exit code: nil is
// ExitOK; a usage or configuration error (its code, or the code of the
// failing stage's error in a failed run, is USAGE_INVALID, CONFIG_INVALID
// or LOCK_INVALID) is ExitUsage, whichever command or stage found it;
// anything else (a stage, verdict or check that failed: INTEGRITY_FAILED,
// UPDATE_FAILED, a smoke test ...) is ExitFailed. The code is the one the
// error carries (errcode.Of, errors.As), never read from its message; the
// exit code of each is declared in stages/stage/errcode (docs/errors.md).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var se *engine.StageError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return errcode.Exit(err)
}
