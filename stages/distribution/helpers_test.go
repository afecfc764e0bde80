package distribution

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

const (
	helloDir = "../../testdata/distributions/hello"
	piDir    = "../../testdata/distributions/pi"
	pi073Dir = "../../testdata/distributions/pi-0.73"
)

// copyTree copies the example at src into a fresh temporary directory
// (packages-src is left out: nothing here needs it) and returns it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "packages-src" || rel == LockFileName {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		out := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func mustLoad(t *testing.T, dir string) *Distribution {
	t.Helper()
	d, diags := Load(dir)
	if diags.HasErrors() {
		t.Fatalf("Load(%s): %v", dir, diags)
	}
	return d
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// editFile replaces old (which must occur) with new in the file at p.
func editFile(t *testing.T, p, old, new string) {
	t.Helper()
	s := readFile(t, p)
	if !strings.Contains(s, old) {
		t.Fatalf("%s does not contain %q", p, old)
	}
	writeFile(t, p, strings.Replace(s, old, new, 1))
}

// diagAt finds the error diagnostic whose subject starts at marker's first
// occurrence in src.
func diagAt(diags hcl.Diagnostics, src, marker string) *hcl.Diagnostic {
	off := strings.Index(src, marker)
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil && d.Subject.Start.Byte == off {
			return d
		}
	}
	return nil
}
