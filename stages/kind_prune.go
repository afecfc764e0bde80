package stages

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// Prune removes locked packages that cannot run on the target and the
// node_modules/.bin link directories.
type Prune struct{}

func (Prune) Name() string    { return "prune" }
func (Prune) Version() string { return "1" }
func (Prune) Doc() string {
	return "Removes from dir every package whose package-lock entry excludes the target platform (os/cpu), every node_modules/.bin directory, " +
		"and prebuilt native binaries whose path names only other platforms or architectures (packages like koffi ship one per platform)."
}

// PruneConfig is the configuration of a prune stage.
type PruneConfig struct {
	Dir      string `cty:"dir" required:"true" doc:"the runtime root (holding node_modules/)"`
	Lock     string `cty:"lock" required:"true" doc:"path of package-lock.json"`
	Platform string `cty:"platform" required:"true" doc:"node platform, e.g. linux"`
	Arch     string `cty:"arch" required:"true" doc:"node arch, e.g. x64"`
}

// PruneOutputs are the outputs of a prune stage.
type PruneOutputs struct {
	Removed []string `cty:"removed" doc:"removed paths"`
}

// Run implements stage.Typed.
func (Prune) Run(ctx context.Context, inv *stage.Invocation, c PruneConfig) (PruneOutputs, error) {
	pl, _, err := distribution.ReadPackageLock(stage.Resolve(inv.Dir, c.Lock))
	if err != nil {
		return PruneOutputs{}, err
	}
	removed, err := pruneTree(ctx, filepath.Clean(c.Dir), pl, c.Platform, c.Arch)
	return PruneOutputs{Removed: removed}, err
}

// pruneTree is what a prune stage does to dir (holding node_modules/)
// installed from pl: the runtime's and each vendored Pi package's tree are
// pruned alike.
func pruneTree(ctx context.Context, dir string, pl *distribution.PackageLock, platform, arch string) ([]string, error) {
	cons := make(map[string]payload.Constraint, len(pl.Packages))
	for p, pkg := range pl.Packages {
		if len(pkg.OS) > 0 || len(pkg.CPU) > 0 {
			cons[p] = payload.Constraint{OS: pkg.OS, CPU: pkg.CPU}
		}
	}
	removed, err := payload.Prune(ctx, dir, cons, platform, arch)
	if err != nil {
		return nil, err
	}
	foreign, err := pruneForeignBinaries(dir, platform, arch)
	if err != nil {
		return nil, err
	}
	return append(removed, foreign...), nil
}

// pruneForeignBinaries removes prebuilt native binaries that packages ship
// for every platform (koffi carries 18) when their path names only other
// platforms or architectures than the target.
func pruneForeignBinaries(dir, platform, arch string) ([]string, error) {
	var victims []string
	err := filepath.WalkDir(filepath.Join(dir, "node_modules"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if bundle.ForeignNativeBinary(pathInPackage(rel), platform, arch) {
			victims = append(victims, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, v := range victims {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(v))); err != nil {
			return nil, err
		}
	}
	return victims, nil
}

// pathInPackage strips the node_modules/<name> (or @scope/name) prefix of
// the innermost package from a slash path.
func pathInPackage(rel string) string {
	i := strings.LastIndex(rel, "node_modules/")
	if i < 0 {
		return rel
	}
	rest := rel[i+len("node_modules/"):]
	parts := strings.SplitN(rest, "/", 3)
	if strings.HasPrefix(parts[0], "@") && len(parts) == 3 {
		return parts[2]
	}
	if len(parts) >= 2 {
		return strings.Join(parts[1:], "/")
	}
	return rest
}
