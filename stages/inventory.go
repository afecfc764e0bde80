package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/payload"
)

// Inventory finishes a payload: target, lock copies, launch shims, and the
// inventory of every file.
type Inventory struct{}

func (Inventory) Name() string    { return "inventory" }
func (Inventory) Version() string { return "1" }
func (Inventory) Doc() string {
	return "Writes metadata/target.json, copies piship.lock and package-lock.json in, writes bin/<command> (and .cmd for win32), then " +
		"metadata/inventory.json: sorted path -> sha256 of every regular file but itself. Files placed unchanged from a runtime cache entry take " +
		"the entry's recorded digests instead of being read again."
}

func (Inventory) Attrs() []Attr {
	return []Attr{
		{Name: "dir", Type: cty.String, Required: true, Doc: "the payload root"},
		{Name: "distribution", Type: cty.String, Required: true, Doc: "the distribution directory"},
		{Name: "platform", Type: cty.String, Required: true}, {Name: "arch", Type: cty.String, Required: true},
		{Name: "known_entry", Type: cty.String, Doc: "runtime cache entry whose recorded digests may be trusted"},
		{Name: "known_inventory", Type: cty.String, Doc: "inventory of the previous payload whose runtime files were linked in unchanged"},
		{Name: "cache_home", Type: cty.String, Doc: "runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"},
	}
}

func (Inventory) Outputs() []Output {
	return []Output{
		{Name: "files", Type: cty.Number}, {Name: "bytes", Type: cty.Number},
		{Name: "hashed", Type: cty.Number, Doc: "files read and hashed (the rest came from the cache entry)"},
		{Name: "sha256", Type: cty.String, Doc: "sha256 of metadata/inventory.json"},
	}
}

// Run implements Kind.
func (Inventory) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := stringOr(inv.Get("dir"), "")
	d, diags := dist.Load(Resolve(inv.Dir, stringOr(inv.Get("distribution"), "")))
	if diags.HasErrors() {
		return nil, fmt.Errorf("CONFIG_INVALID: %s", diags.Error())
	}
	platform, arch := stringOr(inv.Get("platform"), ""), stringOr(inv.Get("arch"), "")
	target, _ := payload.CanonicalJSON(map[string]string{"platform": platform, "arch": arch})
	if err := payload.WriteFile(filepath.Join(dir, "metadata", "target.json"), target, 0o644); err != nil {
		return nil, err
	}
	for _, c := range []struct{ from, to string }{
		{filepath.Join(d.Dir, "piship.lock"), "piship.lock"},
		{filepath.Join(d.Dir, filepath.FromSlash(d.Runtime.Dir), "package-lock.json"), "package-lock.json"},
	} {
		b, err := os.ReadFile(c.from)
		if err != nil {
			return nil, err
		}
		if err := payload.WriteFile(filepath.Join(dir, c.to), b, 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := payload.Shim(dir, d.Command, d.Runtime.Entry, platform); err != nil {
		return nil, err
	}
	known, err := knownDigests(inv, stringOr(inv.Get("known_entry"), ""))
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: hashing every file: %v\n", inv.Pipeline, err)
	}
	if prev := stringOr(inv.Get("known_inventory"), ""); prev != "" {
		// Read before this stage replaces nothing of it: the previous
		// payload is a different directory from dir.
		var old map[string]string
		if err := payload.ReadJSON(prev, &old); err == nil {
			if known == nil {
				known = map[string]payload.Known{}
			}
			for p, sum := range old {
				if !distributionOwned(p) {
					known[p] = payload.Known{Size: -1, SHA256: sum}
				}
			}
		}
	}
	sums, st, err := payload.Inventory(ctx, dir, known)
	if err != nil {
		return nil, err
	}
	data, err := payload.CanonicalJSON(sums)
	if err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(dir, filepath.FromSlash(payload.InventoryName)), data, 0o644); err != nil {
		return nil, err
	}
	return map[string]cty.Value{
		"files": cty.NumberIntVal(int64(st.Files + 1)), "bytes": cty.NumberIntVal(st.Bytes + int64(len(data))),
		"hashed": cty.NumberIntVal(int64(st.Hashed)), "sha256": cty.StringVal(payload.InventoryDigest(data)),
	}, nil
}

// knownDigests returns the recorded digests of a runtime cache entry. The
// stages between placement and inventory only delete files or create new
// ones (never write into placed files), so a placed file of the same size is
// the recorded file.
func knownDigests(inv *Invocation, key string) (map[string]payload.Known, error) {
	if key == "" {
		return nil, nil
	}
	rt, err := runtimeCache(inv)
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
