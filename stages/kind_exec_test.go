package stages

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// An exec stage is cached only with cache = true; unset dir is the pipeline
// file's directory, and an empty command is refused before anything else.
func TestExecCacheSpecDefaults(t *testing.T) {
	dir := tree(t, "in/a.txt", "in/b.txt")
	k := stage.Define(Exec{}).(stage.Cacheable)
	cfg := func(command []string, cache cty.Value) *stage.Invocation {
		cmd := cty.ListValEmpty(cty.String)
		if len(command) > 0 {
			vals := make([]cty.Value, len(command))
			for i, c := range command {
				vals[i] = cty.StringVal(c)
			}
			cmd = cty.ListVal(vals)
		}
		return &stage.Invocation{Name: "x", Dir: dir, Config: cty.ObjectVal(map[string]cty.Value{
			"command": cmd, "env": cty.NullVal(cty.Map(cty.String)), "dir": cty.NullVal(cty.String),
			"timeout": cty.NullVal(cty.String), "inputs": cty.ListVal([]cty.Value{cty.StringVal("in")}),
			"outputs": cty.ListVal([]cty.Value{cty.StringVal("./out//x.bin")}),
			"cache":   cache, "echo": cty.NullVal(cty.Bool),
		})}
	}
	if _, ok, err := k.CacheSpec(cfg([]string{"true"}, cty.NullVal(cty.Bool))); ok || err != nil {
		t.Fatalf("cache unset: ok %v, err %v; want not cacheable", ok, err)
	}
	spec, ok, err := k.CacheSpec(cfg([]string{"true"}, cty.True))
	if !ok || err != nil {
		t.Fatalf("cache = true: ok %v, err %v", ok, err)
	}
	if spec.Dir != filepath.Clean(dir) || strings.Join(spec.Inputs, ",") != "in/a.txt,in/b.txt" || strings.Join(spec.Outputs, ",") != "out/x.bin" {
		t.Fatalf("spec = %+v", spec)
	}
	if _, _, err := k.CacheSpec(cfg(nil, cty.True)); err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: command is empty") {
		t.Fatalf("empty command: err %v", err)
	}
}
