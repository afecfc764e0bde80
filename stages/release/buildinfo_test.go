package release

import (
	"os"
	"strings"
	"testing"
)

// The file keeps the field names verify-release and people read.
func TestWriteBuildInfoKeepsTheFormat(t *testing.T) {
	dir := t.TempDir()
	bi := BuildInfo{Schema: BuildInfoSchema, Release: "hello-1.0.0-linux-x64", RuntimeCache: "miss", Bundle: "off", Timing: []byte(`{}`)}
	if err := WriteBuildInfo(dir, bi); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(BuildInfoPath(dir, bi.Release))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema": "piship-build-info/v1"`, `"runtimeCache": "miss"`, `"entryDigest": ""`, `"timing": {}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("build-info lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"tools"`) {
		t.Errorf("no tools shipped, yet:\n%s", b)
	}
	bi.Tools = []ToolDigest{{Name: "piship", SHA256: strings.Repeat("a", 64), Bytes: 3}}
	if err := WriteBuildInfo(dir, bi); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(BuildInfoPath(dir, bi.Release))
	if !strings.Contains(string(b), `"name": "piship"`) || !strings.Contains(string(b), `"bytes": 3`) {
		t.Errorf("tools not written:\n%s", b)
	}
}
