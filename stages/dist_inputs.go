package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/npm"
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

// distState is what dist_inputs and release_inputs both derive from a
// distribution: the decoded manifest, its checked lock and the keys.
type distState struct {
	d                          *dist.Distribution
	lock                       *dist.Lock
	pl                         *dist.PackageLock
	lockBytes                  []byte
	runtimeDir                 string
	platform, arch             string
	installKey, bundleKey      string
	runtimeKey, key            string
	runtimePackage, runtimeVer string
}

// loadDist decodes the distribution, refuses a stale lock and a lock that
// breaks the release gates, and computes the cache and stamp keys.
func loadDist(ctx context.Context, inv *Invocation, dir string) (*distState, error) {
	d, diags := dist.Load(dir)
	if diags.HasErrors() {
		return nil, fmt.Errorf("CONFIG_INVALID: %s", diags.Error())
	}
	lock, err := dist.CheckLock(d)
	if err != nil {
		return nil, err
	}
	lockBytes, err := os.ReadFile(filepath.Join(d.Dir, "piship.lock"))
	if err != nil {
		return nil, err
	}
	runtimeDir := filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir))
	pl, plBytes, err := dist.ReadPackageLock(filepath.Join(runtimeDir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	pjBytes, err := os.ReadFile(filepath.Join(runtimeDir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("CONFIG_INVALID: %v", err)
	}
	platform, arch := npm.Platform()
	host := platform + "-" + arch
	if err := dist.Gates(d, pl, npm.Registry(runtimeDir), host); err != nil {
		return nil, err
	}
	nodeV, npmV, err := npm.Versions(ctx)
	if err != nil {
		return nil, fmt.Errorf("CONFIG_UNAVAILABLE: node and npm are needed to build: %v", err)
	}
	tool := cache.ToolDigest()
	st := &distState{d: d, lock: lock, pl: pl, lockBytes: lockBytes, runtimeDir: runtimeDir, platform: platform, arch: arch}
	st.installKey = cache.RuntimeKey{
		ToolDigest: tool, Lock: append(append(append([]byte{}, pjBytes...), 0), plBytes...),
		Platform: platform, Arch: arch, Libc: npm.Libc(), Node: nodeV, Npm: npmV,
	}.Key()
	st.bundleKey = cache.BundleKey(st.installKey, d.Release.Strip, bundle.EsbuildVersion())
	// The runtime key decides the runtime part of the payload; the key adds
	// everything else the lock covers (resources, tools, the manifest).
	st.runtimeKey = digestJSON(map[string]any{
		"tool": tool, "packageJSON": sha256Hex(pjBytes), "packageLock": sha256Hex(plBytes),
		"tools": lock.Tools, "release": lock.Release, "platform": platform, "arch": arch,
		"node": nodeV, "bundle": d.Release.Bundle, "strip": d.Release.Strip,
		"id": d.ID, "command": d.Command, "entry": d.Runtime.Entry, "install": st.installKey,
	})
	st.key = digestJSON(map[string]any{"runtime": st.runtimeKey, "lock": sha256Hex(lockBytes), "manifest": lock.DistributionSHA256})
	// The entry package names the runtime in release.json.
	if parts := strings.Split(d.Runtime.Entry, "/"); len(parts) > 2 {
		pkgPath := strings.Join(parts[:2], "/")
		if strings.HasPrefix(parts[1], "@") && len(parts) > 3 {
			pkgPath = strings.Join(parts[:3], "/")
		}
		st.runtimePackage = strings.TrimPrefix(pkgPath, "node_modules/")
		if p, ok := pl.Packages[pkgPath]; ok {
			st.runtimeVer = p.Version
		}
	}
	return st, nil
}

// bundleCached reports whether a verified bundle cache entry exists; a
// damaged one is removed and reported.
func (st *distState) bundleCached(inv *Invocation, home string) bool {
	if !st.d.Release.Bundle {
		return false
	}
	rt, err := runtimeCacheAt(inv, home)
	if err != nil {
		return false
	}
	e, err := rt.Get(st.bundleKey, true)
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: bundle cache entry %s was damaged and removed: %v\n", inv.Pipeline, st.bundleKey, err)
	}
	return e != nil
}

// Run implements Kind.
func (DistInputs) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	st, err := loadDist(ctx, inv, Resolve(inv.Dir, stringOr(inv.Get("distribution"), "")))
	if err != nil {
		return nil, err
	}
	d, key, runtimeKey := st.d, st.key, st.runtimeKey
	installKey, bundleKey, platform, arch, runtimeDir, lockBytes := st.installKey, st.bundleKey, st.platform, st.arch, st.runtimeDir, st.lockBytes

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
	bundleCached := reuse == "none" && !rebuild && st.bundleCached(inv, "")
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

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// digestJSON hashes the canonical JSON of v (map keys sorted).
func digestJSON(v any) string {
	b, err := payload.CanonicalJSON(v)
	if err != nil {
		panic(err) // only plain data is passed
	}
	return sha256Hex(b)
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

// loadDistOnly decodes distribution.hcl (no lock check: the first stage
// of the pipeline made that).
func loadDistOnly(inv *Invocation, dir string) (*dist.Distribution, error) {
	d, diags := dist.Load(Resolve(inv.Dir, dir))
	if diags.HasErrors() {
		return nil, fmt.Errorf("CONFIG_INVALID: %s", diags.Error())
	}
	return d, nil
}
