package main

import (
	"context"
	"io"
	"maps"
	"path/filepath"
	"slices"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/installers"
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

// checkInstallers reads every binary an installers block with a directory
// source pins and checks it against its pin, so a pasted block or a stale
// copy of bin/installers fails at piship lock, naming the file, rather
// than at the release's last stage. A URL source is fetched by the
// release (release_publish), not here.
func checkInstallers(ctx context.Context, d *distribution.Distribution) error {
	in := d.Installers
	if in == nil || in.IsURL() {
		return nil
	}
	for _, target := range slices.Sorted(maps.Keys(in.SHA256)) {
		for _, b := range installers.Pinned(in, d.Dir, target, in.SHA256[target], [2]string{"piship", "piship-launch"}) {
			if _, err := installers.Read(ctx, "", b); err != nil {
				return err
			}
		}
	}
	return nil
}
