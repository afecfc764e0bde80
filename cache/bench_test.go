package cache

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkLookupHit measures a hit that verifies and restores 10 small
// files.
func BenchmarkLookupHit(b *testing.B) {
	a := OpenActions(b.TempDir())
	src := b.TempDir()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("out/dir%d/file%d.txt", i%3, i)] = strings.Repeat(fmt.Sprint(i), 512)
	}
	outs := keys(files)
	writeTree(b, src, files)
	key := testKey("bench")
	if _, err := a.Store(key, src, outs, json.RawMessage(`{"n":10}`)); err != nil {
		b.Fatal(err)
	}
	dst := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, hit, err := a.Lookup(key, dst, outs); !hit || err != nil {
			b.Fatalf("Lookup = %v, %v", hit, err)
		}
	}
}
