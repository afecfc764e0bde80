package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/payload"
)

// Bundle turns the runtime tree into a few esbuild chunks plus the files
// that must stay files, served from the b- bundle cache when it can be.
type Bundle struct{}

func (Bundle) Name() string    { return "bundle" }
func (Bundle) Version() string { return "1" }
func (Bundle) Doc() string {
	return "Bundles the runtime in dir with the esbuild Go API (ESM, code splitting, platform node), keeping native addons, WebAssembly and " +
		"assets read from disk as files and leaving module shims where a path must resolve; writes metadata/bundle.json. With cached = true it " +
		"places the verified bundle cache entry b-<key> instead; after bundling it stores one."
}

func (Bundle) Attrs() []Attr {
	return []Attr{
		{Name: "dir", Type: cty.String, Required: true, Doc: "payload root holding the (pruned, stripped) runtime tree, or empty when cached"},
		{Name: "entry", Type: cty.String, Required: true, Doc: "entry file relative to dir"},
		{Name: "key", Type: cty.String, Required: true, Doc: "bundle cache key (b-...)"},
		{Name: "cached", Type: cty.Bool, Doc: "place the cache entry instead of bundling"},
		{Name: "platform", Type: cty.String, Doc: "target platform (node naming); prebuilt binaries of other platforms are dropped"},
		{Name: "arch", Type: cty.String, Doc: "target arch (node naming)"},
		{Name: "cache_home", Type: cty.String, Doc: "runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"},
	}
}

func (Bundle) Outputs() []Output {
	return []Output{
		{Name: "hit", Type: cty.Bool}, {Name: "chunks", Type: cty.Number}, {Name: "kept", Type: cty.Number},
		{Name: "entry", Type: cty.String, Doc: "the bundle cache entry key"},
	}
}

// Run implements Kind.
func (Bundle) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := Resolve(inv.Dir, stringOr(inv.Get("dir"), ""))
	key := stringOr(inv.Get("key"), "")
	rt, err := runtimeCache(inv)
	if err != nil {
		return nil, err
	}
	span := trace.SpanFromContext(ctx)
	if c := inv.Get("cached"); !c.IsNull() && c.True() {
		// The inputs stage of this run verified the entry's content
		// (bundle_cached); checking file set and sizes again is enough
		// here, hashing it twice per build is not.
		e, err := rt.Get(key, false)
		if err != nil || e == nil {
			return nil, fmt.Errorf("bundle cache entry %s disappeared after it was checked (%v): run the build again", key, err)
		}
		if _, err := e.Place(dir); err != nil {
			return nil, err
		}
		span.SetAttributes(attribute.String("cache.key", key), attribute.Bool("cache.hit", true))
		m, err := readBundleManifest(dir)
		if err != nil {
			return nil, err
		}
		return bundleOutputs(true, key, m), nil
	}
	span.SetAttributes(attribute.String("cache.key", key), attribute.Bool("cache.hit", false))
	entry := stringOr(inv.Get("entry"), "")
	m, err := bundle.Bundle(ctx, bundle.Options{
		Root: dir, Entry: entry, Log: inv.Log,
		Platform: stringOr(inv.Get("platform"), ""), Arch: stringOr(inv.Get("arch"), ""),
		Keep: entryPackageDocs(entry),
	})
	if err != nil {
		return nil, err
	}
	// The packages folded into chunks leave their directory skeleton.
	if _, err := payload.PruneEmptyDirs(dir); err != nil {
		return nil, err
	}
	data, err := payload.CanonicalJSON(m)
	if err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(dir, "metadata", "bundle.json"), data, 0o644); err != nil {
		return nil, err
	}
	// The entry is a hardlinked snapshot of the bundled tree; later stages
	// only add files, and entries are verified by content when used.
	if _, err := rt.Create(key, func(tmp string) error { return payload.LinkTree(dir, tmp) }); err != nil {
		fmt.Fprintf(inv.Log, "%s: bundle not cached: %v\n", inv.Pipeline, err)
	}
	return bundleOutputs(false, key, m), nil
}

func bundleOutputs(hit bool, key string, m *bundle.Manifest) map[string]cty.Value {
	return map[string]cty.Value{
		"hit": cty.BoolVal(hit), "chunks": cty.NumberIntVal(int64(len(m.Chunks))),
		"kept": cty.NumberIntVal(int64(len(m.Kept) + len(m.Shims))), "entry": cty.StringVal(key),
	}
}

func readBundleManifest(dir string) (*bundle.Manifest, error) {
	var m bundle.Manifest
	if err := payload.ReadJSON(filepath.Join(dir, "metadata", "bundle.json"), &m); err != nil {
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
