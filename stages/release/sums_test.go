package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A release set is read strictly: what WriteSums writes reads back, and
// every line that could point a consumer elsewhere is refused.
func TestReadSums(t *testing.T) {
	dir := t.TempDir()
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	path, err := WriteSums(dir, "hello", "1.0.0", []SumEntry{
		{Archive: "hello-1.0.0-win32-x64.tar.gz", SHA256: b},
		{Archive: "hello-1.0.0-linux-x64-musl.tar.gz", SHA256: a},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSums(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Targets(), ","); s.ID != "hello" || s.Version != "1.0.0" || got != "linux-x64-musl,win32-x64" {
		t.Fatalf("read %s %s %s", s.ID, s.Version, got)
	}
	if e, ok := s.For("win32-x64"); !ok || e.SHA256 != b || s.Archive(e) != filepath.Join(dir, "hello-1.0.0-win32-x64.tar.gz") {
		t.Fatalf("For(win32-x64) = %+v %v", e, ok)
	}
	if _, ok := s.For("linux-x64"); ok {
		t.Fatal("a glibc linux-x64 host took the musl archive")
	}
	for name, body := range map[string]string{
		"not a line":        "hello-1.0.0-linux-x64.tar.gz\n",
		"short digest":      "abc  hello-1.0.0-linux-x64.tar.gz\n",
		"a path":            a + "  ../hello-1.0.0-linux-x64.tar.gz\n",
		"another version":   a + "  hello-1.0.1-linux-x64.tar.gz\n",
		"another id":        a + "  other-1.0.0-linux-x64.tar.gz\n",
		"not an archive":    a + "  hello-1.0.0-linux-x64.zip\n",
		"a target twice":    a + "  hello-1.0.0-linux-x64.tar.gz\n" + b + "  hello-1.0.0-linux-x64.tar.gz\n",
		"not sorted":        a + "  hello-1.0.0-win32-x64.tar.gz\n" + b + "  hello-1.0.0-linux-x64.tar.gz\n",
		"empty":             "",
		"windows separator": a + "  sub\\hello-1.0.0-linux-x64.tar.gz\n",
	} {
		p := filepath.Join(t.TempDir(), "hello-1.0.0.SHA256SUMS")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadSums(p); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	if _, err := ReadSums(filepath.Join(dir, "hello-1.0.0.sums")); err == nil {
		t.Error("a file not named <id>-<version>.SHA256SUMS was read as a set")
	}
}
