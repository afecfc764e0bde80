package signkey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/stage/errcode"
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

// wantErr checks err carries code, its message starts with it and holds
// every fragment.
func wantErr(t *testing.T, err error, code string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a %s error", code)
	}
	if got := errcode.Of(err); got != code {
		t.Errorf("got code %q (%v), want %s", got, err, code)
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
