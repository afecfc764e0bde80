package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/payload"
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

func (DistInputs) Attrs() []Attr {
	return []Attr{
		{Name: "distribution", Type: cty.String, Required: true, Doc: "the distribution directory (holding distribution.hcl)"},
		{Name: "out", Type: cty.String, Doc: "output directory (default: DIST/dist)"},
		{Name: "rebuild", Type: cty.Bool, Doc: "ignore the build stamp"},
	}
}

func (DistInputs) Outputs() []Output {
	return []Output{
		{Name: "id", Type: cty.String}, {Name: "version", Type: cty.String}, {Name: "command", Type: cty.String},
		{Name: "dir", Type: cty.String, Doc: "absolute distribution directory"},
		{Name: "runtime_dir", Type: cty.String, Doc: "absolute runtime directory (package.json, package-lock.json)"},
		{Name: "entry", Type: cty.String, Doc: "entry file relative to the payload root"},
		{Name: "out", Type: cty.String}, {Name: "final", Type: cty.String, Doc: "<out>/<id>"},
		{Name: "staging", Type: cty.String, Doc: "staging directory (empty when reuse = \"all\")"},
		{Name: "reuse", Type: cty.String, Doc: "all | resources | none"},
		{Name: "bundle", Type: cty.Bool}, {Name: "strip", Type: cty.Bool},
		{Name: "bundle_cached", Type: cty.Bool, Doc: "a verified bundle cache entry exists for bundle_key"},
		{Name: "platform", Type: cty.String}, {Name: "arch", Type: cty.String},
		{Name: "key", Type: cty.String}, {Name: "runtime_key", Type: cty.String, Doc: "the stamp's runtime key"},
		{Name: "install_key", Type: cty.String, Doc: "i- runtime cache key"}, {Name: "bundle_key", Type: cty.String, Doc: "b- bundle cache key"},
		{Name: "lock_sha256", Type: cty.String, Doc: "sha256 of piship.lock"},
	}
}

// Stamp is <out>/<id>.piship-build.json: what decided the payload's bytes.
type Stamp struct {
	Key        string `json:"key"`
	RuntimeKey string `json:"runtimeKey"`
	Inventory  string `json:"inventory"` // sha256 of metadata/inventory.json
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
}

// StampPath is where the stamp of a build stands.
func StampPath(out, id string) string { return filepath.Join(out, id+".piship-build.json") }

// Run implements Kind.
func (DistInputs) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	st, err := buildstate.Load(ctx, Resolve(inv.Dir, stringOr(inv.Get("distribution"), "")))
	if err != nil {
		return nil, err
	}
	d, key, runtimeKey := st.Dist, st.Key, st.RuntimeKey
	installKey, bundleKey, platform, arch, runtimeDir, lockBytes := st.InstallKey, st.BundleKey, st.Platform, st.Arch, st.RuntimeDir, st.LockBytes

	out := stringOr(inv.Get("out"), "")
	if out == "" {
		out = filepath.Join(d.Dir, "dist")
	} else {
		out = Resolve(inv.Dir, out)
	}
	final := filepath.Join(out, d.ID)
	rebuild := !inv.Get("rebuild").IsNull() && inv.Get("rebuild").True()
	reuse := "none"
	if !rebuild {
		reuse = reuseMode(out, d.ID, key, runtimeKey)
	}
	bundleCached := reuse == "none" && !rebuild && bundleCached(inv, st)
	staging := ""
	if reuse == "all" {
		if err := payload.Sweep(ctx, out, d.ID); err != nil {
			return nil, err
		}
	} else {
		st, err := payload.Begin(ctx, out, d.ID)
		if err != nil {
			return nil, err
		}
		staging = st.Dir
	}
	return map[string]cty.Value{
		"id": cty.StringVal(d.ID), "version": cty.StringVal(d.Version), "command": cty.StringVal(d.Command),
		"dir": cty.StringVal(d.Dir), "runtime_dir": cty.StringVal(runtimeDir), "entry": cty.StringVal(d.Runtime.Entry),
		"out": cty.StringVal(out), "final": cty.StringVal(final), "staging": cty.StringVal(staging),
		"reuse": cty.StringVal(reuse), "bundle": cty.BoolVal(d.Release.Bundle), "strip": cty.BoolVal(d.Release.Strip),
		"bundle_cached": cty.BoolVal(bundleCached), "platform": cty.StringVal(platform), "arch": cty.StringVal(arch),
		"key": cty.StringVal(key), "runtime_key": cty.StringVal(runtimeKey),
		"install_key": cty.StringVal(installKey), "bundle_key": cty.StringVal(bundleKey),
		"lock_sha256": cty.StringVal(sha256Hex(lockBytes)),
	}, nil
}

// reuseMode compares the stamp with the keys. The payload is reused only if
// it still stands with the inventory the stamp recorded.
func reuseMode(out, id, key, runtimeKey string) string {
	b, err := os.ReadFile(StampPath(out, id))
	if err != nil {
		return "none"
	}
	var st Stamp
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

// runtimeCache opens the runtime cache under PISHIP_CACHE_HOME.
func runtimeCache(inv *Invocation) (*cache.Runtime, error) {
	return runtimeCacheAt(inv, stringOr(inv.Get("cache_home"), ""))
}

// runtimeCacheAt opens the runtime cache under home, or under
// PISHIP_CACHE_HOME when home is empty. A release without cache passes a
// throwaway home so nothing cached is used and nothing it makes is kept.
func runtimeCacheAt(inv *Invocation, home string) (*cache.Runtime, error) {
	if home == "" {
		h, err := cache.Home(inv.Getenv)
		if err != nil {
			return nil, fmt.Errorf("CONFIG_UNAVAILABLE: %v", err)
		}
		home = h
	}
	return cache.OpenRuntime(home), nil
}

// errDamaged reports whether err is a damaged cache entry (logged, not fatal).
func errDamaged(err error) bool {
	var d *cache.DamagedError
	return errors.As(err, &d)
}

// bundleCached reports whether the runtime cache holds a verified bundle for
// st; the cache is the run's (PISHIP_CACHE_HOME).
func bundleCached(inv *Invocation, st *buildstate.State) bool {
	rt, err := runtimeCacheAt(inv, "")
	if err != nil {
		return false
	}
	return st.BundleCached(rt, inv.Log, inv.Pipeline)
}
