package consumer

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/updatesource"
)

// Download fetches a signed archive into the install home's downloads,
// checking its size and SHA-256 against the signed entry as it streams.
type Download struct{}

func (Download) Name() string    { return "download" }
func (Download) Version() string { return "2" }
func (Download) Doc() string {
	return "Downloads the chosen archive into apps/<id>/.downloads/, checking size and SHA-256 against the signed channel entry while writing; a mismatch leaves nothing. " +
		"Connect, header and idle timeouts and an overall budget (timeout, max_time) bound it; one that fires is UPDATE_FAILED naming it."
}

// DownloadConfig is the configuration of a download stage: the entry
// update_check chose.
type DownloadConfig struct {
	ID      string `cty:"id" required:"true" doc:"the installed distribution the archive is for"`
	Source  string `cty:"source" required:"true" doc:"the TUF repository (directory or URL) update_check verified"`
	Archive string `cty:"archive" required:"true" doc:"the signed target's file name in the repository"`
	SHA256  string `cty:"sha256" required:"true" doc:"the signed hex sha256 of the archive"`
	Bytes   int64  `cty:"bytes" required:"true" doc:"the signed size of the archive"`
	Timeout string `cty:"timeout" doc:"connect, header and idle limit, e.g. 30s (default: updatesource.DefaultLimits)"`
	MaxTime string `cty:"max_time" doc:"overall budget of the download, e.g. 10m (default: updatesource.DefaultLimits)"`
}

// DownloadOutputs is what a download stage produces.
type DownloadOutputs struct {
	Path string `cty:"path" doc:"the downloaded archive in apps/<id>/.downloads/"`
}

// Run implements stage.Typed.
func (Download) Run(ctx context.Context, inv *stage.Invocation, cfg DownloadConfig) (DownloadOutputs, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return DownloadOutputs{}, err
	}
	limits, err := updatesource.ParseLimits(cfg.Timeout, cfg.MaxTime)
	if err != nil {
		return DownloadOutputs{}, err
	}
	source, err := updatesource.OpenSourceWith(cfg.Source, updatesource.SourceOptions{Limits: limits})
	if err != nil {
		return DownloadOutputs{}, err
	}
	dir := receipt.DownloadsDir(o.Homes.Install, cfg.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return DownloadOutputs{}, err
	}
	dst := filepath.Join(dir, cfg.Archive)
	if err := source.Download(ctx, cfg.Archive, dst, cfg.Bytes, cfg.SHA256); err != nil {
		if _, rerr := receipt.Read(o.Homes.Install, cfg.ID); errors.Is(rerr, receipt.ErrNotInstalled) {
			// An uninstall removed apps/<id> under the download.
			return DownloadOutputs{}, receipt.Errorf(receipt.CodeUpdate, "%s is not installed any more (it was uninstalled while the update downloaded %s): nothing was installed", cfg.ID, cfg.Archive)
		}
		return DownloadOutputs{}, err
	}
	return DownloadOutputs{Path: dst}, nil
}
