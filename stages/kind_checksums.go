package stages

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
)

// Checksums writes checksums.txt for a release directory.
type Checksums struct{}

func (Checksums) Name() string    { return "checksums" }
func (Checksums) Version() string { return "1" }
func (Checksums) Doc() string {
	return "Writes checksums.txt in release_dir: sorted `<sha256>  <path>` lines (sha256sum format) for every file outside payload/, plus payload/metadata/inventory.json (which covers the payload)."
}

// ChecksumsConfig is checksums' configuration.
type ChecksumsConfig struct {
	ReleaseDir string `cty:"release_dir" required:"true" doc:"the release directory to list"`
}

// ChecksumsOutputs are checksums' outputs.
type ChecksumsOutputs struct {
	SHA256 string `cty:"sha256" doc:"sha256 of checksums.txt"`
	Files  int    `cty:"files" doc:"lines in checksums.txt"`
}

// Run implements stage.Typed.
func (Checksums) Run(ctx context.Context, inv *stage.Invocation, cfg ChecksumsConfig) (ChecksumsOutputs, error) {
	dir := cfg.ReleaseDir
	paths, err := release.ChecksumPaths(dir)
	if err != nil {
		return ChecksumsOutputs{}, err
	}
	sums, err := payload.HashFiles(ctx, dir, paths)
	if err != nil {
		return ChecksumsOutputs{}, err
	}
	var b strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&b, "%s  %s\n", sums[i], p)
	}
	data := []byte(b.String())
	if err := atomicfs.WriteFileAll(filepath.Join(dir, release.ChecksumsName), data, 0o644); err != nil {
		return ChecksumsOutputs{}, err
	}
	return ChecksumsOutputs{SHA256: canon.SHA256Hex(data), Files: len(paths)}, nil
}
