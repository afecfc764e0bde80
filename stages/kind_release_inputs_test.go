package stages

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// An unset channel is stable; a set one, even empty, is taken as given.
func TestReleaseInputsChannelDefault(t *testing.T) {
	for _, c := range []struct {
		channel cty.Value
		want    string
	}{
		{cty.NullVal(cty.String), "stable"},
		{cty.StringVal(""), ""},
		{cty.StringVal("beta"), "beta"},
	} {
		var cfg ReleaseInputsConfig
		inv := &stage.Invocation{Name: "inputs", Config: cty.ObjectVal(map[string]cty.Value{
			"distribution": cty.StringVal("."), "out": cty.NullVal(cty.String),
			"channel": c.channel, "no_cache": cty.NullVal(cty.Bool),
		})}
		if err := stage.DecodeConfig(inv, &cfg); err != nil {
			t.Fatal(err)
		}
		if got := cfg.channel(); got != c.want || cfg.NoCache {
			t.Errorf("channel %#v: channel() = %q, no_cache = %v; want %q, false", c.channel, got, cfg.NoCache, c.want)
		}
	}
}
