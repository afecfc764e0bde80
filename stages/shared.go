package stages

// Helpers the kinds share. Kind files never call each other's functions;
// what two kinds need lives here (or, when it is a rule of the domain, in a
// domain package).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/sbom"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// runtimeCacheAt opens the runtime cache under home, or under
// PISHIP_CACHE_HOME when home is empty. A release without cache passes a
// throwaway home so nothing cached is used and nothing it makes is kept.
// noCacheDir names the throwaway runtime cache home of a release without
// cache (release --rebuild, PISHIP_RELEASE_NO_CACHE=1): release_inputs makes
// it in the staging directory, and the stages that look up the runtime and
// bundle caches recognise it, so their misses say why instead of "the
// earlier entry with the same key is gone".
const noCacheDir = ".no-cache"

// reasonNoCache is the miss reason of every lookup in that throwaway cache.
const reasonNoCache = "a rebuild was asked for (release --rebuild or PISHIP_RELEASE_NO_CACHE=1): the runtime and bundle caches are not used"

// noCacheReason is reasonNoCache when home is the throwaway cache of a
// release without cache, else "" (the engine then compares the key with the
// newest entry the stage used).
func noCacheReason(home string) string {
	if home != "" && filepath.Base(home) == noCacheDir {
		return reasonNoCache
	}
	return ""
}

// The cache reads through and writes back to the run's remote cache
// (cache.RemoteFrom(ctx)), except the throwaway cache of a rebuild.
func runtimeCacheAt(ctx context.Context, inv *stage.Invocation, home string) (*runtimecache.Cache, error) {
	if home == "" {
		h, err := cache.Home(inv.Getenv)
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
		}
		home = h
	}
	if noCacheReason(home) != "" {
		return runtimecache.Open(home), nil
	}
	return runtimecache.Open(home).WithRemote(ctx), nil
}

// bundleCached reports whether the runtime cache holds a verified bundle for
// st; the cache is the run's (PISHIP_CACHE_HOME).
func bundleCached(ctx context.Context, inv *stage.Invocation, st *buildstate.State, k buildstate.TargetKeys) bool {
	rt, err := runtimeCacheAt(ctx, inv, "")
	if err != nil {
		return false
	}
	return st.BundleCached(rt, inv.Log, inv.Pipeline, k)
}

// loadWithPackageLock decodes the distribution (resolved against the
// pipeline's directory) and its runtime's package-lock.json.
func loadWithPackageLock(inv *stage.Invocation, dir string) (*distribution.Distribution, *distribution.PackageLock, error) {
	d, pl, _, err := buildstate.LoadWithPackageLock(stage.Resolve(inv.Dir, dir))
	return d, pl, err
}

// sbomInput gathers what the SBOM and the notices describe: the
// distribution's locked runtime installed in tree and each vendored Pi
// package's project installed in the tree vendored names for it (JSON
// {name: tree}), at created (RFC 3339; empty: the epoch).
func sbomInput(ctx context.Context, inv *stage.Invocation, dir, version, tree, created, vendored string) (sbom.Input, error) {
	d, pl, raw, err := buildstate.LoadWithPackageLock(stage.Resolve(inv.Dir, dir))
	if err != nil {
		return sbom.Input{}, err
	}
	if version, err = releaseVersion(ctx, d, version); err != nil {
		return sbom.Input{}, err
	}
	at := time.Unix(0, 0).UTC()
	if created != "" {
		if at, err = time.Parse(time.RFC3339, created); err != nil {
			return sbom.Input{}, err
		}
	}
	var tools []sbom.Tool
	for name, t := range d.Tools {
		tools = append(tools, sbom.Tool{Name: name, Source: t.Source, SHA256: t.SHA256})
	}
	in := sbom.Input{Name: d.ID, Version: version, Tree: tree, Lock: pl,
		LockSHA256: canon.SHA256Hex(raw), Created: at, ToolVersion: ToolVersion(), Tools: tools}
	trees := map[string]string{}
	if vendored != "" {
		if err := json.Unmarshal([]byte(vendored), &trees); err != nil {
			return sbom.Input{}, fmt.Errorf("vendored: %v", err)
		}
	}
	for _, p := range d.Packages {
		t, ok := trees[p.Name]
		if !ok {
			return sbom.Input{}, fmt.Errorf("the SBOM needs the installed tree of Pi package %s (the pi_packages stage's trees output)", p.Name)
		}
		vpl, _, err := distribution.ReadPackageLock(filepath.Join(d.PackageDir(p), "package-lock.json"))
		if err != nil {
			return sbom.Input{}, err
		}
		in.Vendored = append(in.Vendored, sbom.Vendored{Prefix: p.PayloadDir(), Tree: t, Lock: vpl})
	}
	return in, nil
}

// releaseVersion is the release version a stage after release_inputs
// uses: the one it was given (release_inputs' version output, which the
// built-in pipelines pass on), else the one distribution.ResolveVersion
// names without flags, so a stage of a hand-written pipeline names the
// release as release_inputs would.
func releaseVersion(ctx context.Context, d *distribution.Distribution, given string) (string, error) {
	if given != "" {
		return given, nil
	}
	rv, err := d.ResolveVersion(ctx, distribution.VersionOptions{})
	return rv.Version, err
}

// configTarget parses a stage's target attribute (a release target,
// distribution.ParseTarget); empty is the host's.
func configTarget(s string) (distribution.Target, error) {
	if s == "" {
		return distribution.HostTarget(), nil
	}
	t, err := distribution.ParseTarget(s)
	if err != nil {
		return t, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	return t, nil
}
