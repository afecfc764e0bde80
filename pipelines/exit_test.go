package pipelines

import (
	"errors"
	"fmt"
	"testing"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage/errcode"
)

// The one rule from an error to the exit code, including an error inside a
// failed run's stage. The code is the one an error carries as a value
// (errcode.Coder), never read out of its message.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errcode.New(errcode.UsageInvalid, "unknown flag: --x"), ExitUsage},
		{errcode.New(errcode.ConfigInvalid, "stat x: no such file or directory"), ExitUsage},
		{receipt.Errorf(receipt.CodeConfigInvalid, "homes overlap"), ExitUsage},
		{fmt.Errorf("in x: %w", errcode.Newf(errcode.LockInvalid, "%s is stale", "piship.lock")), ExitUsage},
		{&engine.StageError{Pipeline: "build", Stage: "inputs", Err: errcode.New(errcode.ConfigInvalid, "no distribution.hcl")}, ExitUsage},
		{&engine.StageError{Pipeline: "release", Stage: "tests", Err: errors.New("smoke test hello failed")}, ExitFailed},
		{&engine.StageError{Pipeline: "install", Stage: "install", Err: receipt.Errorf(receipt.CodeIntegrity, "bad digest")}, ExitFailed},
		{receipt.Errorf(receipt.CodeUnavailable, "hello is not installed"), ExitFailed},
		{errors.New("something broke"), ExitFailed},
		{errors.New("CONFIG_INVALID: only the words of a code"), ExitFailed},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
