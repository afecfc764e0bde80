package stages

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/searchtools"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing/phase"
)

// SearchTools places the bundled search tools (the search_tools block) in
// the payload's tools/.
type SearchTools struct{}

func (SearchTools) Name() string    { return "search_tools" }
func (SearchTools) Version() string { return "2" }
func (SearchTools) Doc() string {
	return "Places each search_tools tool (fd, rg) for the target in dest/tools/: its pinned upstream archive from <piship cache>/search-tools/<sha256>.<format>, downloaded there and checked against the pin when missing (a seeded cache serves a release offline), " +
		"and the executable taken from the archive's top or first directory. A distribution without a search_tools block places nothing (its launches defer Pi's own download: see piship launch)."
}

// SearchToolsConfig is the configuration of a search_tools stage.
type SearchToolsConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"distribution directory"`
	Dest         string `cty:"dest" required:"true" doc:"the payload root"`
	Platform     string `cty:"platform" required:"true" doc:"the target's platform (linux, darwin, win32)"`
	Arch         string `cty:"arch" required:"true" doc:"the target's arch (x64, arm64)"`
	Target       string `cty:"target" doc:"the release target the pins are looked up by (linux-x64-musl); empty: <platform>-<arch>"`
	CacheHome    string `cty:"cache_home" doc:"piship cache instead of PISHIP_CACHE_HOME"`
}

// SearchToolsOutputs are its outputs.
type SearchToolsOutputs struct {
	Tools   int      `cty:"tools" doc:"search tools placed"`
	Missing []string `cty:"missing" doc:"search tools not placed: the distribution pins no archive for this target"`
	Bytes   int      `cty:"bytes" doc:"their executables' bytes"`
	Cached  int      `cty:"cached" doc:"archives the cache served"`
}

// Run implements stage.Typed.
func (SearchTools) Run(ctx context.Context, inv *stage.Invocation, c SearchToolsConfig) (SearchToolsOutputs, error) {
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, c.Distribution))
	if err != nil {
		return SearchToolsOutputs{}, err
	}
	var out SearchToolsOutputs
	if len(d.SearchTools) == 0 {
		return out, nil
	}
	home := c.CacheHome
	if home == "" {
		if home, err = cache.Home(nil); err != nil {
			return out, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
		}
	}
	target := c.Platform + "-" + c.Arch
	if c.Target != "" {
		target = c.Target
	}
	for _, name := range slices.Sorted(maps.Keys(d.SearchTools)) {
		if _, pinned := d.SearchTools[name].Archives[target]; !pinned {
			// Said in the log and the outputs, and the release rules
			// expect it absent: Pi downloads one at its first prompt.
			fmt.Fprintf(inv.Log, "%s: search_tools.%s pins no archive for %s: this payload ships without %s (Pi downloads one at its first prompt)\n", inv.Name, name, target, name)
			out.Missing = append(out.Missing, name)
			continue
		}
		pctx, ph := phase.Start(ctx, "search tool "+name)
		n, cached, err := searchtools.Place(pctx, home, d.SearchTools[name], target, c.Dest)
		ph.SetInt("bytes", n)
		ph.End(err)
		if err != nil {
			return out, err
		}
		out.Tools++
		out.Bytes += int(n)
		if cached {
			out.Cached++
		}
	}
	return out, nil
}
