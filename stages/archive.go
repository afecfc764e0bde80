package stages

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/payload"
)

// Archive packs a release directory into a reproducible <name>.tar.gz
// beside it, hashing it while it is written, plus the sha256 sidecar.
type Archive struct{}

func (Archive) Name() string    { return "archive" }
func (Archive) Version() string { return "1" }
func (Archive) Doc() string {
	return "Writes <release_dir>.tar.gz: entries sorted by path bytes, ustar with PAX only where needed, uid/gid 0, mtime = epoch, modes 0644/0755, " +
		"gzip with a normalized header; its sha256 and size are computed while it is written. Writes the `<hex>  <file>` sidecar <name>.tar.gz.sha256."
}

func (Archive) Attrs() []Attr {
	return []Attr{
		{Name: "release_dir", Type: cty.String, Required: true},
		{Name: "epoch", Type: cty.Number, Doc: "tar mtime (SOURCE_DATE_EPOCH; default 0)"},
	}
}

func (Archive) Outputs() []Output {
	return []Output{
		{Name: "path", Type: cty.String}, {Name: "sha256", Type: cty.String},
		{Name: "bytes", Type: cty.Number}, {Name: "files", Type: cty.Number},
	}
}

// Run implements Kind.
func (Archive) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	dir := filepath.Clean(stringOr(inv.Get("release_dir"), ""))
	var epoch int64
	if v := inv.Get("epoch"); !v.IsNull() {
		epoch, _ = v.AsBigFloat().Int64()
	}
	path := dir + ".tar.gz"
	res, err := archive.Create(ctx, path, dir, archive.Options{MTime: epoch})
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %v", filepath.Base(path), err)
	}
	sidecar := fmt.Sprintf("%s  %s\n", res.SHA256, filepath.Base(path))
	if err := payload.WriteFile(path+".sha256", []byte(sidecar), 0o644); err != nil {
		return nil, err
	}
	return map[string]cty.Value{
		"path": cty.StringVal(path), "sha256": cty.StringVal(res.SHA256),
		"bytes": cty.NumberIntVal(res.Size), "files": cty.NumberIntVal(int64(res.Files)),
	}, nil
}
