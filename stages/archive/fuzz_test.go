package archive

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzExtract feeds arbitrary bytes to the extractor. Whatever the input,
// it must not panic, must write nothing outside the destination, and a
// successful extraction must report exactly the regular files it wrote,
// with their digests. `make test` runs it briefly, `make fuzz` for longer.
func FuzzExtract(f *testing.F) {
	dir := f.TempDir()
	mkTree(f, dir, []string{"a/", "a/b.txt", "c.txt"}, map[string]file{
		"a/": {mode: 0o755}, "a/b.txt": {data: "bee", mode: 0o644}, "c.txt": {data: "sea", mode: 0o755},
	})
	valid, _ := writeArchive(f, dir, Options{Format: V1})
	f.Add(valid)
	// V2: Write's, and hand-built ones (a true index; hostile entries;
	// several frames).
	validV2, _ := writeArchive(f, dir, Options{})
	f.Add(validV2)
	f.Add(v2Of(tarBytes([]ent{{name: "../evil", data: "x"}}, nil)))
	f.Add(v2Of(tarBytes([]ent{{name: "ok.txt", data: "x"}, {name: "ok.txt", data: "y"}}, nil)))
	f.Add(v2Of(tarBytes([]ent{{name: "a/b.txt", data: "bee"}, {name: "c.txt", data: strings.Repeat("sea", 300)}}, []byte("trailing"))))
	f.Add(zsFrames(tarBytes([]ent{{name: "f", data: "x"}}, nil)))
	f.Add(gz(tarBytes([]ent{{name: "../evil", data: "x"}}, nil)))
	f.Add(gz(tarBytes([]ent{{name: "ok.txt", data: "x"}, {name: "ok.txt", data: "y"}}, nil)))
	f.Add(gz(tarBytes([]ent{{name: "l", typ: '2', link: "/etc/passwd"}}, nil)))
	f.Add(gz(tarBytes([]ent{{name: "f", data: "x"}}, []byte("trailing"))))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	// The block-member format, several members.
	f.Add(pz(tarBytes([]ent{{name: "a/b.txt", data: "bee"}, {name: "c.txt", data: strings.Repeat("sea", 300)}}, nil), 512))
	f.Add(pz(tarBytes([]ent{{name: "../evil", data: "x"}}, nil), 600))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		dest := filepath.Join(root, "dest")
		x, err := Extract(context.Background(), bytes.NewReader(data), dest, Limits{MaxBytes: 1 << 20, MaxEntries: 1000})
		// Nothing but dest may exist under root.
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if e.Name() != "dest" {
				t.Fatalf("extraction wrote %s outside the destination", e.Name())
			}
		}
		_ = filepath.Walk(dest, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("extraction created a symlink %s", p)
			}
			return nil
		})
		if err != nil {
			if !strings.Contains(err.Error(), "INTEGRITY_FAILED") && !strings.Contains(err.Error(), "CONFIG_INVALID") {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		got := readTree(t, dest)
		files := 0
		for p := range got {
			if !strings.HasSuffix(p, "/") {
				files++
				if x.Files[p] == "" {
					t.Fatalf("file %s written but not reported", p)
				}
			}
		}
		if files != len(x.Files) {
			t.Fatalf("%d files on disk, %d reported", files, len(x.Files))
		}
	})
}
