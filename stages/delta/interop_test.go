package delta

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestZstdCLIDecodesPatches holds the format to its promise: a patch op's
// data is a plain zstd frame that Debian's zstd decodes with
// --patch-from=<the op's dictionary> (one file, or its base files
// concatenated), a new op's without one.
func TestZstdCLIDecodesPatches(t *testing.T) {
	zstd, err := exec.LookPath("zstd")
	if err != nil {
		t.Fatal("no zstd on PATH: install zstd (make test-deps)")
	}
	p := makePair(t)
	d, _ := writeDelta(t, p)
	h, data := split(t, d)
	dir := t.TempDir()
	var off int64
	checked := map[string]bool{}
	for _, op := range h.Ops {
		frame := data[off : off+op.Data]
		off += op.Data
		if op.Data == 0 {
			continue
		}
		in := filepath.Join(dir, "frame.zst")
		out := filepath.Join(dir, "out")
		os.Remove(out)
		if err := os.WriteFile(in, frame, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-q", "-d", in, "-o", out}
		if op.Op == OpPatch {
			var dict []byte
			for _, s := range op.Base {
				b, err := os.ReadFile(filepath.Join(p.from, filepath.FromSlash(s.Path)))
				if err != nil {
					t.Fatal(err)
				}
				dict = append(dict, b...)
			}
			dictPath := filepath.Join(dir, "dict")
			if err := os.WriteFile(dictPath, dict, 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--patch-from="+dictPath)
		}
		if msg, err := exec.Command(zstd, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: zstd %q: %v\n%s", op.Path, args, err, msg)
		}
		got, _ := os.ReadFile(out)
		want, _ := os.ReadFile(filepath.Join(p.to, filepath.FromSlash(op.Path)))
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: zstd decoded %d bytes, not the new file's %d", op.Path, len(got), len(want))
		}
		checked[op.Path] = true
	}
	for _, p := range []string{"payload/app.js", "payload/chunks/chunk-BBBB.js", "payload/newdir/brand.bin", "payload/newdir/empty.txt"} {
		if !checked[p] {
			t.Errorf("%s was not decoded by zstd", p)
		}
	}
}
