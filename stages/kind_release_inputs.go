package stages

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// ReleaseInputs is the first stage of a release: the same decoding, lock
// check and gates as a build, then a staging directory for the release
// (never a build stamp: a release always assembles its payload, served by
// the runtime cache unless told not to use it).
type ReleaseInputs struct{}

func (ReleaseInputs) Name() string    { return "release_inputs" }
func (ReleaseInputs) Version() string { return "2" }
func (ReleaseInputs) Doc() string {
	return "Reads distribution.hcl and piship.lock (LOCK_INVALID when stale), applies the release gates (on any host: every target is built here), resolves the release version (version, snapshot, distribution.hcl's version, the git tag at HEAD: distribution.ResolveVersion), " +
		"takes created from SOURCE_DATE_EPOCH (default 0), and for each entry of release.targets names its release <id>-<version>-<target>, keys its runtime and bundle (the lock installed with npm ci --os/--cpu/--libc for that target) " +
		"and opens its staging directory <out>/.staging-release-<name>-*/<name>/ with an empty payload/ (all are closed again if one cannot be opened). " +
		"With no_cache the runtime and bundle caches are replaced by a throwaway one per target, so npm ci and the bundler run again."
}

// ReleaseInputsConfig is release_inputs' configuration.
type ReleaseInputsConfig struct {
	Distribution string  `cty:"distribution" required:"true" doc:"the distribution directory"`
	Out          string  `cty:"out" doc:"output directory (default: DIST/dist); releases go to <out>/releases/"`
	Channel      *string `cty:"channel" doc:"update channel recorded in release.json (default stable)"`
	NoCache      bool    `cty:"no_cache" doc:"ignore the runtime and bundle caches (a cold release)"`
	Version      string  `cty:"version" doc:"the release version (piship release --version); empty: distribution.hcl's version, else the git tag at HEAD (v1.2.3 -> 1.2.3)"`
	Snapshot     bool    `cty:"snapshot" doc:"a snapshot release (piship release --snapshot): the version <next>-snapshot.g<sha> of the commit at HEAD, never published"`
	// Only and Runner are a split release's (piship release --target on
	// each runner of a CI fleet, merged by piship release --merge).
	Only   []string `cty:"only" doc:"release only these entries of release.targets (piship release --target; each must be one of them); empty: every entry"`
	Runner string   `cty:"runner" doc:"the CI runner that builds and smoke-tests the targets, recorded in each release.json (piship release --runner); empty: none recorded"`
}

// channel is the configured channel; unset means stable (an explicit
// empty string stays empty).
func (c ReleaseInputsConfig) channel() string {
	if c.Channel == nil {
		return "stable"
	}
	return *c.Channel
}

// ReleaseInputsOutputs are release_inputs' outputs: the release's
// identity and, per target of release.targets, everything its payload,
// qualification and publication read (the release pipeline runs
// builtin:target once per entry of targets).
type ReleaseInputsOutputs struct {
	ID          string `cty:"id" doc:"the distribution id"`
	Version     string `cty:"version" doc:"the release version (distribution.ResolveVersion: version, snapshot, distribution.hcl, the git tag at HEAD)"`
	VersionFrom string `cty:"version_from" doc:"where the version came from: --version, distribution.hcl, git tag <tag>, --snapshot (commit <sha>)"`
	Snapshot    bool   `cty:"snapshot" doc:"the version is a snapshot's: repo add refuses the release"`
	Releases    string `cty:"releases" doc:"<out>/releases"`
	// Targets is keyed by target (linux-x64, darwin-arm64, linux-x64-musl).
	Targets map[string]ReleaseTarget `cty:"targets" doc:"per entry of release.targets, by target: what that target's release reads (each field below)"`
}

// ReleaseTarget is one target's part of release_inputs' outputs: the
// identity again (so a module given one target's object needs nothing
// else), the target, its cache keys and its own staging directory.
type ReleaseTarget struct {
	ID             string `cty:"id" doc:"the distribution id"`
	Version        string `cty:"version" doc:"the release version"`
	Command        string `cty:"command" doc:"the command name the payload installs (bin/<command>)"`
	Name           string `cty:"name" doc:"<id>-<version>-<target>"`
	Target         string `cty:"target" doc:"<platform>-<arch>, or linux-<arch>-musl"`
	Dir            string `cty:"dir" doc:"absolute distribution directory"`
	RuntimeDir     string `cty:"runtime_dir" doc:"absolute runtime directory (package.json, package-lock.json)"`
	Entry          string `cty:"entry" doc:"entry file relative to the payload root"`
	Bundle         bool   `cty:"bundle" doc:"release.bundle: the runtime is bundled"`
	Strip          bool   `cty:"strip" doc:"release.strip: source maps and TypeScript declarations are removed"`
	Platform       string `cty:"platform" doc:"target platform (node naming: linux, darwin, win32)"`
	Arch           string `cty:"arch" doc:"target architecture (node naming: x64, arm64)"`
	Host           bool   `cty:"host" doc:"the target is this host's: its smoke tests can run here"`
	InstallKey     string `cty:"install_key" doc:"i- runtime cache key (the lock installed for this target)"`
	BundleKey      string `cty:"bundle_key" doc:"b- bundle cache key"`
	BundleCached   bool   `cty:"bundle_cached" doc:"a verified bundle cache entry exists for bundle_key (never with no_cache)"`
	CacheHome      string `cty:"cache_home" doc:"runtime cache home to use (empty: PISHIP_CACHE_HOME)"`
	Staging        string `cty:"staging" doc:"staging root, removed unless published"`
	ReleaseDir     string `cty:"release_dir" doc:"<staging>/<name>"`
	Payload        string `cty:"payload" doc:"<release_dir>/payload"`
	Releases       string `cty:"releases" doc:"<out>/releases"`
	Created        string `cty:"created" doc:"RFC 3339 time from SOURCE_DATE_EPOCH"`
	Epoch          int64  `cty:"epoch" doc:"SOURCE_DATE_EPOCH (default 0): every archive mtime"`
	Channel        string `cty:"channel" doc:"the update channel recorded in release.json"`
	LockSHA256     string `cty:"lock_sha256" doc:"sha256 of piship.lock"`
	RuntimePackage string `cty:"runtime_package" doc:"the runtime's package name (package.json)"`
	RuntimeVersion string `cty:"runtime_version" doc:"the runtime's package version (package.json)"`
	// RuntimeEntries is how many runtime cache entries the release uses:
	// the runtime's and one per vendored Pi package, for every target (each
	// target's cleanup keeps them all: a warm release of N targets is N
	// cache hits).
	RuntimeEntries int `cty:"runtime_entries" doc:"runtime cache entries the release uses, every target's ((1 + the vendored Pi packages) x targets)"`
	// PiPackages and SearchTools decide whether the Pi-only stages apply
	// (their when conditions): an app without them does not run them.
	PiPackages  int `cty:"pi_packages" doc:"vendored Pi packages (package blocks) the lock pins; 0: the pi_packages stage does not apply"`
	SearchTools int `cty:"search_tools" doc:"bundled search tools (the search_tools block); 0: the search_tools stage does not apply"`
	// Node counts the node block's targets: 0, the node stage does not
	// apply and the node on PATH runs the release.
	Node int `cty:"node" doc:"targets of the node block (a pinned Node in the payload); 0: the node stage does not apply"`
	// Runner is release_inputs' runner, for release.json.
	Runner string `cty:"runner" doc:"the CI runner recorded in release.json (empty: none)"`
}

// SourceDateEpoch reads SOURCE_DATE_EPOCH (seconds; default 0).
func SourceDateEpoch(getenv func(string) string) (int64, error) {
	v := getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, errcode.Newf(errcode.ConfigInvalid, "SOURCE_DATE_EPOCH=%q is not a number of seconds since 1970", v)
	}
	return n, nil
}

// Run implements stage.Typed.
func (ReleaseInputs) Run(ctx context.Context, inv *stage.Invocation, cfg ReleaseInputsConfig) (ReleaseInputsOutputs, error) {
	st, err := buildstate.Load(ctx, stage.Resolve(inv.Dir, cfg.Distribution), true)
	if err != nil {
		return ReleaseInputsOutputs{}, err
	}
	d := st.Dist
	epoch, err := SourceDateEpoch(inv.Getenv)
	if err != nil {
		return ReleaseInputsOutputs{}, err
	}
	rv, err := d.ResolveVersion(ctx, distribution.VersionOptions{Version: cfg.Version, Snapshot: cfg.Snapshot})
	if err != nil {
		return ReleaseInputsOutputs{}, err
	}
	out := cfg.Out
	if out == "" {
		out = filepath.Join(d.Dir, "dist")
	} else {
		out = stage.Resolve(inv.Dir, out)
	}
	o := ReleaseInputsOutputs{
		ID: d.ID, Version: rv.Version, VersionFrom: rv.From, Snapshot: rv.Snapshot,
		Releases: filepath.Join(out, "releases"), Targets: map[string]ReleaseTarget{},
	}
	// Each target gets its own staging directory (and build lock): its
	// release is published, or cleaned up, on its own.
	targets, err := onlyTargets(d.Release.Targets, cfg.Only)
	if err != nil {
		return ReleaseInputsOutputs{}, err
	}
	var begun []*payload.Staging
	for _, ts := range targets {
		t, err := distribution.ParseTarget(ts)
		if err == nil {
			var rt ReleaseTarget
			rt, err = releaseTarget(ctx, inv, cfg, st, rv, t, out, epoch)
			if err == nil {
				o.Targets[ts] = rt
				if stg, ok := payload.Lookup(rt.Staging); ok {
					begun = append(begun, stg)
				}
				continue
			}
		}
		for _, stg := range begun {
			_ = stg.Close()
		}
		return ReleaseInputsOutputs{}, err
	}
	return o, nil
}

// releaseTarget opens target t's staging directory and keys its runtime.
func releaseTarget(ctx context.Context, inv *stage.Invocation, cfg ReleaseInputsConfig, st *buildstate.State, rv distribution.ResolvedVersion, t distribution.Target, out string, epoch int64) (ReleaseTarget, error) {
	d := st.Dist
	k := st.ForTarget(t)
	name := d.ID + "-" + rv.Version + "-" + t.String()
	stg, err := payload.Begin(ctx, out, "release-"+name)
	if err != nil {
		return ReleaseTarget{}, err
	}
	releaseDir := filepath.Join(stg.Dir, name)
	payloadDir := filepath.Join(releaseDir, "payload")
	if err := os.MkdirAll(payloadDir, 0o755); err != nil {
		_ = stg.Close()
		return ReleaseTarget{}, err
	}
	cacheHome := ""
	if cfg.NoCache {
		cacheHome = filepath.Join(stg.Dir, noCacheDir)
	}
	recordKeyInputs(inv, st, cacheHome, k)
	return ReleaseTarget{
		ID: d.ID, Version: rv.Version, Command: d.Command,
		Name: name, Target: t.String(),
		Dir: d.Dir, RuntimeDir: st.RuntimeDir, Entry: d.Runtime.Entry,
		Bundle: d.Release.Bundle, Strip: d.Release.Strip,
		Platform: t.Platform, Arch: t.Arch, Host: t == distribution.HostTarget(),
		InstallKey: k.InstallKey, BundleKey: k.BundleKey,
		BundleCached: !cfg.NoCache && bundleCached(ctx, inv, st, k),
		CacheHome:    cacheHome, Staging: stg.Dir,
		ReleaseDir: releaseDir, Payload: payloadDir,
		Releases: filepath.Join(out, "releases"),
		Created:  time.Unix(epoch, 0).UTC().Format(time.RFC3339), Epoch: epoch,
		Channel: cfg.channel(), LockSHA256: canon.SHA256Hex(st.LockBytes), RuntimeEntries: (1 + len(st.Lock.Packages)) * len(d.Release.Targets),
		PiPackages: len(st.Lock.Packages), SearchTools: len(st.Dist.SearchTools),
		Node:           nodeTargets(st.Lock),
		RuntimePackage: st.RuntimePackage, RuntimeVersion: st.RuntimeVersion,
		Runner: cfg.Runner,
	}, nil
}

// onlyTargets is the entries of declared that only names, in declared's
// order (every entry when only is empty); a name that is not declared is
// refused, naming the declared ones.
func onlyTargets(declared, only []string) ([]string, error) {
	if len(only) == 0 {
		return declared, nil
	}
	for _, o := range only {
		if !slices.Contains(declared, o) {
			return nil, errcode.Newf(errcode.ConfigInvalid, "release_inputs: --target %s is not one of distribution.hcl's release.targets (%s): name one of them, or add it there and run piship lock", o, strings.Join(declared, ", "))
		}
	}
	var ts []string
	for _, d := range declared {
		if slices.Contains(only, d) {
			ts = append(ts, d)
		}
	}
	return ts, nil
}
