package consumer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/contentstore"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/stages/updatesource"
	"piship.dev/piship/tracing/phase"
	"piship.dev/piship/tracing/spankey"
)

// Install installs a release archive, release directory or payload
// directory into the install home and activates it.
type Install struct{}

func (Install) Name() string    { return "install" }
func (Install) Version() string { return "5" }
func (Install) Doc() string {
	return "Installs an archive (read once: its SHA-256 and every file's computed while extracting straight into apps/<id>/<version>, " +
		"checked against the payload inventory), a release directory or a payload directory; commits the receipt atomically under the launch gate, " +
		"writes the command shim, then reclaims obsolete versions within 1.5 s. With update set (the update pipeline), the version must be newer than " +
		"the active one in the receipt read under the install lock: the same version is up to date (nothing written), an older one a refused downgrade."
}

// InstallConfig is the configuration of an install stage.
type InstallConfig struct {
	Source    string `cty:"source" required:"true" doc:"archive, release directory or payload directory"`
	SHA256    string `cty:"sha256" doc:"expected archive digest"`
	ExpectKey string `cty:"expect_key" doc:"sha256:<hex> fingerprint of a key the release must trust for updates"`
	ID        string `cty:"id" doc:"distribution id (default: from the archive name)"`
	Version   string `cty:"version" doc:"version (default: from the archive name)"`
	Channel   string `cty:"channel" doc:"channel the release came from"`
	// Update makes the install an update: the version/active comparison
	// update_check made is made again under the install lock
	// (updatesource.CheckUpgrade), since another command may have changed the
	// active version since.
	Update bool `cty:"update" doc:"an update: refuse a version not newer than the active one (decided under the install lock)"`
	// LockSHA256 and TrustStage come from update_check: the signed
	// target's lock digest, which the release's lock must have, and the
	// verified TUF store, committed only once the archive is accepted.
	LockSHA256 string `cty:"lock_sha256" doc:"the lock digest the signed TUF target claims: the release's lock must have it (an update)"`
	TrustStage string `cty:"trust_stage" doc:"the verified TUF store update_check staged: committed to trust/<id>/ only once the archive is accepted, else removed with the download (an update)"`
	// Delta, DeltaFrom and Repository come from update_check when it
	// downloaded a delta instead of the archive: the release is built
	// from the installed DeltaFrom and the delta, and on any mismatch the
	// archive (sha256) is fetched from Repository through the staged
	// TUF store and installed instead.
	Delta      string `cty:"delta" doc:"a delta update_check downloaded instead of the archive (source is then unused)"`
	DeltaFrom  string `cty:"delta_from" doc:"the installed version the delta starts from"`
	Repository string `cty:"repository" doc:"the TUF repository the archive is fetched from when the delta cannot be used"`
}

// InstallOutputs is what an install stage produces.
type InstallOutputs struct {
	ID       string `cty:"id" doc:"the installed distribution id"`
	Version  string `cty:"version" doc:"the installed (now active) version"`
	Previous string `cty:"previous" doc:"the version that was active before (empty when none)"`
	Payload  string `cty:"payload" doc:"the installed payload directory, apps/<id>/<version>"`
	Files    int    `cty:"files" doc:"payload files installed"`
	Bytes    int64  `cty:"bytes" doc:"payload bytes installed"`
	Reused   bool   `cty:"reused" doc:"the version directory was already complete and was reused (nothing written)"`
	Command  string `cty:"command" doc:"the command shim that launches it"`
	Linked   int    `cty:"linked" doc:"files placed by linking an object of the content-addressed store"`
	UpToDate bool   `cty:"up_to_date" doc:"an update found the version already active: nothing written (version is the active one)"`
	// FromDelta and DeltaFallback: the release was built from a delta,
	// or why the delta was not used and the archive was installed.
	FromDelta     bool   `cty:"from_delta" doc:"the release was built from the installed version and a delta"`
	DeltaFallback string `cty:"delta_fallback" doc:"why the delta could not be used and the archive was installed instead (empty otherwise)"`
}

// Run implements stage.Typed.
func (Install) Run(ctx context.Context, inv *stage.Invocation, cfg InstallConfig) (InstallOutputs, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return InstallOutputs{}, err
	}
	io := home.InstallOptions{
		Options: o, Source: stage.Resolve(inv.Dir, cfg.Source), SHA256: cfg.SHA256, ExpectKey: cfg.ExpectKey,
		ID: cfg.ID, Version: cfg.Version, Channel: cfg.Channel, LockSHA256: cfg.LockSHA256, TrustStage: cfg.TrustStage,
	}
	if cfg.Delta != "" {
		io.Source = ""
		io.Delta = &home.DeltaSource{Path: stage.Resolve(inv.Dir, cfg.Delta), From: cfg.DeltaFrom, ArchiveSHA256: cfg.SHA256,
			Fallback: func(ctx context.Context) (string, error) {
				res, err := tuf.FetchRelease(ctx, tuf.UpdateOptions{Repository: cfg.Repository, TrustDir: cfg.TrustStage,
					Channel: cfg.Channel, Target: platform.HostTarget(), DownloadDir: receipt.DownloadsDir(o.Homes.Install, cfg.ID)}, cfg.SHA256)
				if err != nil {
					return "", err
				}
				return res.Archive, nil
			}}
	}
	if cfg.Update {
		io.Update = func(active string) error {
			err := updatesource.CheckUpgrade(active, cfg.Version)
			if errors.Is(err, updatesource.ErrUpToDate) {
				return home.ErrUpToDate
			}
			return err
		}
	}
	store, err := home.OpenStore(inv.Getenv)
	if err != nil {
		return InstallOutputs{}, err
	}
	io.Store = store
	// Counted by the free space check, taken before the copy starts.
	io.LauncherBytes = home.LauncherSpace(o)
	// The launcher the shims run is copied while the release is extracted;
	// the commit waits for it, and so does every return from here.
	kept := make(chan error, 1)
	go func() {
		kept <- phase.Run(ctx, "keep launcher", func(context.Context) error { return home.KeepLauncher(o) })
	}()
	waitKept := sync.OnceValue(func() error { return <-kept })
	io.BeforeCommit = waitKept
	started := time.Now()
	res, err := home.Install(ctx, io)
	_ = waitKept() // its error, if any, already failed the commit
	if store != nil && err == nil && !res.UpToDate && !res.Reused {
		storeLookupSpan(ctx, started, store)
	}
	if err != nil {
		return InstallOutputs{}, err
	}
	if res.UpToDate {
		return InstallOutputs{ID: res.ID, Version: res.Version, UpToDate: true}, nil
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(inv.Log, "%s: %s\n", inv.Pipeline, w)
	}
	if store != nil && !res.Reused {
		if st := store.Stats(); st.Repaired > 0 || st.Disabled {
			fmt.Fprintf(inv.Log, "%s: store %s: %s removed and their files written%s\n", inv.Pipeline, store.Dir(), canon.Count(st.Repaired, "damaged object"),
				map[bool]string{true: "; links are not possible there, so the rest was written (PISHIP_STORE=off skips the store)"}[st.Disabled])
		}
	}
	// Reclaim failing does not fail the install: the next doctor retries.
	_ = phase.Run(ctx, "reclaim", func(ctx context.Context) error {
		_, err := home.Reclaim(ctx, o, res.ID, 1500*time.Millisecond)
		if err != nil {
			fmt.Fprintf(inv.Log, "%s: reclaim: %v\n", inv.Pipeline, err)
		}
		return err
	})
	return InstallOutputs{
		ID: res.ID, Version: res.Version, Previous: res.Previous, Payload: res.Payload, Files: res.Files, Bytes: res.Bytes,
		Reused: res.Reused, Command: res.Command, Linked: res.Linked, FromDelta: res.FromDelta, DeltaFallback: res.DeltaFallback,
	}, nil
}

// storeLookupSpan records the content store's part of an install as one
// "cache lookup" span of the install stage (piship.cache.name "store"):
// its lookups are one per eligible file, made while the archive is
// extracted, so the span covers the extraction and carries the counts
// instead of thousands of spans. It is a hit when every eligible file was
// linked from the store. It does not make the stage a cache hit: the
// install still wrote its other files, the receipt and the shim.
func storeLookupSpan(ctx context.Context, started time.Time, store *contentstore.Store) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return
	}
	st := store.Stats()
	missed := st.Kept // a repaired object's file is written and kept too
	hit := st.Linked > 0 && missed == 0 && !st.Disabled
	attrs := []attribute.KeyValue{
		attribute.String(spankey.CacheName, "store"), attribute.String(spankey.CacheKey, store.Dir()),
		attribute.Bool(spankey.CacheHit, hit),
		attribute.Int64("piship.store.linked", st.Linked), attribute.Int64("piship.store.kept", st.Kept),
		attribute.Int64("piship.store.repaired", st.Repaired),
	}
	switch {
	case st.Disabled:
		attrs = append(attrs, attribute.String(spankey.CacheMissReason, "links are not possible in the store's file system, so every file was written"))
	case !hit && st.Linked+missed == 0:
		attrs = append(attrs, attribute.String(spankey.CacheMissReason, "no file of the release is kept in the store (none under node_modules/ of at most 1 MiB)"))
	case !hit:
		attrs = append(attrs, attribute.String(spankey.CacheMissReason, canon.Of(missed, st.Linked+missed, "eligible file")+" "+canon.Verb(missed, "was", "were")+" not in the store (written, then kept)"))
	}
	_, span := parent.TracerProvider().Tracer(phase.InstrumentationName).Start(ctx, spankey.CacheLookupSpanName,
		trace.WithTimestamp(started), trace.WithAttributes(attrs...))
	span.End()
}
