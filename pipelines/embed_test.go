package pipelines

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestEmbeddedPipelinesAreFmtClean is issue 29 point 7: `piship fmt --check`
// of a copy of every built-in pipeline finds nothing to format (it reported
// release.hcl), so the files piship ships read as a user's formatted files.
func TestEmbeddedPipelinesAreFmtClean(t *testing.T) {
	names, err := fs.Glob(FS, "*.hcl")
	if err != nil || len(names) < 5 {
		t.Fatalf("embedded pipelines: %v %v", names, err)
	}
	dir := t.TempDir()
	var paths []string
	for _, n := range names {
		src, err := FS.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var stdout, stderr bytes.Buffer
	if code := Format(&stdout, &stderr, func(string) string { return "" }, paths, true); code != ExitOK {
		t.Errorf("piship fmt --check of the embedded pipelines: exit %d; run piship fmt pipelines/ to fix:\n%s%s", code, stdout.String(), stderr.String())
	}
}
