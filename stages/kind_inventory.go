package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// Inventory finishes a payload: target, lock copies, launch shims, and the
// inventory of every file.
type Inventory struct{}

func (Inventory) Name() string    { return "inventory" }
func (Inventory) Version() string { return "3" }
func (Inventory) Doc() string {
	return "Writes metadata/target.json, copies piship.lock and package-lock.json in, writes bin/<command> (and .cmd for win32; they run the payload's node/bin/node, node/node.exe on win32, when the distribution has a node block), then " +
		"metadata/inventory.json: sorted path -> sha256 of every regular file but itself. Files placed unchanged from a runtime cache entry take " +
		"the entry's recorded digests instead of being read again."
}

// InventoryConfig is the configuration of an inventory stage.
type InventoryConfig struct {
	Dir            string `cty:"dir" required:"true" doc:"the payload root"`
	Distribution   string `cty:"distribution" required:"true" doc:"the distribution directory"`
	Platform       string `cty:"platform" required:"true" doc:"target platform (node naming), recorded in metadata/target.json"`
	Arch           string `cty:"arch" required:"true" doc:"target architecture (node naming), recorded in metadata/target.json"`
	Target         string `cty:"target" doc:"the release target; a linux-<arch>-musl one records libc musl in metadata/target.json"`
	KnownEntry     string `cty:"known_entry" doc:"runtime cache entry whose recorded digests may be trusted"`
	KnownInventory string `cty:"known_inventory" doc:"inventory of the previous payload whose runtime files were linked in unchanged"`
	CacheHome      string `cty:"cache_home" doc:"runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"`
}

// InventoryOutputs are the outputs of an inventory stage.
type InventoryOutputs struct {
	Files  int    `cty:"files" doc:"files listed in metadata/inventory.json"`
	Bytes  int64  `cty:"bytes" doc:"bytes of the files listed"`
	Hashed int    `cty:"hashed" doc:"files read and hashed (the rest came from the cache entry)"`
	SHA256 string `cty:"sha256" doc:"sha256 of metadata/inventory.json"`
}

// Run implements stage.Typed.
func (Inventory) Run(ctx context.Context, inv *stage.Invocation, c InventoryConfig) (InventoryOutputs, error) {
	dir := c.Dir
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, c.Distribution))
	if err != nil {
		return InventoryOutputs{}, err
	}
	platform, arch := c.Platform, c.Arch
	tj := map[string]string{"platform": platform, "arch": arch}
	if t, err := configTarget(c.Target); err == nil && c.Target != "" && t.Musl {
		tj["libc"] = "musl" // glibc is not written: payloads from before musl targets say the same
	}
	target, _ := canon.JSON(tj)
	if err := atomicfs.WriteFileAll(filepath.Join(dir, "metadata", "target.json"), target, 0o644); err != nil {
		return InventoryOutputs{}, err
	}
	for _, c := range []struct{ from, to string }{
		{filepath.Join(d.Dir, "piship.lock"), "piship.lock"},
		{filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir), "package-lock.json"), "package-lock.json"},
	} {
		b, err := os.ReadFile(c.from)
		if err != nil {
			return InventoryOutputs{}, err
		}
		if err := atomicfs.WriteFileAll(filepath.Join(dir, c.to), b, 0o644); err != nil {
			return InventoryOutputs{}, err
		}
	}
	var exts []string
	for _, p := range d.Packages {
		exts = append(exts, p.PackageRoot())
	}
	node := ""
	if d.Node != nil {
		node = distribution.NodePayloadPath(platform + "-" + c.Arch)
	}
	if _, err := payload.ShimNode(dir, d.Command, d.Runtime.Entry, platform, node, exts...); err != nil {
		return InventoryOutputs{}, err
	}
	known, err := knownDigests(inv, c.CacheHome, c.KnownEntry)
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: hashing every file: %v\n", inv.Pipeline, err)
	}
	if prev := c.KnownInventory; prev != "" {
		// Read before this stage replaces nothing of it: the previous
		// payload is a different directory from dir.
		var old map[string]string
		if err := canon.ReadJSON(prev, &old); err == nil {
			if known == nil {
				known = map[string]payload.Known{}
			}
			for p, sum := range old {
				if !payload.DistributionOwned(p) {
					known[p] = payload.Known{Size: -1, SHA256: sum}
				}
			}
		}
	}
	sums, st, err := payload.Inventory(ctx, dir, known)
	if err != nil {
		return InventoryOutputs{}, err
	}
	data, err := canon.JSON(sums)
	if err != nil {
		return InventoryOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dir, filepath.FromSlash(payload.InventoryName)), data, 0o644); err != nil {
		return InventoryOutputs{}, err
	}
	return InventoryOutputs{
		Files: st.Files + 1, Bytes: st.Bytes + int64(len(data)),
		Hashed: st.Hashed, SHA256: payload.InventoryDigest(data),
	}, nil
}

// knownDigests returns the recorded digests of a runtime cache entry. The
// stages between placement and inventory only delete files or create new
// ones (never write into placed files), so a placed file of the same size is
// the recorded file. The entry is looked up in the runtime cache under home
// (PISHIP_CACHE_HOME when empty).
func knownDigests(inv *stage.Invocation, home, key string) (map[string]payload.Known, error) {
	if key == "" {
		return nil, nil
	}
	rt, err := runtimeCacheAt(context.Background(), inv, home) // the entry placed earlier in this run: local
	if err != nil {
		return nil, err
	}
	e, err := rt.Get(key, false)
	if err != nil || e == nil {
		return nil, fmt.Errorf("runtime cache entry %s unavailable: %v", key, err)
	}
	known := make(map[string]payload.Known, len(e.Files))
	for _, f := range e.Files {
		if f.Link == "" {
			known[f.Path] = payload.Known{Size: f.Size, SHA256: f.SHA256}
		}
	}
	return known, nil
}
