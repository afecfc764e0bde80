package cli

import (
	"bytes"
	"fmt"
	"testing"
)

// The error document's code is the last CODE: message line a command
// printed, whatever prefixes it (piship:, a stage's progress line); without
// one the exit code decides.
func TestFailureLogKeepsTheLastCode(t *testing.T) {
	var out bytes.Buffer
	f := &FailureLog{W: &out}
	fmt.Fprint(f, "doctor: started doctor doctor\n")
	fmt.Fprint(f, "doctor: failed doctor doctor in 1 ms: CONFIG_UNAVAILABLE: first\n")
	fmt.Fprint(f, "doctor: stage doctor failed: UPDATE_FAILED: x is not: installed\n")
	fmt.Fprint(f, "Did you mean this?\n")
	if got := f.Error(ExitFailed, "fallback"); got != (ErrorInfo{Code: "UPDATE_FAILED", Message: "x is not: installed"}) {
		t.Errorf("got %+v", got)
	}
	if out.Len() == 0 {
		t.Error("stderr was not passed through")
	}
	fmt.Fprint(f, "piship: LOCK_INVALID: stale, no newline")
	if got := f.Error(ExitUsage, ""); got.Code != "LOCK_INVALID" {
		t.Errorf("unterminated last line: %+v", got)
	}
	none := &FailureLog{W: &out}
	if got := none.Error(ExitUsage, "m"); got != (ErrorInfo{Code: "USAGE_INVALID", Message: "m"}) {
		t.Errorf("no code printed: %+v", got)
	}
	if Schema("cache prune") != "piship-cache-prune/v1" || Schema("") != "piship/v1" {
		t.Error(Schema("cache prune"), Schema(""))
	}
}
