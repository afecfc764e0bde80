package stages

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/npm"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/proc"
)

// NpmInstall places the locked dependency tree into the payload from the
// runtime cache, running `npm ci` into a new cache entry on a miss.
type NpmInstall struct{}

func (NpmInstall) Name() string    { return "npm_install" }
func (NpmInstall) Version() string { return "1" }
func (NpmInstall) Doc() string {
	return "Places the runtime's installed dependency tree (npm ci --omit=dev --ignore-scripts --prefer-offline) into dest from the runtime cache entry " +
		"i-<key> (hardlinks on the same filesystem, else copies), running npm ci into a new entry on a miss. A damaged entry is reported, removed and rebuilt."
}

func (NpmInstall) Attrs() []Attr {
	return []Attr{
		{Name: "runtime_dir", Type: cty.String, Required: true, Doc: "directory with package.json and package-lock.json"},
		{Name: "key", Type: cty.String, Required: true, Doc: "runtime cache key (i-...)"},
		{Name: "dest", Type: cty.String, Doc: "empty directory to place the tree in (the payload root); unset: only make sure the entry exists"},
		{Name: "cache_home", Type: cty.String, Doc: "runtime cache home instead of PISHIP_CACHE_HOME (a release without cache passes a throwaway one)"},
	}
}

func (NpmInstall) Outputs() []Output {
	return []Output{
		{Name: "entry", Type: cty.String, Doc: "the runtime cache entry key"},
		{Name: "hit", Type: cty.Bool, Doc: "the entry existed"},
		{Name: "files", Type: cty.Number}, {Name: "linked", Type: cty.Number}, {Name: "copied", Type: cty.Number},
		{Name: "tree", Type: cty.String, Doc: "the entry's installed tree (read-only: audits, SBOM and notices read it)"},
		{Name: "digest", Type: cty.String, Doc: "the entry digest (over its file listing)"},
	}
}

// Run implements Kind.
func (NpmInstall) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	runtimeDir := stringOr(inv.Get("runtime_dir"), "")
	key := stringOr(inv.Get("key"), "")
	dest := stringOr(inv.Get("dest"), "")
	rt, err := runtimeCache(inv)
	if err != nil {
		return nil, err
	}
	span := trace.SpanFromContext(ctx)
	e, err := rt.Get(key, false)
	if err != nil {
		fmt.Fprintf(inv.Log, "%s: runtime cache entry %s is damaged, rebuilding it: %v\n", inv.Pipeline, key, err)
	}
	hit := e != nil
	if !hit {
		e, err = rt.Create(key, func(dir string) error { return installInto(ctx, runtimeDir, dir, inv) })
		if err != nil {
			return nil, err
		}
	}
	span.SetAttributes(attribute.String("cache.key", key), attribute.Bool("cache.hit", hit))
	var st cache.PlaceStats
	if dest != "" {
		if st, err = e.Place(dest); err != nil {
			return nil, fmt.Errorf("cannot place runtime cache entry %s: %v", key, err)
		}
	}
	return map[string]cty.Value{
		"entry": cty.StringVal(key), "hit": cty.BoolVal(hit), "files": cty.NumberIntVal(int64(len(e.Files))),
		"linked": cty.NumberIntVal(int64(st.Linked)), "copied": cty.NumberIntVal(int64(st.Copied)),
		"tree": cty.StringVal(e.Dir), "digest": cty.StringVal(e.Digest),
	}, nil
}

// installInto copies the runtime's package.json, package-lock.json and the
// local `file:` packages the lock names into dir, runs npm ci there, and
// removes the copied local packages again: the entry holds what npm
// installed, not its inputs.
func installInto(ctx context.Context, runtimeDir, dir string, inv *Invocation) error {
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(runtimeDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	pl, _, err := dist.ReadPackageLock(filepath.Join(runtimeDir, "package-lock.json"))
	if err != nil {
		return err
	}
	var copied []string
	for _, p := range pl.Packages {
		local, ok := strings.CutPrefix(p.Resolved, "file:")
		if !ok || filepath.IsAbs(local) {
			continue
		}
		src := filepath.Join(runtimeDir, filepath.FromSlash(local))
		dst := filepath.Join(dir, filepath.FromSlash(local))
		if err := payload.CopyPath(src, dst); err != nil {
			return fmt.Errorf("local package %s: %v", local, err)
		}
		copied = append(copied, dst)
	}
	// npm's output, line by line and labelled, like an exec stage's echo.
	log := &proc.LinePrefixer{W: inv.Log, Prefix: inv.Name + " | ", SkipBlank: true}
	err = npm.Ci(ctx, dir, log)
	log.Flush()
	if err != nil {
		return err
	}
	for _, c := range copied {
		if err := os.RemoveAll(c); err != nil {
			return err
		}
	}
	// Directories that only held the local packages go too.
	for _, c := range copied {
		for d := filepath.Dir(c); d != dir && strings.HasPrefix(d, dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	return nil
}
