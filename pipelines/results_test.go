package pipelines

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/graph"
	"piship.dev/piship/stages"
)

// zero is a value of type t with every list, set and map holding one
// element, so that element types are decoded too.
func zero(t cty.Type) cty.Value {
	switch {
	case t == cty.String:
		return cty.StringVal("")
	case t == cty.Number:
		return cty.NumberIntVal(0)
	case t == cty.Bool:
		return cty.False
	case t.IsListType():
		return cty.ListVal([]cty.Value{zero(t.ElementType())})
	case t.IsSetType():
		return cty.SetVal([]cty.Value{zero(t.ElementType())})
	case t.IsMapType():
		return cty.MapVal(map[string]cty.Value{"k": zero(t.ElementType())})
	case t.IsObjectType():
		attrs := map[string]cty.Value{}
		for n, at := range t.AttributeTypes() {
			attrs[n] = zero(at)
		}
		return cty.ObjectVal(attrs)
	}
	return cty.NullVal(t)
}

// Every stage results.go reads is in its embedded pipeline, and the
// struct it reads into decodes from that kind's declared outputs.
func TestReadersMatchTheEmbeddedPipelines(t *testing.T) {
	if len(readers) == 0 {
		t.Fatal("no readers declared")
	}
	loaded := map[string]*graph.Graph{}
	for _, r := range readers {
		g := loaded[r.pipeline]
		if g == nil {
			src, err := Find(r.pipeline, "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(src.Name, "embedded:") {
				t.Fatalf("%s: found %s, not the embedded pipeline", r.pipeline, src.Name)
			}
			var stderr bytes.Buffer
			var ok bool
			if g, ok = LoadOne(&stderr, func(string) string { return "" }, stages.Default(), src); !ok {
				t.Fatalf("%s: %s", r.pipeline, stderr.String())
			}
			loaded[r.pipeline] = g
		}
		var found bool
		for _, s := range g.Stages {
			if s.Name != r.stage {
				continue
			}
			found = true
			out := map[string]cty.Value{}
			for _, o := range s.Kind.Outputs() {
				out[o.Name] = zero(o.Type)
			}
			if err := r.decode(out); err != nil {
				t.Errorf("pipeline %s stage %s (kind %s): %v", r.pipeline, r.stage, s.Kind.Name(), err)
			}
		}
		if !found {
			t.Errorf("pipeline %s has no stage %q", r.pipeline, r.stage)
		}
	}
}

func TestFindLooksInDirThenPipelinesThenEmbedded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mine.hcl"), []byte(`pipeline "mine" {}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if src, err := Find("mine", dir); err != nil || src.Name != filepath.Join(dir, "mine.hcl") {
		t.Fatalf("Find(mine) = %+v, %v", src, err)
	}
	if src, err := Find("doctor", dir); err != nil || src.Name != "embedded:pipelines/doctor.hcl" {
		t.Fatalf("Find(doctor) = %+v, %v", src, err)
	}
	_, err := Find("nope", dir)
	if err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: no pipeline \"nope\"") || !strings.Contains(err.Error(), "build, demo, doctor") {
		t.Fatalf("Find(nope): %v", err)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
