package stages

import (
	"context"
	"os"
	"path/filepath"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/channel"
	"piship.dev/piship/stages/home/receipt"
)

// Download fetches a signed archive into the install home's downloads,
// checking its size and SHA-256 against the signed entry as it streams.
type Download struct{}

func (Download) Name() string    { return "download" }
func (Download) Version() string { return "1" }
func (Download) Doc() string {
	return "Downloads the chosen archive into apps/<id>/.downloads/, checking size and SHA-256 against the signed channel entry while writing; a mismatch leaves nothing."
}

func (Download) Attrs() []Attr {
	return []Attr{
		{Name: "id", Type: cty.String, Required: true}, {Name: "source", Type: cty.String, Required: true},
		{Name: "archive", Type: cty.String, Required: true}, {Name: "sha256", Type: cty.String, Required: true},
		{Name: "bytes", Type: cty.Number, Required: true},
	}
}

func (Download) Outputs() []Output { return []Output{{Name: "path", Type: cty.String}} }

// Run implements Kind.
func (Download) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	id, name := stringOr(inv.Get("id"), ""), stringOr(inv.Get("archive"), "")
	source, err := channel.OpenSource(stringOr(inv.Get("source"), ""), nil)
	if err != nil {
		return nil, err
	}
	size, _ := inv.Get("bytes").AsBigFloat().Int64()
	dir := receipt.DownloadsDir(o.Homes.Install, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	dst := filepath.Join(dir, name)
	if err := source.Download(ctx, name, dst, size, stringOr(inv.Get("sha256"), "")); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"path": cty.StringVal(dst)}, nil
}
