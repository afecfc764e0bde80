package stages

import (
	"context"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/noderuntime"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing/phase"
)

// NodeRuntime places the pinned Node (the node block) for the target in
// the payload.
type NodeRuntime struct{}

func (NodeRuntime) Name() string    { return "node_runtime" }
func (NodeRuntime) Version() string { return "1" }
func (NodeRuntime) Doc() string {
	return "Places the node block's Node for the target (platform-arch, never the host's) at dest/node/bin/node (dest/node/node.exe on win32): its pinned archive from <piship cache>/node/<digest>.<format>, " +
		"downloaded there and checked against the pin when missing (the registry's package for an npm pin, else the url; a seeded cache serves a release offline), and the executable checked against the binary digest piship.lock pins. " +
		"A distribution without a node block places nothing (the node on PATH runs it)."
}

// NodeRuntimeConfig is the configuration of a node_runtime stage.
type NodeRuntimeConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"distribution directory"`
	Dest         string `cty:"dest" required:"true" doc:"the payload root"`
	Platform     string `cty:"platform" required:"true" doc:"the target's platform (linux, darwin, win32)"`
	Arch         string `cty:"arch" required:"true" doc:"the target's arch (x64, arm64)"`
	Target       string `cty:"target" doc:"the release target the pin is looked up by (linux-x64-musl); empty: <platform>-<arch>"`
	CacheHome    string `cty:"cache_home" doc:"piship cache instead of PISHIP_CACHE_HOME (where piship lock fetched the archives)"`
}

// NodeRuntimeOutputs are its outputs.
type NodeRuntimeOutputs struct {
	Version string `cty:"version" doc:"the Node version placed (\"\" without a node block)"`
	Path    string `cty:"path" doc:"the node executable's path in the payload (\"\" without a node block)"`
	Bytes   int    `cty:"bytes" doc:"its bytes"`
	Cached  bool   `cty:"cached" doc:"whether the cache served the archive"`
}

// Run implements stage.Typed.
func (NodeRuntime) Run(ctx context.Context, inv *stage.Invocation, c NodeRuntimeConfig) (NodeRuntimeOutputs, error) {
	var out NodeRuntimeOutputs
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, c.Distribution))
	if err != nil {
		return out, err
	}
	lock, err := distribution.CheckLock(d)
	if err != nil {
		return out, err
	}
	target := c.Platform + "-" + c.Arch
	if c.Target != "" {
		target = c.Target // linux-x64-musl pins its own Node
	}
	a, ok, err := lock.NodeTarget(target)
	if !ok || err != nil {
		return out, err
	}
	home := c.CacheHome
	if home == "" {
		if home, err = cache.Home(nil); err != nil {
			return out, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
		}
	}
	pctx, ph := phase.Start(ctx, "node "+lock.Node.Version+" "+target)
	n, cached, err := noderuntime.Place(pctx, home, npm.Registry(d.RuntimeDir()), a, lock.Node.Version, target, stage.Resolve(inv.Dir, c.Dest))
	ph.SetInt("bytes", n)
	ph.End(err)
	if err != nil {
		return out, err
	}
	return NodeRuntimeOutputs{Version: lock.Node.Version, Path: distribution.NodePayloadPath(target), Bytes: int(n), Cached: cached}, nil
}

// nodeTargets is the inputs' node output: the node block's targets.
func nodeTargets(l *distribution.Lock) int {
	if l == nil || l.Node == nil {
		return 0
	}
	return len(l.Node.Targets)
}
