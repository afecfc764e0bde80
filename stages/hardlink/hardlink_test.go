package hardlink

import (
	"os"
	"path/filepath"
	"testing"
)

func TestClassifyLinkError(t *testing.T) {
	for _, le := range linkErrors {
		err := &os.LinkError{Op: "link", Old: "a", New: "b", Err: le.err}
		if got := Classify(err); got != le.action {
			t.Errorf("Classify(%v) = %v, want %v", err, got, le.action)
		}
	}
	// Real failures that are not about hardlink support fail the placement.
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	missing := os.Link(src, dst)
	os.WriteFile(src, nil, 0o644)
	os.WriteFile(dst, nil, 0o644)
	exists := os.Link(src, dst)
	for _, err := range []error{missing, exists} {
		if err == nil {
			t.Fatal("os.Link succeeded")
		}
		if got := Classify(err); got != Fail {
			t.Errorf("Classify(%v) = %v, want Fail", err, got)
		}
	}
}
