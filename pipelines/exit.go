package pipelines

import (
	"errors"
	"strings"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/home/receipt"
)

// ExitCode is the one rule from an error to piship's exit code: nil is
// ExitOK; a usage or configuration error (its code, or the code of the
// failing stage's error in a failed run, is USAGE_INVALID, CONFIG_INVALID
// or LOCK_INVALID) is ExitUsage, whichever command or stage found it;
// anything else (a stage, verdict or check that failed: INTEGRITY_FAILED,
// UPDATE_FAILED, a smoke test ...) is ExitFailed.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var se *engine.StageError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	code := receipt.CodeOf(err)
	if code == "" {
		code, _, _ = strings.Cut(err.Error(), ":")
	}
	// The usage codes (receipt.IsUsageCode): the command line
	// (USAGE_INVALID, the CLI's), a file or flag value (CONFIG_INVALID), a
	// missing or stale piship.lock (LOCK_INVALID: run `piship lock`).
	if receipt.IsUsageCode(code) {
		return ExitUsage
	}
	return ExitFailed
}
