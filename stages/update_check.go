package stages

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/channel"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/tracing/phase"
)

// UpdateCheck reads, verifies and chooses from the signed channel of an
// installed distribution.
type UpdateCheck struct{}

func (UpdateCheck) Name() string    { return "update_check" }
func (UpdateCheck) Version() string { return "1" }
func (UpdateCheck) Doc() string {
	return "Fetches <channel>.json and its signatures from the channel source (a directory, or http(s); plain http only on loopback), verifies " +
		"the threshold of distinct keys trusted by the active release's lock, expiry, distribution and channel names and the replay floor in the " +
		"receipt, picks the newest release for this target and refuses a downgrade. Outputs what to install (empty archive: up to date)."
}

func (UpdateCheck) Attrs() []Attr {
	return []Attr{
		{Name: "id", Type: cty.String, Required: true},
		{Name: "from", Type: cty.String, Doc: "channel source (default: the lock's updates.source)"},
		{Name: "channel", Type: cty.String, Doc: "channel (default: the lock's updates.channel)"},
	}
}

func (UpdateCheck) Outputs() []Output {
	return []Output{
		{Name: "current", Type: cty.String}, {Name: "version", Type: cty.String, Doc: "the version to install, or the current one"},
		{Name: "update", Type: cty.Bool, Doc: "an update is available"},
		{Name: "source", Type: cty.String}, {Name: "channel", Type: cty.String}, {Name: "archive", Type: cty.String},
		{Name: "sha256", Type: cty.String}, {Name: "bytes", Type: cty.Number}, {Name: "sequence", Type: cty.Number},
		{Name: "signers", Type: cty.List(cty.String)},
	}
}

// Run implements Kind.
func (UpdateCheck) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	id := stringOr(inv.Get("id"), "")
	r, err := receipt.Read(o.Homes.Install, id)
	if err != nil {
		return nil, err
	}
	var active *receipt.Release
	for i := range r.Releases {
		if r.Releases[i].Version == r.Active {
			active = &r.Releases[i]
		}
	}
	if active == nil {
		return nil, receipt.Errorf("UPDATE_FAILED", "%s has no active release in its receipt: reinstall it", id)
	}
	raw, err := os.ReadFile(filepath.Join(active.Payload, dist.LockFileName))
	if err != nil {
		return nil, receipt.Errorf("UPDATE_FAILED", "cannot read the active release's lock: %v", err)
	}
	lock, err := dist.ParseLock(raw)
	if err != nil {
		return nil, err
	}
	trust, err := lock.UpdateTrust()
	if err != nil {
		return nil, err
	}
	ch := stringOr(inv.Get("channel"), "")
	src := stringOr(inv.Get("from"), "")
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
		return nil, receipt.Errorf("UPDATE_FAILED", "%s names no update source: pass --from DIR|URL", id)
	}
	source, err := channel.OpenSource(src, nil)
	if err != nil {
		return nil, err
	}
	fctx, ph := phase.Start(ctx, "fetch channel")
	doc, sig, err := source.FetchChannel(fctx, ch)
	ph.End(err)
	if err != nil {
		return nil, err
	}
	_, ph = phase.Start(ctx, "verify channel")
	v, err := channel.Verify(doc, sig, *trust, ch, r.Sequences[ch], time.Now())
	ph.End(err)
	if err != nil {
		return nil, err
	}
	target := receipt.HostTarget()
	rel, ok := v.Channel.Newest(target)
	if !ok {
		return nil, receipt.Errorf("UPDATE_FAILED", "channel %s of %s offers no release for %s", ch, id, target)
	}
	out := map[string]cty.Value{
		"current": cty.StringVal(r.Active), "version": cty.StringVal(r.Active), "update": cty.False,
		"source": cty.StringVal(source.String()), "channel": cty.StringVal(ch), "archive": cty.StringVal(""),
		"sha256": cty.StringVal(""), "bytes": cty.NumberIntVal(0), "sequence": cty.NumberIntVal(v.Channel.Sequence),
		"signers": stringListVal(v.Signers),
	}
	if err := channel.CheckUpgrade(r.Active, rel.Version); err != nil {
		if errors.Is(err, channel.ErrUpToDate) {
			return out, nil
		}
		return nil, err
	}
	out["version"], out["update"] = cty.StringVal(rel.Version), cty.True
	out["archive"], out["sha256"], out["bytes"] = cty.StringVal(rel.Archive), cty.StringVal(rel.SHA256), cty.NumberIntVal(rel.Bytes)
	return out, nil
}
