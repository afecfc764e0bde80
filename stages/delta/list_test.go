package delta

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"piship.dev/piship/stages/archive"
)

// What an extraction or an Apply reports is the tree it wrote (TreeOf),
// and ListTree with the digests it computed lists the same tree: the
// receipt's treeSha256 of an install is the digest ScanTree gives.
func TestTreeOfWhatWasWritten(t *testing.T) {
	p := makePair(t)
	arch := filepath.Join(t.TempDir(), "to.tar.zst")
	if _, err := archive.Create(context.Background(), arch, p.to, archive.Options{}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(arch)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dest := filepath.Join(t.TempDir(), "x")
	ex, err := archive.Extract(context.Background(), f, dest, archive.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := scan(t, p.to).Digest()
	if got, ok := TreeOf(ex); !ok || got.Digest() != want {
		t.Fatalf("TreeOf(Extract) = %v %s, want %s", ok, got.Digest(), want)
	}
	if got, err := ListTree(context.Background(), dest, ex.Files); err != nil || got.Digest() != want {
		t.Fatalf("ListTree = %s %v, want %s", got.Digest(), err, want)
	}
	d, _ := writeDelta(t, p)
	applied := filepath.Join(t.TempDir(), "y")
	ax, err := Apply(context.Background(), bytes.NewReader(d), p.from, scan(t, p.from), applied, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := TreeOf(ax); !ok || got.Digest() != want {
		t.Fatalf("TreeOf(Apply) = %v %s, want %s", ok, got.Digest(), want)
	}
	// A listing missing a digest is refused, not guessed.
	delete(ex.Files, "release.json")
	if _, err := ListTree(context.Background(), dest, ex.Files); err == nil {
		t.Fatal("ListTree listed a file it has no digest for")
	}
}
