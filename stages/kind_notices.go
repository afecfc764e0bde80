package stages

import (
	"context"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/sbom"
	"piship.dev/piship/stages/stage"
)

// Notices writes the third-party notices and their index.
type Notices struct{}

func (Notices) Name() string    { return "notices" }
func (Notices) Version() string { return "1" }
func (Notices) Doc() string {
	return "Writes licenses/THIRD_PARTY_NOTICES.txt with each package's license texts (LICENSE*, LICENCE*, COPYING*, NOTICE*) and licenses/index.json; " +
		"every SBOM package is covered, those without a license file are listed by name and declared license."
}

// NoticesConfig is notices' configuration.
type NoticesConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory"`
	Tree         string `cty:"tree" required:"true" doc:"the installed runtime (read-only)"`
	ReleaseDir   string `cty:"release_dir" required:"true" doc:"where licenses/ is written"`
	Version      string `cty:"version" doc:"the release version (release_inputs' version); empty: resolved as release_inputs resolves it without flags"`
	Vendored     string `cty:"vendored" doc:"the vendored Pi packages' installed trees: JSON {name: tree} (pi_packages' trees output)"`
}

// NoticesOutputs are notices' outputs.
type NoticesOutputs struct {
	Packages           int `cty:"packages" doc:"packages covered by the notices"`
	WithoutLicenseFile int `cty:"without_license_file" doc:"packages with no license file, listed by name and declared license"`
}

// Run implements stage.Typed.
func (Notices) Run(ctx context.Context, inv *stage.Invocation, cfg NoticesConfig) (NoticesOutputs, error) {
	in, err := sbomInput(ctx, inv, cfg.Distribution, cfg.Version, cfg.Tree, "", cfg.Vendored)
	if err != nil {
		return NoticesOutputs{}, err
	}
	text, index, sum, err := sbom.Notices(in)
	if err != nil {
		return NoticesOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(cfg.ReleaseDir, filepath.FromSlash(release.NoticesName)), text, 0o644); err != nil {
		return NoticesOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(cfg.ReleaseDir, filepath.FromSlash(release.NoticesIndexName)), index, 0o644); err != nil {
		return NoticesOutputs{}, err
	}
	return NoticesOutputs{Packages: sum.Packages, WithoutLicenseFile: sum.WithoutLicenseFile}, nil
}
