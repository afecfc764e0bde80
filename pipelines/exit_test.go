package pipelines

import (
	"errors"
	"fmt"
	"testing"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/home/receipt"
)

// The one rule from an error to the exit code, including an error inside a
// failed run's stage.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("USAGE_INVALID: unknown flag: --x"), ExitUsage},
		{errors.New("CONFIG_INVALID: stat x: no such file or directory"), ExitUsage},
		{receipt.Errorf(receipt.CodeConfigInvalid, "homes overlap"), ExitUsage},
		{fmt.Errorf("LOCK_INVALID: %s is stale", "piship.lock"), ExitUsage},
		{&engine.StageError{Pipeline: "build", Stage: "inputs", Err: errors.New("CONFIG_INVALID: no distribution.hcl")}, ExitUsage},
		{&engine.StageError{Pipeline: "release", Stage: "tests", Err: errors.New("smoke test hello failed")}, ExitFailed},
		{&engine.StageError{Pipeline: "install", Stage: "install", Err: receipt.Errorf(receipt.CodeIntegrity, "bad digest")}, ExitFailed},
		{receipt.Errorf(receipt.CodeUnavailable, "hello is not installed"), ExitFailed},
		{errors.New("something broke"), ExitFailed},
	} {
		if got := ExitCode(c.err); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
