package archive

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Interoperability with the tar of the system, where there is one: it
// extracts what Write makes, and Extract accepts what GNU tar makes in
// ustar and PAX formats from a file list without "./".
func TestSystemTar(t *testing.T) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		t.Fatal("no tar on PATH: the tests compare with the system tar")
	}
	src := t.TempDir()
	order, files := sampleTree()
	mkTree(t, src, order, files)
	arch, _ := writeArchive(t, src, Options{Format: V1})

	out := t.TempDir()
	cmd := exec.Command(tarBin, "-xzf", "-", "-C", out)
	cmd.Stdin = bytes.NewReader(arch)
	if b, err := cmd.CombinedOutput(); err != nil || len(b) > 0 {
		// The declaration (a global header's comment) is ignored silently.
		t.Fatalf("tar -x: %v\n%s", err, b)
	}
	want := readTree(t, src)
	got := readTree(t, out)
	if strings.Join(keys(got), "\n") != strings.Join(keys(want), "\n") {
		t.Fatalf("system tar extracted %q", keys(got))
	}
	for p, d := range want {
		if got[p] != d {
			t.Errorf("%s differs", p)
		}
	}

	if v, _ := exec.Command(tarBin, "--version").Output(); !bytes.Contains(v, []byte("GNU tar")) {
		t.Skip("not GNU tar")
	}
	for _, format := range []string{"pax", "gnu", "ustar"} {
		t.Run(format, func(t *testing.T) {
			list := []string{"bin", "empty.txt", "node_modules", "metadata", "big", "resources"}
			if format == "pax" {
				list = append(list, "ünïcødé")
			}
			tgz := filepath.Join(t.TempDir(), "x.tgz")
			cmd := exec.Command(tarBin, "--format="+format, "--sort=name", "--owner=0", "--group=0", "--numeric-owner", "-czf", tgz, "-C", src)
			cmd.Args = append(cmd.Args, list...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tar -c: %v\n%s", err, b)
			}
			f, err := os.Open(tgz)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ex, err := Extract(context.Background(), f, filepath.Join(t.TempDir(), "d"), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range list {
				for name, d := range want {
					if (name == p || strings.HasPrefix(name, p+"/")) && !strings.HasSuffix(name, "/") && ex.Files[name] != sha([]byte(d)) {
						t.Errorf("%s: digest %q", name, ex.Files[name])
					}
				}
			}
		})
	}
}
