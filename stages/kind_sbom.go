package stages

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/bundle"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/sbom"
	"piship.dev/piship/stages/stage"
)

// SBOM writes sbom.spdx.json for the locked runtime.
type SBOM struct{}

func (SBOM) Name() string    { return "sbom" }
func (SBOM) Version() string { return "3" }
func (SBOM) Doc() string {
	return "Writes sbom.spdx.json (SPDX 2.3 JSON) from the package lock and the installed package.json files of tree: every package with its version, " +
		"download location, sha512 checksum, declared license and purl, and DEPENDS_ON relationships. Deterministic: the namespace and created time derive " +
		"from the content and SOURCE_DATE_EPOCH."
}

// SBOMConfig is sbom's configuration.
type SBOMConfig struct {
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory"`
	Tree         string `cty:"tree" required:"true" doc:"the installed runtime (read-only)"`
	ReleaseDir   string `cty:"release_dir" required:"true" doc:"where sbom.spdx.json is written"`
	Created      string `cty:"created" required:"true" doc:"RFC 3339 time"`
	Version      string `cty:"version" doc:"the release version (release_inputs' version); empty: resolved as release_inputs resolves it without flags"`
	Vendored     string `cty:"vendored" doc:"the vendored Pi packages' installed trees: JSON {name: tree} (pi_packages' trees output)"`
	Payload      string `cty:"payload" doc:"the assembled payload: each package's packageFileName is its directory there, or the bundle file that carries it (metadata/bundle.json), or none"`
}

// SBOMOutputs are sbom's outputs.
type SBOMOutputs struct {
	SHA256   string `cty:"sha256" doc:"hex sha256 of sbom.spdx.json"`
	Packages int    `cty:"packages" doc:"packages the SBOM lists"`
}

// Run implements stage.Typed.
func (SBOM) Run(ctx context.Context, inv *stage.Invocation, cfg SBOMConfig) (SBOMOutputs, error) {
	in, err := sbomInput(ctx, inv, cfg.Distribution, cfg.Version, cfg.Tree, cfg.Created, cfg.Vendored)
	if err != nil {
		return SBOMOutputs{}, err
	}
	if cfg.Payload != "" {
		if in.FileName, err = payloadFileNames(stage.Resolve(inv.Dir, cfg.Payload)); err != nil {
			return SBOMOutputs{}, err
		}
	}
	data, sum, err := sbom.SPDX(in)
	if err != nil {
		return SBOMOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(cfg.ReleaseDir, release.SBOMName), data, 0o644); err != nil {
		return SBOMOutputs{}, err
	}
	return SBOMOutputs{SHA256: canon.SHA256Hex(data), Packages: sum.Packages}, nil
}

// payloadFileNames names where the payload at root holds each installed
// package: its directory when it is there, else the bundle file that
// carries it (the bundle manifest), else nothing. The SBOM then never
// names a path the payload does not hold.
func payloadFileNames(root string) (func(string) string, error) {
	var m *bundle.Manifest
	if err := canon.ReadJSON(filepath.Join(root, filepath.FromSlash(bundle.ManifestName)), &m); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sbom: %s: %v", bundle.ManifestName, err)
	}
	return func(key string) string {
		if info, err := os.Stat(filepath.Join(root, filepath.FromSlash(key))); err == nil && info.IsDir() {
			return key
		}
		if m != nil {
			return m.Carrier(key)
		}
		return ""
	}, nil
}
