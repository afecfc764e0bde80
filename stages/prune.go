package stages

import (
	"context"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/payload"
)

// Prune removes locked packages that cannot run on the target and the
// node_modules/.bin link directories.
type Prune struct{}

func (Prune) Name() string    { return "prune" }
func (Prune) Version() string { return "1" }
func (Prune) Doc() string {
	return "Removes from dir every package whose package-lock entry excludes the target platform (os/cpu) and every node_modules/.bin directory."
}

func (Prune) Attrs() []Attr {
	return []Attr{
		{Name: "dir", Type: cty.String, Required: true, Doc: "the runtime root (holding node_modules/)"},
		{Name: "lock", Type: cty.String, Required: true, Doc: "path of package-lock.json"},
		{Name: "platform", Type: cty.String, Required: true, Doc: "node platform, e.g. linux"},
		{Name: "arch", Type: cty.String, Required: true, Doc: "node arch, e.g. x64"},
	}
}

func (Prune) Outputs() []Output {
	return []Output{{Name: "removed", Type: cty.List(cty.String), Doc: "removed paths"}}
}

// Run implements Kind.
func (Prune) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	pl, _, err := dist.ReadPackageLock(Resolve(inv.Dir, stringOr(inv.Get("lock"), "")))
	if err != nil {
		return nil, err
	}
	cons := make(map[string]payload.Constraint, len(pl.Packages))
	for p, pkg := range pl.Packages {
		if len(pkg.OS) > 0 || len(pkg.CPU) > 0 {
			cons[p] = payload.Constraint{OS: pkg.OS, CPU: pkg.CPU}
		}
	}
	dir := filepath.Clean(stringOr(inv.Get("dir"), ""))
	removed, err := payload.Prune(ctx, dir, cons, stringOr(inv.Get("platform"), ""), stringOr(inv.Get("arch"), ""))
	if err != nil {
		return nil, err
	}
	return map[string]cty.Value{"removed": stringListVal(removed)}, nil
}

func stringListVal(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vals := make([]cty.Value, len(ss))
	for i, s := range ss {
		vals[i] = cty.StringVal(s)
	}
	return cty.ListVal(vals)
}
