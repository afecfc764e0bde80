package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"piship.dev/piship/stages/archive"
)

// goldenDir holds the pinned bytes of hello's release
// (testdata/golden/hello-release/README.md says what and how to re-record).
var goldenDir = filepath.Join("..", "..", "testdata", "golden", "hello-release")

// goldenFiles are the release's files the golden pins byte for byte, as
// paths below the releases directory, and the name each has in goldenDir.
var goldenFiles = []struct{ release, golden string }{
	{helloRelease + "/release.json", "release.json"},
	{helloRelease + "/checksums.txt", "checksums.txt"},
	{helloRelease + "/sbom.spdx.json", "sbom.spdx.json"},
	{helloRelease + "/vulnerabilities.json", "vulnerabilities.json"},
	{helloRelease + ".tar.zst.sha256", "archive.sha256"},
}

// TestReleaseGoldenHello holds hello's release, made by the built-in
// release pipeline, to the bytes recorded in testdata/golden/hello-release:
// a change to the pipelines that is meant to change nothing (issue 31's
// modules) must leave it byte-identical. PISHIP_GOLDEN_UPDATE=1 re-records.
func TestReleaseGoldenHello(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	code, _, stderr := piship(t, env, "release", dir, "--builtin")
	if code != exitOK {
		t.Fatalf("release: exit %d\n%s", code, stderr)
	}
	releases := filepath.Join(dir, "dist", "releases")
	got := map[string][]byte{}
	for _, f := range goldenFiles {
		b, err := os.ReadFile(filepath.Join(releases, filepath.FromSlash(f.release)))
		if err != nil {
			t.Fatal(err)
		}
		got[f.golden] = b
	}
	listing, err := archiveListing(filepath.Join(releases, helloRelease+".tar.zst"))
	if err != nil {
		t.Fatal(err)
	}
	got["archive.txt"] = listing

	if os.Getenv("PISHIP_GOLDEN_UPDATE") == "1" {
		for name, b := range got {
			if err := os.WriteFile(filepath.Join(goldenDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("re-recorded %s", goldenDir)
		return
	}
	for name, b := range got {
		want, err := os.ReadFile(filepath.Join(goldenDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("hello's release changed: %s differs from %s (README.md there says what this means and how to re-record)\n%s",
				name, filepath.Join(goldenDir, name), firstDiff(string(want), string(b)))
		}
	}
}

// archiveListing lists a release archive's entries, one a line: type,
// mode, size, mtime, name and the content's sha256, so a changed archive
// digest in the golden comes with the entry that changed.
func archiveListing(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The declaration first (NewTarReader's stream starts after it): its
	// counts and each index entry, a line each.
	var b bytes.Buffer
	a, err := archive.Open(f, archive.Limits{})
	if err != nil {
		return nil, err
	}
	if d := a.Declared(); d != nil {
		fmt.Fprintf(&b, "g declaration files=%d dirs=%d bytes=%d\n", d.Files, d.Dirs, d.Bytes)
		for _, e := range d.Index {
			fmt.Fprintf(&b, "i %s frame %d offset %d size %d %s\n", e.Path, e.Frame, e.Offset, e.Size, e.SHA256)
		}
	}
	a.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	zr, _, err := archive.NewTarReader(f, archive.Limits{})
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return b.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
		sum := sha256.New()
		if _, err := io.Copy(sum, tr); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			keys := make([]string, 0, len(h.PAXRecords))
			for k := range h.PAXRecords {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintf(&b, "%c global header", h.Typeflag)
			for _, k := range keys {
				fmt.Fprintf(&b, " %s=%q", k, h.PAXRecords[k])
			}
			b.WriteByte('\n')
			continue
		}
		fmt.Fprintf(&b, "%c %04o %8d %d %s", h.Typeflag, h.Mode, h.Size, h.ModTime.Unix(), h.Name)
		if h.Typeflag == tar.TypeReg {
			fmt.Fprintf(&b, " %s", hex.EncodeToString(sum.Sum(nil)))
		}
		if h.Linkname != "" {
			fmt.Fprintf(&b, " -> %s", h.Linkname)
		}
		b.WriteByte('\n')
	}
}

// firstDiff names the first line where got leaves want.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d: want %q\n          got  %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}
