package pipelines

import (
	"errors"
	"fmt"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/stage/errcode"
)

// ExitCode is the one rule from an error to piship's exit code: nil is
// ExitOK; a usage or configuration error (its code, or the code of the
// failing stage's error in a failed run, is USAGE_INVALID, CONFIG_INVALID
// or LOCK_INVALID) is ExitUsage, whichever command or stage found it;
// anything else (a stage, verdict or check that failed: INTEGRITY_FAILED,
// UPDATE_FAILED, a smoke test ...) is ExitFailed. The code is the one the
// error carries (errcode.Of, errors.As), never read from its message; a
// *Reported error (a run's failure, printed already) has decided its own; the
// exit code of each is declared in stages/stage/errcode (docs/errors.md).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var rep *Reported
	if errors.As(err, &rep) {
		return rep.Exit
	}
	var se *engine.StageError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return errcode.Exit(err)
}

// Reported is the error of a command whose failure pipelines has printed
// on Config.Stderr already (the failing verdict with its diagnostics, or a
// "piship: CODE: message" line): the caller prints nothing more and exits
// with Exit. Err is the error that decided it when there is one (the
// failing stage's, a configuration error), for errors.As and errcode.Of.
type Reported struct {
	Exit int
	Err  error
}

func (r *Reported) Error() string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return fmt.Sprintf("failed (exit %d)", r.Exit)
}

func (r *Reported) Unwrap() error { return r.Err }
