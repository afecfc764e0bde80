package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"path/filepath"
	"testing"
)

// FuzzApply feeds Apply arbitrary deltas against one base: it must refuse
// or build exactly the tree the header names, never panic, never write
// outside dest. make test runs the seeds; make fuzz fuzzes.
func FuzzApply(f *testing.F) {
	p := makePair(f)
	d, _ := writeDelta(f, p)
	base := scan(f, p.from)
	f.Add(d)
	f.Add(d[:len(d)/2])
	f.Add(append(bytes.Clone(d), 0))
	h, data := split(f, d)
	h.Ops = h.Ops[:1]
	f.Add(join(f, h, data))
	bad := bytes.Clone(d)
	binary.BigEndian.PutUint32(bad[len(Magic):], 1<<20)
	f.Add(bad)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, delta []byte) {
		parent := t.TempDir()
		dest := filepath.Join(parent, "new")
		ex, err := Apply(context.Background(), bytes.NewReader(delta), p.from, base, dest, ApplyOptions{Writers: 2})
		if err != nil {
			if _, ok := IsRefused(err); !ok {
				t.Fatalf("not a refusal: %v", err)
			}
			return
		}
		h, err := ReadHeader(bytes.NewReader(delta))
		if err != nil {
			t.Fatalf("Apply took a delta ReadHeader refuses: %v", err)
		}
		if got := scan(t, dest).Digest(); got != h.ToTree || ex.Size != int64(len(delta)) {
			t.Fatalf("applied tree %s, header says %s", got, h.ToTree)
		}
	})
}
