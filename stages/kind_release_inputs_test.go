package stages

import (
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
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

// only keeps release.targets' order and refuses a target it does not
// declare, naming the declared ones; none is every target.
func TestReleaseInputsOnlyTargets(t *testing.T) {
	declared := []string{"linux-x64", "darwin-arm64", "win32-x64"}
	if got, err := onlyTargets(declared, nil); err != nil || !slices.Equal(got, declared) {
		t.Errorf("no only: %v %v", got, err)
	}
	if got, err := onlyTargets(declared, []string{"win32-x64", "linux-x64"}); err != nil || !slices.Equal(got, []string{"linux-x64", "win32-x64"}) {
		t.Errorf("only win32-x64, linux-x64: %v %v", got, err)
	}
	_, err := onlyTargets(declared, []string{"linux-x64", "linux-arm64"})
	if errcode.Of(err) != errcode.ConfigInvalid || !strings.Contains(err.Error(), "--target linux-arm64 is not one of distribution.hcl's release.targets (linux-x64, darwin-arm64, win32-x64)") {
		t.Errorf("an undeclared target: %v", err)
	}
}
