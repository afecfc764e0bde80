package stages

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/tracing/phase"
)

// Install installs a release archive, release directory or payload
// directory into the install home and activates it.
type Install struct{}

func (Install) Name() string    { return "install" }
func (Install) Version() string { return "1" }
func (Install) Doc() string {
	return "Installs an archive (read once: its SHA-256 and every file's computed while extracting straight into apps/<id>/<version>, " +
		"checked against the payload inventory), a release directory or a payload directory; commits the receipt atomically under the launch gate, " +
		"writes the command shim, then reclaims obsolete versions within 1.5 s."
}

func (Install) Attrs() []Attr {
	return []Attr{
		{Name: "source", Type: cty.String, Required: true, Doc: "archive, release directory or payload directory"},
		{Name: "sha256", Type: cty.String, Doc: "expected archive digest"},
		{Name: "expect_key", Type: cty.String, Doc: "sha256:<hex> fingerprint of a key the release must trust for updates"},
		{Name: "id", Type: cty.String, Doc: "distribution id (default: from the archive name)"},
		{Name: "version", Type: cty.String, Doc: "version (default: from the archive name)"},
		{Name: "channel", Type: cty.String, Doc: "channel the release came from"},
		{Name: "sequence", Type: cty.Number, Doc: "the signed channel's sequence (raises the replay floor)"},
	}
}

func (Install) Outputs() []Output {
	return []Output{
		{Name: "id", Type: cty.String}, {Name: "version", Type: cty.String}, {Name: "previous", Type: cty.String},
		{Name: "payload", Type: cty.String}, {Name: "files", Type: cty.Number}, {Name: "bytes", Type: cty.Number},
		{Name: "reused", Type: cty.Bool}, {Name: "command", Type: cty.String},
		{Name: "linked", Type: cty.Number, Doc: "files placed by linking an object of the content-addressed store"},
	}
}

// Run implements Kind.
func (Install) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	io := home.InstallOptions{
		Options: o, Source: Resolve(inv.Dir, stringOr(inv.Get("source"), "")), SHA256: stringOr(inv.Get("sha256"), ""),
		ExpectKey: stringOr(inv.Get("expect_key"), ""),
		ID:        stringOr(inv.Get("id"), ""), Version: stringOr(inv.Get("version"), ""), Channel: stringOr(inv.Get("channel"), ""),
	}
	if v := inv.Get("sequence"); !v.IsNull() {
		io.Sequence, _ = v.AsBigFloat().Int64()
	}
	store, err := cache.OpenStore(inv.Getenv)
	if err != nil {
		return nil, err
	}
	io.Store = store
	// The launcher the shims run is copied while the release is extracted;
	// the commit waits for it, and so does every return from here.
	kept := make(chan error, 1)
	go func() {
		kept <- phase.Run(ctx, "keep launcher", func(context.Context) error { return keepLauncher(o.Homes.Install) })
	}()
	waitKept := sync.OnceValue(func() error { return <-kept })
	io.BeforeCommit = waitKept
	res, err := home.Install(ctx, io)
	_ = waitKept() // its error, if any, already failed the commit
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(inv.Log, "%s: %s\n", inv.Pipeline, w)
	}
	if store != nil && !res.Reused {
		if st := store.Stats(); st.Repaired > 0 || st.Disabled {
			fmt.Fprintf(inv.Log, "%s: store %s: %d damaged objects removed and their files written%s\n", inv.Pipeline, store.Dir(), st.Repaired,
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
	return map[string]cty.Value{
		"id": cty.StringVal(res.ID), "version": cty.StringVal(res.Version), "previous": cty.StringVal(res.Previous),
		"payload": cty.StringVal(res.Payload), "files": cty.NumberIntVal(int64(res.Files)), "bytes": cty.NumberIntVal(res.Bytes),
		"reused": cty.BoolVal(res.Reused), "command": cty.StringVal(res.Command), "linked": cty.NumberIntVal(int64(res.Linked)),
	}, nil
}
