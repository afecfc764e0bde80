package main

import (
	"context"
	"io"
	"path/filepath"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/noderuntime"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/stage/errcode"
)

// PinPiPackages installs the vendored Pi packages of l (through the
// runtime cache of getenv's PISHIP_CACHE_HOME, as a build does) and pins
// each one's package.json and extension entry files in l: what piship lock
// records besides the digests ComputeLock takes. npm's output goes to log.
func PinPiPackages(ctx context.Context, getenv func(string) string, log io.Writer, d *distribution.Distribution, l *distribution.Lock) error {
	if len(l.Packages) == 0 {
		return nil
	}
	home, err := cache.Home(getenv)
	if err != nil {
		return errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	rt := runtimecache.Open(home)
	roots := map[string]string{}
	for _, p := range l.Packages {
		ent, _, err := buildstate.InstallPiPackage(ctx, rt, d.Dir, p, log, "lock: "+p.Name, distribution.HostTarget())
		if err != nil {
			return err
		}
		roots[p.Name] = filepath.Join(ent.Dir, "node_modules", filepath.FromSlash(p.Name))
	}
	return distribution.PinExtensions(l, roots)
}

// PinNode fetches each release target's Node of l's node block (once,
// into getenv's piship cache, from the runtime's npm registry for an npm
// pin) and pins the sha256 of its node executable in l: what piship lock
// records besides the archive pins ComputeLock copies.
func PinNode(ctx context.Context, getenv func(string) string, d *distribution.Distribution, l *distribution.Lock) error {
	if l.Node == nil {
		return nil
	}
	home, err := cache.Home(getenv)
	if err != nil {
		return errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	return noderuntime.PinBinaries(ctx, home, npm.Registry(d.RuntimeDir()), l, l.Release.Targets)
}
