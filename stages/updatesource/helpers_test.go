package updatesource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeTestFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readTestFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantErr checks err is an *Error with code and reason whose message holds
// every fragment.
func wantErr(t *testing.T, err error, code string, reason Reason, fragments ...string) {
	t.Helper()
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("got %v, want a %s error", err, code)
	}
	if e.Code != code || e.Reason != reason {
		t.Errorf("got %s/%s (%v), want %s/%s", e.Code, e.Reason, err, code, reason)
	}
	if !strings.HasPrefix(err.Error(), code+": ") {
		t.Errorf("message %q does not start with the code", err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q lacks %q", err, f)
		}
	}
}
