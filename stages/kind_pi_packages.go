package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/footprint"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/stage"
)

// PiPackages places the distribution's vendored Pi packages into the
// payload: each from its own npm project, through the runtime cache (an
// i- entry per package, npm ci on a miss), under pi-packages/<name>/, and
// checked against the package.json and extension entry files the lock
// pins.
type PiPackages struct{}

func (PiPackages) Name() string    { return "pi_packages" }
func (PiPackages) Version() string { return "2" }
func (PiPackages) Doc() string {
	return "Installs each package block's npm project (npm ci --omit=dev --ignore-scripts) into a runtime cache entry of its own and places it at " +
		"pi-packages/<name>/ of dest, pruned like the runtime (node_modules/.bin, other platforms' packages and binaries) and, with strip, stripped like it; the package's package.json and extension entry files must be the ones piship.lock pins (else LOCK_INVALID: run piship lock). " +
		"Then the footprint work (stages/footprint): each package's closure decision (a bundle-safe closure bundled into <package>/.bundle behind forwarding modules), identical dependencies shared in pi-packages/.shared, the TypeScript modules of a package with pretranspile = true written as JavaScript beside them (none of it with no_footprint), " +
		"all recorded in metadata/pi-package-footprint.json. A distribution without package blocks places nothing."
}

// PiPackagesConfig is the configuration of a pi_packages stage.
type PiPackagesConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"distribution directory"`
	Dest         string `cty:"dest" required:"true" doc:"the payload root"`
	CacheHome    string `cty:"cache_home" doc:"runtime cache home instead of PISHIP_CACHE_HOME"`
	NoFootprint  bool   `cty:"no_footprint" doc:"keep every vendored file as installed: no closure bundled, no dependency shared (the footprint report still records the closure decisions)"`
	Strip        bool   `cty:"strip" doc:"remove source maps and TypeScript declarations from the placed packages, as the strip stage does for the runtime"`
	Target       string `cty:"target" doc:"the release target whose native packages npm installs and prune keeps (linux-x64, darwin-arm64, linux-x64-musl); empty: the host's"`
}

// PiPackagesOutputs are the outputs of a pi_packages stage.
type PiPackagesOutputs struct {
	Packages int `cty:"packages" doc:"vendored Pi packages placed"`
	Files    int `cty:"files" doc:"files placed for them"`
	Hits     int `cty:"hits" doc:"packages served by the runtime cache"`
	// Trees are the installed projects (read-only runtime cache entries)
	// the SBOM and the notices read.
	Trees string `cty:"trees" doc:"JSON {name: installed tree} of the packages (read-only: the SBOM and notices read them)"`
	// Closures and Dependencies are the footprint's two summary lines.
	Closures     string `cty:"closures" doc:"Pi package closures: ... (the footprint report's first line)"`
	Dependencies string `cty:"dependencies" doc:"Pi package dependencies: ... (its second line)"`
}

// Run implements stage.Typed.
func (PiPackages) Run(ctx context.Context, inv *stage.Invocation, c PiPackagesConfig) (PiPackagesOutputs, error) {
	out := PiPackagesOutputs{Trees: "{}"}
	lock, _, err := distribution.ReadLock(c.Distribution)
	if err != nil {
		return out, err
	}
	if len(lock.Packages) == 0 {
		return out, nil
	}
	trees := map[string]string{}
	rt, err := runtimeCacheAt(ctx, inv, c.CacheHome)
	if err != nil {
		return out, err
	}
	// The installs (npm ci on a miss: mostly waiting on the registry) run
	// side by side; placing and checking them follows in lock order.
	entries := make([]*runtimecache.Entry, len(lock.Packages))
	hits := make([]bool, len(lock.Packages))
	locks := make([]*distribution.PackageLock, len(lock.Packages)) // read once: prune, then the footprint
	log := &syncWriter{w: inv.Log}
	target, err := configTarget(c.Target)
	if err != nil {
		return out, err
	}
	if err := parallel.ForEach(ctx, len(lock.Packages), 4, func(i int) (err error) {
		entries[i], hits[i], err = buildstate.InstallPiPackage(ctx, rt, c.Distribution, lock.Packages[i], log, inv.Name+" "+lock.Packages[i].Name, target)
		return err
	}); err != nil {
		return out, err
	}
	platform, arch := target.Platform, target.Arch
	for i, p := range lock.Packages {
		e, hit := entries[i], hits[i]
		lk := stage.CacheLookup{Cache: "runtime", Key: e.Key, Hit: hit, Remote: rt.RemoteOutcome(e.Key, hit)}
		if !hit {
			lk.Reason = noCacheReason(c.CacheHome)
		}
		inv.CacheLookup(lk)
		dst := filepath.Join(c.Dest, filepath.FromSlash(distribution.PiPackage{Name: p.Name}.PayloadDir()))
		if _, err := e.Place(dst); err != nil {
			return out, fmt.Errorf("cannot place Pi package %s (runtime cache entry %s): %v", p.Name, e.Key, err)
		}
		// As the runtime's tree: no node_modules/.bin links, no package or
		// prebuilt binary for another platform.
		pl, _, err := distribution.ReadPackageLock(filepath.Join(c.Distribution, filepath.FromSlash(p.Dir), "package-lock.json"))
		if err != nil {
			return out, err
		}
		locks[i] = pl
		if _, err := pruneTree(ctx, dst, pl, platform, arch); err != nil {
			return out, fmt.Errorf("Pi package %s: %v", p.Name, err)
		}
		// The release's strip covers the vendored packages too (before
		// the footprint, so a shared copy is the stripped one).
		if c.Strip {
			if _, _, err := payload.Strip(ctx, dst); err != nil {
				return out, fmt.Errorf("Pi package %s: %v", p.Name, err)
			}
		}
		if err := distribution.CheckPackageFiles(p, filepath.Join(c.Dest, filepath.FromSlash(p.Root)), c.Distribution); err != nil {
			return out, err
		}
		trees[p.Name] = e.Dir
		out.Packages++
		out.Files += len(e.Files)
		if hit {
			out.Hits++
		}
	}
	// The footprint work once every package is in place: closure
	// decisions, then the identical dependencies shared.
	var fps []footprint.Package
	for i, p := range lock.Packages {
		fp := footprint.Package{Name: p.Name, Dir: distribution.PiPackage{Name: p.Name}.PayloadDir(), Lock: locks[i], Pretranspile: p.Pretranspile}
		for _, e := range p.Extensions {
			fp.Entries = append(fp.Entries, p.Root+"/"+e.Path)
		}
		fps = append(fps, fp)
	}
	rep, err := footprint.Apply(c.Dest, fps, !c.NoFootprint)
	if err != nil {
		return out, err
	}
	lines := rep.Lines()
	for _, l := range lines {
		fmt.Fprintln(inv.Log, l)
	}
	out.Closures, out.Dependencies = lines[0], lines[1]
	b, err := json.Marshal(trees)
	out.Trees = string(b)
	return out, err
}

// syncWriter serializes the lines of concurrent npm runs.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
