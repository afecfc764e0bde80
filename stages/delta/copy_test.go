package delta

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// applyTo applies d onto p.from as listed and returns the new directory.
func applyTo(t *testing.T, d []byte, p pair, listed Tree, o ApplyOptions) (string, error) {
	t.Helper()
	dest := filepath.Join(t.TempDir(), "new")
	_, err := Apply(context.Background(), bytes.NewReader(d), p.from, listed, dest, o)
	return dest, err
}

// A kept file that changes between the listing and Apply's read of it:
// one byte shorter is refused at that file; longer, Apply reads and
// hashes the listed bytes only, so the new tree is still the delta's
// (and the installed tree is left as it is).
func TestKeptFileChangedAfterListing(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	keep := filepath.Join(p.from, "payload", "lib", "keep1.js")
	orig, _ := os.ReadFile(keep)
	listed := scan(t, p.from)

	os.WriteFile(keep, orig[:len(orig)-1], 0o644)
	_, err := applyTo(t, d, p, listed, ApplyOptions{})
	if e, ok := IsRefused(err); !ok || e.Reason != ReasonBase || e.Path != "payload/lib/keep1.js" {
		t.Fatalf("a kept file shorter than listed: err %v, want ReasonBase at it", err)
	}

	grown := append(append([]byte{}, orig...), "// appended\n"...)
	os.WriteFile(keep, grown, 0o644)
	dest, err := applyTo(t, d, p, listed, ApplyOptions{})
	if err != nil {
		t.Fatalf("a kept file grown past its listed bytes: %v", err)
	}
	if got, want := scan(t, dest), scan(t, p.to); !reflect.DeepEqual(got, want) {
		t.Fatal("the tree built from a grown kept file is not the delta's")
	}
	if b, _ := os.ReadFile(keep); !bytes.Equal(b, grown) {
		t.Fatal("Apply changed the installed file")
	}
}

// A kept file over maxBufferedCopy (Pi's Node) streams through a writer
// of its own, sent before everything else; the tree is the delta's.
func TestLargeKeptFile(t *testing.T) {
	p := makePair(t)
	big := map[string]tfile{"payload/node/bin/node": {data: noise(77, maxBufferedCopy+4096), exec: true}}
	writeTree(t, p.from, big)
	writeTree(t, p.to, big)
	d, res := writeDelta(t, p)
	if res.Kept != 7 {
		t.Fatalf("kept %d files, want the 6 of makePair and the large one", res.Kept)
	}
	for _, writers := range []int{1, 8} {
		dest, err := applyTo(t, d, p, scan(t, p.from), ApplyOptions{Writers: writers})
		if err != nil {
			t.Fatalf("writers=%d: %v", writers, err)
		}
		if got, want := scan(t, dest), scan(t, p.to); !reflect.DeepEqual(got, want) {
			t.Fatalf("writers=%d: the tree is not the delta's", writers)
		}
	}
	// Changed on disk after the listing: refused at it; grown, its
	// listed bytes are what is copied, as for a small file.
	listed := scan(t, p.from)
	node := filepath.Join(p.from, "payload", "node", "bin", "node")
	os.WriteFile(node, noise(78, maxBufferedCopy+4096), 0o755)
	_, err := applyTo(t, d, p, listed, ApplyOptions{})
	if e, ok := IsRefused(err); !ok || e.Reason != ReasonBase || e.Path != "payload/node/bin/node" {
		t.Fatalf("a changed large file: err %v, want ReasonBase at it", err)
	}
	os.WriteFile(node, append(noise(77, maxBufferedCopy+4096), "more"...), 0o755)
	dest, err := applyTo(t, d, p, listed, ApplyOptions{})
	if err != nil {
		t.Fatalf("a grown large file: %v", err)
	}
	if got, want := scan(t, dest), scan(t, p.to); !reflect.DeepEqual(got, want) {
		t.Fatal("the tree built from a grown large file is not the delta's")
	}
}

// ApplyOptions.Header spares decoding the header again only for the
// bytes it was read from: given another delta's header, Apply decodes
// the stream's own and builds that delta's tree.
func TestApplyTakesTheHeaderOnlyForItsBytes(t *testing.T) {
	p := makePair(t)
	d, _ := writeDelta(t, p)
	own, err := ReadHeader(bytes.NewReader(d))
	if err != nil {
		t.Fatal(err)
	}
	back, _ := writeDelta(t, pair{from: p.to, to: p.from})
	other, err := ReadHeader(bytes.NewReader(back))
	if err != nil {
		t.Fatal(err)
	}
	want := scan(t, p.to)
	for name, h := range map[string]*Header{"its own header": own, "another delta's header": other} {
		dest, err := applyTo(t, d, p, scan(t, p.from), ApplyOptions{Header: h})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := scan(t, dest); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the tree is not the delta's", name)
		}
	}
}
