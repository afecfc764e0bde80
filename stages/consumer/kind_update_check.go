package consumer

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/stages/updatesource"
	"piship.dev/piship/tracing/phase"
)

// UpdateCheck brings the installation's trusted TUF metadata up to date
// from the distribution's repository (stages/tuf), picks the newest
// release for the host and downloads it.
type UpdateCheck struct{}

func (UpdateCheck) Name() string    { return "update_check" }
func (UpdateCheck) Version() string { return "8" }
func (UpdateCheck) Doc() string {
	return "Runs the TUF client (stages/tuf, go-tuf's updater) against the distribution's repository (a directory, or http(s); plain http only on loopback): " +
		"the root chain from the trusted root in trust/<id>/ (first time: the initial root the active release's lock pins), timestamp, snapshot and targets, " +
		"then picks the newest release of the channel for this target, refuses a downgrade and downloads it into apps/<id>/.downloads/ with TUF's length and hash check. " +
		"The verified store is left staged (trust_stage) for the install stage to commit once it accepted the archive; up to date, it is committed here. " +
		"The chosen release's notes (notes), verified like the archive, are fetched before it (with check too); they are never written. With check, the trusted metadata is read and nothing is written or downloaded but those notes. Outputs what to install (update false: up to date). " +
		"Every request runs under connect, header and idle timeouts and an overall budget (timeout, max_time); one that fires is UPDATE_FAILED naming it. " +
		"A delta from the active version's installed tree (its receipt's treeSha256) to the chosen release is downloaded instead of the archive (delta); a published delta that cannot be used (another tree, a refused download) is said (delta_skipped, a \"delta fallback\" span event) and the archive downloaded."
}

// UpdateCheckConfig is the configuration of an update_check stage.
type UpdateCheckConfig struct {
	ID      string `cty:"id" required:"true" doc:"the installed distribution to update"`
	From    string `cty:"from" doc:"TUF repository (default: the lock's updates.source)"`
	Channel string `cty:"channel" doc:"channel (default: the lock's updates.channel)"`
	Check   bool   `cty:"check" doc:"verify and pick only: write no trusted metadata, download nothing"`
	Timeout string `cty:"timeout" doc:"connect, header and idle limit of each request, e.g. 30s (default: updatesource.DefaultLimits)"`
	MaxTime string `cty:"max_time" doc:"overall budget of each file fetched, e.g. 2m (default: updatesource.DefaultLimits)"`
}

// UpdateCheckOutputs is what an update_check stage produces.
type UpdateCheckOutputs struct {
	Current string `cty:"current" doc:"the active version before the update"`
	Version string `cty:"version" doc:"the version to install, or the current one"`
	Update  bool   `cty:"update" doc:"an update is available"`
	Source  string `cty:"source" doc:"the TUF repository used (directory or URL)"`
	Channel string `cty:"channel" doc:"the channel used"`
	Archive string `cty:"archive" doc:"the downloaded archive (empty with check or when up to date)"`
	SHA256  string `cty:"sha256" doc:"the signed hex sha256 of the chosen archive"`
	Bytes   int64  `cty:"bytes" doc:"the signed size of the chosen archive"`
	// LockSHA256 is the signed target's custom lockSha256, TrustStage the
	// verified store the install stage commits once the archive is
	// accepted (both empty with check or when up to date).
	LockSHA256 string `cty:"lock_sha256" doc:"the lock digest the signed TUF target claims"`
	TrustStage string `cty:"trust_stage" doc:"the verified TUF store staged beside trust/<id>/, for the install stage to commit"`
	// Root and Timestamp are the trusted root and timestamp versions after
	// the update (the timestamp is TUF's freshness counter).
	Root      int64 `cty:"root" doc:"the trusted root version"`
	Timestamp int64 `cty:"timestamp" doc:"the trusted timestamp version"`
	// Notes are the release notes the repository publishes for the
	// version (fetched with check only, verified through TUF).
	Notes string `cty:"notes" doc:"the chosen version's release notes (notes.md), verified against the targets role; empty when the repository has none"`
	// Delta is the delta downloaded instead of the archive (tuf's
	// Result.Delta), DeltaFrom the version it starts from, DeltaBytes its
	// signed size; DeltaSkipped why a published delta was not taken.
	Delta        string `cty:"delta" doc:"the delta downloaded instead of the archive (empty: the archive was, or nothing)"`
	DeltaFrom    string `cty:"delta_from" doc:"the installed version the delta starts from"`
	DeltaBytes   int64  `cty:"delta_bytes" doc:"the signed size of the delta (with check: the one that would be downloaded)"`
	DeltaSkipped string `cty:"delta_skipped" doc:"why a delta published for this update was not taken (empty when none was, or it was taken)"`
	// RegistryBlob is where the archive is served from when its signed
	// target names a registry blob (repo add --registry).
	RegistryBlob string `cty:"registry_blob" doc:"the registry blob URL the archive is downloaded from (empty: the TUF repository's targets/)"`
}

// Run implements stage.Typed.
func (UpdateCheck) Run(ctx context.Context, inv *stage.Invocation, cfg UpdateCheckConfig) (UpdateCheckOutputs, error) {
	var none UpdateCheckOutputs
	o, err := homeOptions(inv)
	if err != nil {
		return none, err
	}
	id := cfg.ID
	r, raw, err := readActiveLock(ctx, o, id)
	if err != nil {
		return none, err
	}
	lock, err := distribution.ParseLock(raw)
	if err != nil {
		return none, err
	}
	root, err := lock.UpdateRoot()
	if err != nil {
		return none, err
	}
	ch, src := cfg.Channel, cfg.From
	if lock.Updates != nil {
		if ch == "" {
			ch = lock.Updates.Channel
		}
		if src == "" {
			src = lock.Updates.Source
		}
	}
	if ch == "" {
		ch = "stable"
	}
	if src == "" {
		return none, receipt.Errorf(receipt.CodeUpdate, "%s names no update source: pass --from DIR|URL", id)
	}
	limits, err := updatesource.ParseLimits(cfg.Timeout, cfg.MaxTime)
	if err != nil {
		return none, err
	}
	fctx, ph := phase.Start(ctx, "tuf update")
	res, err := tuf.Update(fctx, tuf.UpdateOptions{
		Repository: src, TrustDir: receipt.TrustDir(o.Homes.Install, id), ExpectRootSHA256: root,
		Channel: ch, Target: platform.HostTarget(), Active: r.Active, BaseTree: r.Find(r.Active).TreeSHA256,
		DownloadDir: receipt.DownloadsDir(o.Homes.Install, id), Check: cfg.Check, Limits: limits, Defer: true,
	})
	ph.End(err)
	if err != nil {
		if !cfg.Check {
			if gone := home.UpdateAbandoned(ctx, o, id); gone != nil {
				return none, gone
			}
		}
		return none, refuseChannelV1(ctx, src, ch, limits, err)
	}
	out := UpdateCheckOutputs{
		Current: r.Active, Version: r.Active, Source: src, Channel: ch, Root: res.RootVersion, Timestamp: res.TimestampVersion,
	}
	if res.UpToDate {
		return out, nil
	}
	out.Version, out.Update = res.Release.Version, true
	out.Archive, out.SHA256, out.Bytes = res.Archive, res.SHA256, res.Length
	out.LockSHA256, out.TrustStage, out.Notes = res.Release.LockSHA256, res.Stage, res.Notes
	out.RegistryBlob = res.Release.RegistryBlob
	if d := res.Delta; d != nil {
		out.Delta, out.DeltaFrom, out.DeltaBytes = d.Path, d.FromVersion, d.Length
	}
	if out.DeltaSkipped = res.DeltaSkipped; out.DeltaSkipped != "" {
		home.DeltaFallback(ctx, r.Active, out.DeltaSkipped)
		if !cfg.Check {
			fmt.Fprintf(inv.Log, "%s: %s\n", inv.Pipeline, out.DeltaSkipped)
		}
	}
	return out, nil
}

// refuseChannelV1 words a failed update from a source that holds a
// piship-channel/v1 channel (<channel>.json, no metadata/) as what it is.
func refuseChannelV1(ctx context.Context, src, ch string, limits updatesource.Limits, err error) error {
	if !tuf.HasReason(err, tuf.ReasonFetch) && !updatesource.HasReason(err, updatesource.ReasonNotFound) {
		return err
	}
	s, oerr := updatesource.OpenSourceWith(src, updatesource.SourceOptions{Limits: limits})
	if oerr != nil {
		return err
	}
	doc, ferr := s.Fetch(ctx, ch+".json", 1<<20)
	if ferr != nil || !bytes.Contains(doc, []byte(`"piship-channel/v1"`)) {
		return err
	}
	return receipt.Errorf(receipt.CodeUpdate, "%s holds %s.json of schema piship-channel/v1 and no TUF metadata/: piship-channel/v1 was replaced by TUF repositories: publish with `piship repo init` and `piship repo add`, and build releases with updates.root_sha256", src, ch)
}

// readActiveLock reads the receipt of id and the lock of its active
// release under the maintenance lock, so that an install, rollback or
// uninstall running meanwhile is seen whole (before or after), never as a
// receipt naming a release it has just removed. The lock is let go before
// the channel is fetched: the install stage decides again under it.
func readActiveLock(ctx context.Context, o home.Options, id string) (*receipt.Receipt, []byte, error) {
	if err := receipt.CheckID(id); err != nil {
		return nil, nil, err
	}
	unlock, err := receipt.TakeMaintenance(ctx, o.Homes.Install, id, o.LockWait)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	r, err := receipt.Read(o.Homes.Install, id)
	if err != nil {
		return nil, nil, err
	}
	active := r.Find(r.Active)
	if active == nil {
		return nil, nil, receipt.Errorf(receipt.CodeUpdate, "%s has no active release in its receipt: reinstall it", id)
	}
	raw, err := atomicfs.ReadRegular(filepath.Join(active.Payload, distribution.LockFileName), 0)
	if err != nil {
		return nil, nil, receipt.Errorf(receipt.CodeUpdate, "cannot read the active release's lock: %v", err)
	}
	return r, raw, nil
}
