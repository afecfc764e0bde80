package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// DistInputs decodes a distribution and its lock, applies the static gates
// and decides how much of an earlier build can be reused. It is the first
// stage of the build pipeline; every later stage works from its outputs.
type DistInputs struct{}

func (DistInputs) Name() string    { return "dist_inputs" }
func (DistInputs) Version() string { return "1" }
func (DistInputs) Doc() string {
	return "Reads DIST/distribution.hcl and DIST/piship.lock, refuses a stale lock (LOCK_INVALID) and locks that break the release rules " +
		"(integrity, sources, install scripts, target), computes the build keys, and compares them with the build stamp to decide what to reuse " +
		"(reuse = \"all\": the payload stands; \"resources\": only resources, lock and inventory change; \"none\": full build). Opens the staging directory."
}

// DistInputsConfig is the configuration of a dist_inputs stage.
type DistInputsConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory (holding distribution.hcl)"`
	Out          string `cty:"out" doc:"output directory (default: DIST/dist)"`
	Rebuild      bool   `cty:"rebuild" doc:"ignore the build stamp"`
	NoFootprint  bool   `cty:"no_footprint" doc:"the build keeps every vendored Pi package file as installed (pi_packages' no_footprint): part of the stamp's keys, so a payload built the other way is not reused"`
	Version      string `cty:"version" doc:"the version (piship build --version); empty: distribution.hcl's version, else the git tag at HEAD (v1.2.3 -> 1.2.3)"`
	Snapshot     bool   `cty:"snapshot" doc:"the snapshot version <next>-snapshot.g<sha> of the commit at HEAD (piship build --snapshot)"`
}

// DistInputsOutputs are the outputs of a dist_inputs stage.
type DistInputsOutputs struct {
	ID           string `cty:"id" doc:"the distribution id"`
	Version      string `cty:"version" doc:"the version the build reports (distribution.ResolveVersion, as a release resolves it, but the snapshot version of HEAD when nothing names one)"`
	Command      string `cty:"command" doc:"the command name the payload installs (bin/<command>)"`
	Dir          string `cty:"dir" doc:"absolute distribution directory"`
	RuntimeDir   string `cty:"runtime_dir" doc:"absolute runtime directory (package.json, package-lock.json)"`
	Entry        string `cty:"entry" doc:"entry file relative to the payload root"`
	Out          string `cty:"out" doc:"absolute output directory"`
	Final        string `cty:"final" doc:"<out>/<id>"`
	Staging      string `cty:"staging" doc:"staging directory (empty when reuse = \"all\")"`
	Reuse        string `cty:"reuse" doc:"all | resources | none"`
	Bundle       bool   `cty:"bundle" doc:"release.bundle: the runtime is bundled"`
	Strip        bool   `cty:"strip" doc:"release.strip: source maps and TypeScript declarations are removed"`
	BundleCached bool   `cty:"bundle_cached" doc:"a verified bundle cache entry exists for bundle_key"`
	Target       string `cty:"target" doc:"the host's target (<platform>-<arch>): a build is for the host"`
	Platform     string `cty:"platform" doc:"target platform (node naming: linux, darwin, win32)"`
	Arch         string `cty:"arch" doc:"target architecture (node naming: x64, arm64)"`
	Key          string `cty:"key" doc:"the build key the stamp records (everything that decides the payload)"`
	RuntimeKey   string `cty:"runtime_key" doc:"the stamp's runtime key"`
	InstallKey   string `cty:"install_key" doc:"i- runtime cache key"`
	BundleKey    string `cty:"bundle_key" doc:"b- bundle cache key"`
	LockSHA256   string `cty:"lock_sha256" doc:"sha256 of piship.lock"`
	// RuntimeEntries is how many runtime cache entries a build of it
	// uses: the runtime's and one per vendored Pi package.
	RuntimeEntries int `cty:"runtime_entries" doc:"runtime cache entries a build uses (1 + the vendored Pi packages)"`
	// PiPackages and SearchTools decide whether the Pi-only stages apply
	// (their when conditions): an app without them does not run them.
	PiPackages  int `cty:"pi_packages" doc:"vendored Pi packages (package blocks) the lock pins; 0: the pi_packages stage does not apply"`
	SearchTools int `cty:"search_tools" doc:"bundled search tools (the search_tools block); 0: the search_tools stage does not apply"`
	// Node counts the node block's targets: 0, the node stage does not
	// apply and the node on PATH runs the release.
	Node int `cty:"node" doc:"targets of the node block (a pinned Node in the payload); 0: the node stage does not apply"`
}

// Run implements stage.Typed.
func (DistInputs) Run(ctx context.Context, inv *stage.Invocation, c DistInputsConfig) (DistInputsOutputs, error) {
	st, err := buildstate.Load(ctx, stage.Resolve(inv.Dir, c.Distribution), false)
	if err != nil {
		return DistInputsOutputs{}, err
	}
	d, key, runtimeKey := st.Dist, st.Key, st.RuntimeKey
	rv, err := d.ResolveVersion(ctx, distribution.VersionOptions{Version: c.Version, Snapshot: c.Snapshot, OrSnapshot: true})
	if err != nil {
		return DistInputsOutputs{}, err
	}
	if c.NoFootprint && len(st.Lock.Packages) > 0 {
		// The vendored packages' files differ: neither the whole payload
		// nor its runtime part (pi-packages/ included) of the other way
		// may be reused.
		key, runtimeKey = canon.SHA256Hex([]byte(key+"\x00no-footprint")), canon.SHA256Hex([]byte(runtimeKey+"\x00no-footprint"))
	}
	recordKeyInputs(inv, st, "", st.HostKeys())

	out := c.Out
	if out == "" {
		out = filepath.Join(d.Dir, "dist")
	} else {
		out = stage.Resolve(inv.Dir, out)
	}
	reuse := "none"
	if !c.Rebuild {
		reuse = reuseMode(out, d.ID, key, runtimeKey)
	}
	bundleCached := reuse == "none" && !c.Rebuild && bundleCached(ctx, inv, st, st.HostKeys())
	staging := ""
	if reuse == "all" {
		if err := payload.Sweep(ctx, out, d.ID); err != nil {
			return DistInputsOutputs{}, err
		}
	} else {
		st, err := payload.Begin(ctx, out, d.ID)
		if err != nil {
			return DistInputsOutputs{}, err
		}
		staging = st.Dir
	}
	return DistInputsOutputs{
		ID: d.ID, Version: rv.Version, Command: d.Command,
		Dir: d.Dir, RuntimeDir: st.RuntimeDir, Entry: d.Runtime.Entry,
		Out: out, Final: filepath.Join(out, d.ID), Staging: staging,
		Reuse: reuse, Bundle: d.Release.Bundle, Strip: d.Release.Strip,
		BundleCached: bundleCached, Target: distribution.HostTarget().String(), Platform: st.Platform, Arch: st.Arch,
		Key: key, RuntimeKey: runtimeKey,
		InstallKey: st.InstallKey, BundleKey: st.BundleKey,
		LockSHA256: canon.SHA256Hex(st.LockBytes), RuntimeEntries: 1 + len(st.Lock.Packages),
		PiPackages: len(st.Lock.Packages), SearchTools: len(st.Dist.SearchTools),
		Node: nodeTargets(st.Lock),
	}, nil
}

// recordKeyInputs leaves the named inputs of the runtime and bundle keys
// for the stages that look them up (cache home: home, or the run's); a
// failure only makes their miss reasons vaguer, so it is logged.
func recordKeyInputs(inv *stage.Invocation, st *buildstate.State, home string, k buildstate.TargetKeys) {
	rt, err := runtimeCacheAt(context.Background(), inv, home) // only writes the explain area: no remote
	if err == nil {
		err = st.RecordKeyInputs(rt, k)
	}
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: cache key inputs not recorded (piship explain will say less): %v\n", inv.Pipeline, err)
	}
}

// reuseMode compares the stamp with the keys. The payload is reused only if
// it still stands with the inventory the stamp recorded.
func reuseMode(out, id, key, runtimeKey string) string {
	b, err := os.ReadFile(payload.StampPath(out, id))
	if err != nil {
		return "none"
	}
	var st payload.Stamp
	if json.Unmarshal(b, &st) != nil {
		return "none"
	}
	inv, err := os.ReadFile(filepath.Join(out, id, filepath.FromSlash(payload.InventoryName)))
	if err != nil || payload.InventoryDigest(inv) != st.Inventory {
		return "none"
	}
	switch {
	case st.Key == key:
		return "all"
	case st.RuntimeKey == runtimeKey:
		return "resources"
	}
	return "none"
}
