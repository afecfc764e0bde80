package distribution

import (
	"path/filepath"
	"strings"
	"testing"
)

// searchToolsBlock bundles both tools for hello's one target.
const searchToolsBlock = `  search_tools {
    fd = { "linux-x64" = { url = "https://example.com/fd-v1-x86_64-unknown-linux-musl.tar.gz", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
    rg = { "linux-x64" = { url = "https://example.com/ripgrep-1-x86_64-unknown-linux-musl.tar.gz", sha256 = "2222222222222222222222222222222222222222222222222222222222222222" } }
  }
`

func withSearchTools(t *testing.T, block string) string {
	t.Helper()
	dir := copyTree(t, helloDir)
	p := filepath.Join(dir, FileName)
	src := readFile(t, p)
	end := strings.LastIndex(src, "}")
	writeFile(t, p, src[:end]+block+src[end:])
	return dir
}

func TestSearchToolsAreDecodedAndLocked(t *testing.T) {
	d := mustLoad(t, withSearchTools(t, searchToolsBlock))
	fd := d.SearchTools["fd"]
	if a := fd.Archives["linux-x64"]; a.Format() != "tar.gz" || !strings.HasPrefix(a.SHA256, "1111") || fd.Executable("linux-x64") != "fd" || fd.Executable("win32-x64") != "fd.exe" {
		t.Fatalf("fd = %+v", fd)
	}
	l, err := ComputeLock(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.SearchTools["rg"]["linux-x64"].URL; !strings.Contains(got, "ripgrep-1") {
		t.Fatalf("lock searchTools = %+v", l.SearchTools)
	}
	if !strings.Contains(string(l.Marshal()), `"searchTools"`) {
		t.Fatal("the lock does not record the search tools")
	}
	// Without the block the lock has no searchTools key: earlier locks
	// keep their bytes.
	l2, err := ComputeLock(mustLoad(t, helloDir))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(l2.Marshal()), "searchTools") {
		t.Fatal("a distribution without search tools locks a searchTools key")
	}
}

func TestSearchToolsDiagnostics(t *testing.T) {
	for _, c := range []struct{ name, block, want string }{
		{"missing target", `  search_tools {
    fd = { "darwin-arm64" = { url = "https://example.com/fd.tar.gz", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
  }
`, "search_tools.fd has no archive for any release target (linux-x64)"},
		{"not https", `  search_tools {
    rg = { "linux-x64" = { url = "http://example.com/rg.tar.gz", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
  }
`, "write the https:// URL"},
		{"bad digest", `  search_tools {
    rg = { "linux-x64" = { url = "https://example.com/rg.zip", sha256 = "abc" } }
  }
`, "is not a SHA-256 digest"},
		{"unknown tool", `  search_tools {
    ag = { "linux-x64" = { url = "https://example.com/ag.zip", sha256 = "1111111111111111111111111111111111111111111111111111111111111111" } }
  }
`, `"ag" is not expected`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, diags := Load(withSearchTools(t, c.block))
			var all strings.Builder
			for _, d := range diags {
				all.WriteString(d.Summary + ": " + d.Detail + "\n")
			}
			if !diags.HasErrors() || !strings.Contains(all.String(), c.want) || strings.Count(all.String(), "\n") != 1 {
				t.Fatalf("diagnostics:\n%s want exactly one, containing %q", all.String(), c.want)
			}
		})
	}
}
