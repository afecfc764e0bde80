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

// BenchmarkExplainPerStage measures what explaining adds to one cacheable
// stage: reading the stage's record, computing the miss reason over ten
// named inputs and writing the record back. Compare with
// BenchmarkLookupHit, the lookup it accompanies.
func BenchmarkExplainPerStage(b *testing.B) {
	x := OpenExplain(b.TempDir())
	id := StageID{Cache: "action", Pipeline: "/p/check.hcl", Stage: "vet"}
	in := Inputs{InputKind: "exec", InputKindVersion: "1", InputTool: testKey("tool")}
	for i := range 7 {
		in[fmt.Sprintf("%sfile%d.go", InputFilePrefix, i)] = testKey(fmt.Sprint(i))
	}
	if err := x.Remember(id, testKey("old"), in); err != nil {
		b.Fatal(err)
	}
	keys := [2]string{testKey("new"), testKey("newer")}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		// Alternating keys: every iteration is a miss and a write.
		key := keys[n%2]
		n++
		if MissReason(x.Previous(id), key, in) == "" {
			b.Fatal("no reason")
		}
		if err := x.Remember(id, key, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExplainPerStageHit is BenchmarkExplainPerStage for a stage
// served by the entry its record already names: no reason, no write.
func BenchmarkExplainPerStageHit(b *testing.B) {
	x := OpenExplain(b.TempDir())
	id := StageID{Cache: "action", Pipeline: "/p/check.hcl", Stage: "vet"}
	in := Inputs{InputKind: "exec", InputKindVersion: "1", InputTool: testKey("tool")}
	key := testKey("new")
	if err := x.Remember(id, key, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := x.Remember(id, key, in); err != nil {
			b.Fatal(err)
		}
	}
}
