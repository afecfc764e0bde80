package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
)

// Claimed takes checksums.txt's lines, the inventory's entries under
// payload/ and checksums.txt's own digest; a malformed line names its
// number, a line for a file checksums.txt does not cover and a bad
// inventory entry are refused.
func TestClaimed(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	write := func(sums, inv string) string {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, filepath.Dir(InventoryPath)), 0o755)
		os.WriteFile(filepath.Join(dir, ChecksumsName), []byte(sums), 0o644)
		os.WriteFile(filepath.Join(dir, filepath.FromSlash(InventoryPath)), []byte(inv), 0o644)
		return dir
	}
	sums := a + "  release.json\n" + b + "  " + InventoryPath + "\n"
	got, err := Claimed(write(sums, `{"bin/app":"`+b+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"release.json": a, InventoryPath: b, "payload/bin/app": b, ChecksumsName: canon.SHA256Hex([]byte(sums))}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for p, s := range want {
		if got[p] != s {
			t.Fatalf("%s: %q, want %q", p, got[p], s)
		}
	}
	for name, c := range map[string]struct{ sums, inv, msg string }{
		"a malformed line":  {a + "  release.json\n" + "nothex  x\n", `{}`, "line 2 is not"},
		"an uncovered file": {a + "  payload/bin/app\n", `{}`, "does not cover"},
		"a bad entry":       {sums, `{"../x":"` + b + `"}`, `the entry "../x"`},
		"not an object":     {sums, `[]`, InventoryPath},
	} {
		if _, err := Claimed(write(c.sums, c.inv)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.msg)
		}
	}
	if m, err := ParseChecksums(nil); err != nil || len(m) != 0 {
		t.Errorf("an empty checksums.txt: %v, %v", m, err)
	}
}
