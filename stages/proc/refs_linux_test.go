package proc

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A process naming a path inside a directory on its command line, or
// working in it, is found; one elsewhere is not.
func TestReferencing(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 30", filepath.Join(dir, "app", "main.js"))
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var got map[string]string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		refs, ok := Referencing([]string{dir})
		if !ok {
			t.Fatal("no /proc on Linux")
		}
		got = map[string]string{}
		for _, r := range refs {
			if r.PID == cmd.Process.Pid {
				got[r.Via] = r.Path
			}
		}
		if len(got) == 2 {
			break
		}
	}
	if got["command line"] != filepath.Join(dir, "app", "main.js") || got["working directory"] != dir {
		t.Fatalf("found %v", got)
	}
	if refs, _ := Referencing([]string{elsewhere}); len(refs) != 0 {
		t.Fatalf("found %+v in an unused directory", refs)
	}
}
