// Package buildstate derives what a build and a release both start from: a
// distribution's decoded manifest, its checked lock and package lock, the
// host target, and the runtime, bundle and stamp keys that decide what an
// earlier build or the runtime cache can serve; and installs an npm project
// into the runtime cache under its key (install.go: the runtime's and each
// vendored Pi package's, InstallPiPackage).
package buildstate

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/npm"
	nodeplatform "piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/stage/errcode"
)

// State is what dist_inputs and release_inputs both derive from a
// distribution: the decoded manifest, its checked lock and the keys.
type State struct {
	Dist        *distribution.Distribution
	Lock        *distribution.Lock
	PackageLock *distribution.PackageLock
	LockBytes   []byte
	// RuntimeDir holds package.json and package-lock.json.
	RuntimeDir     string
	Platform, Arch string
	// InstallKey is the i- runtime cache key, BundleKey the b- one.
	InstallKey, BundleKey string
	// RuntimeKey decides the runtime part of the payload; Key adds
	// everything else the lock covers.
	RuntimeKey, Key string
	// RuntimePackage and RuntimeVersion name the entry's package.
	RuntimePackage, RuntimeVersion string
	// InstallInputs and BundleInputs are the named inputs of InstallKey
	// and BundleKey, for saying why a runtime or bundle lookup missed.
	InstallInputs, BundleInputs cache.Inputs

	// What ForTarget keys another target's install from.
	packageJSON, packageLock []byte
	nodeV, npmV              string
}

// TargetKeys are the runtime and bundle cache keys of one release target
// (ForTarget), with their named inputs.
type TargetKeys struct {
	Target                      distribution.Target
	InstallKey, BundleKey       string
	InstallInputs, BundleInputs cache.Inputs
}

// ForTarget keys the runtime's install and bundle for target t: the same
// lock installed with npm ci --os/--cpu/--libc for t (InstallArgs). The
// host's keys are the State's own.
func (st *State) ForTarget(t distribution.Target) TargetKeys {
	k := TargetKeys{Target: t}
	k.InstallKey, k.InstallInputs = InstallKey(st.Dist.Runtime.Dir, st.packageJSON, st.packageLock, st.nodeV, st.npmV, t)
	k.BundleKey = runtimecache.BundleKey(k.InstallKey, st.Dist.Release.Strip, bundle.EsbuildVersion())
	// The bundle's own inputs, and the runtime's it is made from, so a
	// bundle miss names the lock file rather than only "runtime key".
	k.BundleInputs = cache.Inputs{"runtime key": k.InstallKey, "strip": fmt.Sprint(st.Dist.Release.Strip), "esbuild version": bundle.EsbuildVersion()}
	for n, v := range k.InstallInputs {
		k.BundleInputs[n] = v
	}
	return k
}

// Load decodes the distribution in dir, refuses a stale lock and a lock
// that breaks the release gates, and computes the cache and stamp keys of
// the host's target. anyHost waives the gate that the host is one of
// release.targets (a release builds every target: ForTarget).
func Load(ctx context.Context, dir string, anyHost bool) (*State, error) {
	d, err := LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	lock, err := distribution.CheckLock(d)
	if err != nil {
		return nil, err
	}
	lockBytes, err := atomicfs.ReadRegular(filepath.Join(d.Dir, "piship.lock"), 0)
	if err != nil {
		return nil, err
	}
	runtimeDir := filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir))
	pl, plBytes, err := distribution.ReadPackageLock(filepath.Join(runtimeDir, "package-lock.json"))
	if err != nil {
		return nil, err
	}
	pjBytes, err := atomicfs.ReadRegular(filepath.Join(runtimeDir, "package.json"), 0)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	platform, arch := nodeplatform.Host()
	host := platform + "-" + arch
	if anyHost {
		host = distribution.AnyHost
	}
	if err := distribution.Gates(d, pl, npm.Registry(runtimeDir), host); err != nil {
		return nil, err
	}
	nodeV, npmV, err := npm.Versions(ctx)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "node and npm are needed to build: %v", err)
	}
	tool := cache.ToolDigest()
	st := &State{Dist: d, Lock: lock, PackageLock: pl, LockBytes: lockBytes, RuntimeDir: runtimeDir, Platform: platform, Arch: arch,
		packageJSON: pjBytes, packageLock: plBytes, nodeV: nodeV, npmV: npmV}
	hk := st.ForTarget(distribution.HostTarget())
	st.InstallKey, st.InstallInputs, st.BundleKey, st.BundleInputs = hk.InstallKey, hk.InstallInputs, hk.BundleKey, hk.BundleInputs
	// The runtime key decides the runtime part of the payload; the key adds
	// everything else the lock covers (resources, tools, the manifest).
	runtimePart := map[string]any{
		"tool": tool, "packageJSON": canon.SHA256Hex(pjBytes), "packageLock": canon.SHA256Hex(plBytes),
		"tools": lock.Tools, "release": lock.Release, "platform": platform, "arch": arch,
		"node": nodeV, "bundle": d.Release.Bundle, "strip": d.Release.Strip,
		"id": d.ID, "command": d.Command, "entry": d.Runtime.Entry, "install": st.InstallKey,
	}
	// The vendored Pi packages are part of it too (only when there are
	// some, so the keys of distributions without them stay as they were).
	if len(lock.SearchTools) > 0 {
		runtimePart["searchTools"] = lock.SearchTools
	}
	if len(lock.Packages) > 0 {
		runtimePart["piPackages"] = lock.Packages
	}
	if lock.Node != nil {
		runtimePart["nodeRuntime"] = lock.Node
	}
	st.RuntimeKey = digestJSON(runtimePart)
	st.Key = digestJSON(map[string]any{"runtime": st.RuntimeKey, "lock": canon.SHA256Hex(lockBytes), "manifest": lock.DistributionSHA256})
	// The entry package names the runtime in release.json.
	if parts := strings.Split(d.Runtime.Entry, "/"); len(parts) > 2 {
		pkgPath := strings.Join(parts[:2], "/")
		if strings.HasPrefix(parts[1], "@") && len(parts) > 3 {
			pkgPath = strings.Join(parts[:3], "/")
		}
		st.RuntimePackage = strings.TrimPrefix(pkgPath, "node_modules/")
		if p, ok := pl.Packages[pkgPath]; ok {
			st.RuntimeVersion = p.Version
		}
	}
	return st, nil
}

// BundleCached reports whether rt holds a verified bundle cache entry for
// the state's bundle key; a damaged one is removed and reported to log.
// k says which target's (HostKeys for the host's).
func (st *State) BundleCached(rt *runtimecache.Cache, log io.Writer, pipeline string, k TargetKeys) bool {
	if !st.Dist.Release.Bundle || rt == nil {
		return false
	}
	e, err := rt.Get(k.BundleKey, true)
	if err != nil {
		fmt.Fprintf(log, "%s: bundle cache entry %s was damaged and removed: %v\n", pipeline, k.BundleKey, err)
	}
	return e != nil
}

// HostKeys are the keys of the host's target (the State's own).
func (st *State) HostKeys() TargetKeys {
	return TargetKeys{Target: distribution.HostTarget(), InstallKey: st.InstallKey, BundleKey: st.BundleKey, InstallInputs: st.InstallInputs, BundleInputs: st.BundleInputs}
}

// RecordKeyInputs writes the named inputs of the i- and b- keys into the
// runtime cache's explain area, where npm_install and bundle read them
// back when they look the keys up; scoped by the distribution directory.
// k says which target's (HostKeys for the host's).
func (st *State) RecordKeyInputs(rt *runtimecache.Cache, k TargetKeys) error {
	x := rt.Explain()
	if err := x.RecordKeyInputs(k.InstallKey, st.Dist.Dir, k.InstallInputs); err != nil {
		return err
	}
	return x.RecordKeyInputs(k.BundleKey, st.Dist.Dir, k.BundleInputs)
}

// LoadManifest decodes distribution.hcl in dir without checking the lock
// (the first stage of a pipeline made that).
func LoadManifest(dir string) (*distribution.Distribution, error) {
	d, diags := distribution.Load(dir)
	if diags.HasErrors() {
		return nil, diag.NewError(errcode.ConfigInvalid, diags)
	}
	return d, nil
}

// digestJSON hashes the canonical JSON of v (map keys sorted).
func digestJSON(v any) string {
	b, err := canon.JSON(v)
	if err != nil {
		panic(err) // only plain data is passed
	}
	return canon.SHA256Hex(b)
}

// LoadWithPackageLock decodes distribution.hcl in dir (as LoadManifest) and
// its runtime's package-lock.json, returning the lock's bytes too, so a
// caller that hashes them reads the file once.
func LoadWithPackageLock(dir string) (*distribution.Distribution, *distribution.PackageLock, []byte, error) {
	d, err := LoadManifest(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	pl, raw, err := distribution.ReadPackageLock(filepath.Join(d.RuntimeDir(), "package-lock.json"))
	if err != nil {
		return nil, nil, nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
	}
	return d, pl, raw, nil
}

// InstallKey is the runtime cache key of an npm project's install (its
// package.json and package-lock.json bytes, installed by node/npm of the
// given versions for target t, by this piship) and the named inputs a miss
// reports, the files named by dir (the project's directory, relative to
// the distribution: "runtime", "packages/pi-web-access"). The runtime and
// every vendored Pi package are keyed here, so they cannot drift apart.
func InstallKey(dir string, packageJSON, packageLock []byte, nodeV, npmV string, t distribution.Target) (string, cache.Inputs) {
	platform, arch, libc := t.Platform, t.Arch, t.Libc()
	tool := cache.ToolDigest()
	key := runtimecache.InstallKey{
		ToolDigest: tool, Lock: append(append(append([]byte{}, packageJSON...), 0), packageLock...),
		Platform: platform, Arch: arch, Libc: libc, Node: nodeV, Npm: npmV,
	}.Key()
	rel := strings.TrimSuffix(dir, "/") + "/"
	if dir == "" || dir == "." {
		rel = ""
	}
	return key, cache.Inputs{
		cache.InputFilePrefix + rel + "package.json":      canon.SHA256Hex(packageJSON),
		cache.InputFilePrefix + rel + "package-lock.json": canon.SHA256Hex(packageLock),
		"platform": platform, "arch": arch, "libc": libc,
		"node version": nodeV, "npm version": npmV, cache.InputTool: tool,
	}
}
