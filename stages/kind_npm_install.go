package stages

import (
	"context"
	"fmt"

	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/stage"
)

// NpmInstall places the locked dependency tree into the payload from the
// runtime cache, running `npm ci` into a new cache entry on a miss.
type NpmInstall struct{}

func (NpmInstall) Name() string    { return "npm_install" }
func (NpmInstall) Version() string { return "2" }
func (NpmInstall) Doc() string {
	return "Places the runtime's installed dependency tree (npm ci --omit=dev --ignore-scripts --prefer-offline) into dest from the runtime cache entry " +
		"i-<key> (hardlinks on the same filesystem, else copies), running npm ci into a new entry on a miss. A damaged entry is reported, removed and rebuilt."
}

// NpmInstallConfig is the configuration of an npm_install stage.
type NpmInstallConfig struct {
	RuntimeDir string `cty:"runtime_dir" required:"true" doc:"directory with package.json and package-lock.json"`
	Key        string `cty:"key" required:"true" doc:"runtime cache key (i-...)"`
	Dest       string `cty:"dest" doc:"empty directory to place the tree in (the payload root); unset: only make sure the entry exists"`
	CacheHome  string `cty:"cache_home" doc:"runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"`
	Target     string `cty:"target" doc:"the release target whose native packages npm installs (npm ci --os/--cpu/--libc; the key must be that target's); empty: the host's"`
}

// NpmInstallOutputs are the outputs of an npm_install stage.
type NpmInstallOutputs struct {
	Entry  string `cty:"entry" doc:"the runtime cache entry key"`
	Hit    bool   `cty:"hit" doc:"the entry existed"`
	Files  int    `cty:"files" doc:"files in the entry"`
	Linked int    `cty:"linked" doc:"files placed by hardlink"`
	Copied int    `cty:"copied" doc:"files placed by copy (another filesystem)"`
	Tree   string `cty:"tree" doc:"the entry's installed tree (read-only: audits, SBOM and notices read it)"`
	Digest string `cty:"digest" doc:"the entry digest (over its file listing)"`
}

// Run implements stage.Typed.
func (NpmInstall) Run(ctx context.Context, inv *stage.Invocation, c NpmInstallConfig) (NpmInstallOutputs, error) {
	key := c.Key
	target, err := configTarget(c.Target)
	if err != nil {
		return NpmInstallOutputs{}, err
	}
	rt, err := runtimeCacheAt(ctx, inv, c.CacheHome)
	if err != nil {
		return NpmInstallOutputs{}, err
	}
	// The inputs stage that computed the key left its named inputs.
	scope, named := rt.Explain().KeyInputs(key)
	e, err := rt.Get(key, false)
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: runtime cache entry %s is damaged, rebuilding it: %v\n", inv.Pipeline, key, err)
	}
	hit := e != nil
	lk := stage.CacheLookup{Cache: "runtime", Key: key, Hit: hit, Inputs: named, Scope: scope, Remote: rt.RemoteOutcome(key, hit)}
	if !hit {
		lk.Reason = noCacheReason(c.CacheHome)
	}
	inv.CacheLookup(lk)
	if !hit {
		e, err = rt.CreateInputs(key, named, func(dir string) error { return installInto(ctx, c.RuntimeDir, dir, inv, target) })
		if err != nil {
			return NpmInstallOutputs{}, err
		}
	}
	var st runtimecache.PlaceStats
	if c.Dest != "" {
		if st, err = e.Place(c.Dest); err != nil {
			return NpmInstallOutputs{}, fmt.Errorf("cannot place runtime cache entry %s: %v", key, err)
		}
	}
	return NpmInstallOutputs{
		Entry: key, Hit: hit, Files: len(e.Files),
		Linked: st.Linked, Copied: st.Copied,
		Tree: e.Dir, Digest: e.Digest,
	}, nil
}

// installInto installs the runtime's project into dir for target t
// (buildstate.InstallProject with InstallArgs), npm's output labelled by
// the stage's name.
func installInto(ctx context.Context, runtimeDir, dir string, inv *stage.Invocation, t distribution.Target) error {
	_, npmV, err := npm.Versions(ctx)
	if err != nil {
		return err
	}
	args, err := buildstate.InstallArgs(t, npmV)
	if err != nil {
		return err
	}
	return buildstate.InstallProject(ctx, runtimeDir, dir, inv.Log, inv.Name, args...)
}
