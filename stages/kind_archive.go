package stages

import (
	"context"
	"fmt"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/stage"
)

// releaseFormat is the format releases write: the archive's name is
// <name> + releaseFormat.Ext(), its sidecar that name + ".sha256".
const releaseFormat = archive.V2

// Archive packs a release directory into a reproducible <name>.tar.zst
// (archive.V2) beside it, hashing it while it is written, plus the sha256
// sidecar.
type Archive struct{}

func (Archive) Name() string    { return "archive" }
func (Archive) Version() string { return "1" }
func (Archive) Doc() string {
	return "Writes <release_dir>.tar.zst (piship-archive/v2): entries sorted by path bytes, ustar with PAX only where needed, uid/gid 0, mtime = epoch, modes 0644/0755, " +
		"after a declaration with every file's index, in independent zstd frames cut at entry boundaries and a seek table; its sha256 and size are computed while it is written. Writes the `<hex>  <file>` sidecar <name>.tar.zst.sha256."
}

// ArchiveConfig is archive's configuration.
type ArchiveConfig struct {
	ReleaseDir string `cty:"release_dir" required:"true" doc:"the release directory to archive (<staging>/<name>)"`
	Epoch      int64  `cty:"epoch" doc:"tar mtime (SOURCE_DATE_EPOCH; default 0)"`
}

// ArchiveOutputs are archive's outputs.
type ArchiveOutputs struct {
	Path   string `cty:"path" doc:"the archive, <release_dir>.tar.zst"`
	SHA256 string `cty:"sha256" doc:"hex sha256 of the archive"`
	Bytes  int64  `cty:"bytes" doc:"size of the archive in bytes"`
	Files  int    `cty:"files" doc:"files in the archive"`
}

// Run implements stage.Typed.
func (Archive) Run(ctx context.Context, inv *stage.Invocation, cfg ArchiveConfig) (ArchiveOutputs, error) {
	dir := filepath.Clean(cfg.ReleaseDir)
	path := dir + releaseFormat.Ext()
	res, err := archive.Create(ctx, path, dir, archive.Options{MTime: cfg.Epoch, Format: releaseFormat})
	if err != nil {
		return ArchiveOutputs{}, fmt.Errorf("cannot write %s: %v", filepath.Base(path), err)
	}
	sidecar := fmt.Sprintf("%s  %s\n", res.SHA256, filepath.Base(path))
	if err := atomicfs.WriteFileAll(path+".sha256", []byte(sidecar), 0o644); err != nil {
		return ArchiveOutputs{}, err
	}
	return ArchiveOutputs{Path: path, SHA256: res.SHA256, Bytes: res.Size, Files: res.Files}, nil
}
