package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// Bundle turns the runtime tree into a few esbuild chunks plus the files
// that must stay files, served from the b- bundle cache when it can be.
type Bundle struct{}

func (Bundle) Name() string    { return "bundle" }
func (Bundle) Version() string { return "2" }
func (Bundle) Doc() string {
	return "Bundles the runtime in dir with the esbuild Go API (ESM, code splitting, platform node), keeping native addons, WebAssembly and " +
		"assets read from disk as files and leaving module shims where a path must resolve; writes metadata/bundle.json. With cached = true it " +
		"places the verified bundle cache entry b-<key> instead; after bundling it stores one."
}

// BundleConfig is the configuration of a bundle stage.
type BundleConfig struct {
	Dir       string `cty:"dir" required:"true" doc:"payload root holding the (pruned, stripped) runtime tree, or empty when cached"`
	Entry     string `cty:"entry" required:"true" doc:"entry file relative to dir"`
	Key       string `cty:"key" required:"true" doc:"bundle cache key (b-...)"`
	Cached    bool   `cty:"cached" doc:"place the cache entry instead of bundling"`
	Platform  string `cty:"platform" doc:"target platform (node naming); prebuilt binaries of other platforms are dropped"`
	Arch      string `cty:"arch" doc:"target arch (node naming)"`
	CacheHome string `cty:"cache_home" doc:"runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"`
}

// BundleOutputs are the outputs of a bundle stage.
type BundleOutputs struct {
	Hit    bool   `cty:"hit" doc:"the bundle came from the cache entry (cached = true)"`
	Chunks int    `cty:"chunks" doc:"JavaScript files the bundle wrote"`
	Kept   int    `cty:"kept" doc:"files left in the tree as files (assets, addons) plus module shims"`
	Entry  string `cty:"entry" doc:"the bundle cache entry key"`
}

// Run implements stage.Typed.
func (Bundle) Run(ctx context.Context, inv *stage.Invocation, c BundleConfig) (BundleOutputs, error) {
	dir := stage.Resolve(inv.Dir, c.Dir)
	key := c.Key
	rt, err := runtimeCacheAt(ctx, inv, c.CacheHome)
	if err != nil {
		return BundleOutputs{}, err
	}
	scope, named := rt.Explain().KeyInputs(key)
	if c.Cached {
		// The inputs stage of this run verified the entry's content
		// (bundle_cached); checking file set and sizes again is enough
		// here, hashing it twice per build is not.
		e, err := rt.Get(key, false)
		if err != nil || e == nil {
			return BundleOutputs{}, fmt.Errorf("bundle cache entry %s disappeared after it was checked (%v): run the build again", key, err)
		}
		if _, err := e.Place(dir); err != nil {
			return BundleOutputs{}, err
		}
		inv.CacheLookup(stage.CacheLookup{Cache: "bundle", Key: key, Hit: true, Inputs: named, Scope: scope, Remote: rt.RemoteOutcome(key, true)})
		m, err := readBundleManifest(dir)
		if err != nil {
			return BundleOutputs{}, err
		}
		return bundleOutputs(true, key, m), nil
	}
	// The inputs stage found no verified entry (bundle_cached is false), or
	// was told to rebuild: an entry that stands says which.
	miss := stage.CacheLookup{Cache: "bundle", Key: key, Hit: false, Inputs: named, Scope: scope, Remote: rt.RemoteOutcome(key, false)}
	if miss.Reason = noCacheReason(c.CacheHome); miss.Reason == "" {
		if e, _ := rt.Get(key, false); e != nil {
			miss.Reason = "a rebuild was asked for (--rebuild)"
		}
	}
	inv.CacheLookup(miss)
	m, err := bundle.Bundle(ctx, bundle.Options{
		Root: dir, Entry: c.Entry, Log: inv.Log,
		Platform: c.Platform, Arch: c.Arch,
		Keep: entryPackageDocs(c.Entry),
	})
	if err != nil {
		return BundleOutputs{}, err
	}
	// The packages folded into chunks leave their directory skeleton.
	if _, err := payload.PruneEmptyDirs(dir); err != nil {
		return BundleOutputs{}, err
	}
	data, err := canon.JSON(m)
	if err != nil {
		return BundleOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dir, filepath.FromSlash(bundle.ManifestName)), data, 0o644); err != nil {
		return BundleOutputs{}, err
	}
	// The entry is a hardlinked snapshot of the bundled tree; later stages
	// only add files, and entries are verified by content when used.
	if _, err := rt.CreateInputs(key, named, func(tmp string) error { return payload.LinkTree(dir, tmp) }); err != nil {
		fmt.Fprintf(inv.Log, "%s: bundle not cached: %v\n", inv.Pipeline, err)
	}
	return bundleOutputs(false, key, m), nil
}

func bundleOutputs(hit bool, key string, m *bundle.Manifest) BundleOutputs {
	return BundleOutputs{Hit: hit, Chunks: len(m.Chunks), Kept: len(m.Kept) + len(m.Shims), Entry: key}
}

func readBundleManifest(dir string) (*bundle.Manifest, error) {
	var m bundle.Manifest
	if err := canon.ReadJSON(filepath.Join(dir, filepath.FromSlash(bundle.ManifestName)), &m); err != nil {
		return nil, fmt.Errorf("bundle cache entry without a readable metadata/bundle.json: %v", err)
	}
	return &m, nil
}

// entryPackageDocs keeps the entry package's README and CHANGELOG: an
// application may show them (Pi reads its CHANGELOG for "what's new" and
// points its users at the README), while every dependency's docs go.
func entryPackageDocs(entry string) []string {
	parts := strings.Split(entry, "/")
	if len(parts) < 3 || parts[0] != "node_modules" {
		return nil
	}
	pkg := parts[:2]
	if strings.HasPrefix(parts[1], "@") && len(parts) > 3 {
		pkg = parts[:3]
	}
	dir := strings.Join(pkg, "/")
	return []string{dir + "/README.md", dir + "/CHANGELOG.md"}
}
