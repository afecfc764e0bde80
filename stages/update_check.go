package stages

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/stages/channel"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing/phase"
)

// UpdateCheck reads, verifies and chooses from the signed channel of an
// installed distribution.
type UpdateCheck struct{}

func (UpdateCheck) Name() string    { return "update_check" }
func (UpdateCheck) Version() string { return "2" }
func (UpdateCheck) Doc() string {
	return "Fetches <channel>.json and its signatures from the channel source (a directory, or http(s); plain http only on loopback), verifies " +
		"the threshold of distinct keys trusted by the active release's lock, expiry, distribution and channel names and the replay floor in the " +
		"receipt, picks the newest release for this target and refuses a downgrade. Outputs what to install (empty archive: up to date). " +
		"Every request runs under connect, header and idle timeouts and an overall budget (timeout, max_time); one that fires is UPDATE_FAILED naming it."
}

// UpdateCheckConfig is the configuration of an update_check stage.
type UpdateCheckConfig struct {
	ID      string `cty:"id" required:"true"`
	From    string `cty:"from" doc:"channel source (default: the lock's updates.source)"`
	Channel string `cty:"channel" doc:"channel (default: the lock's updates.channel)"`
	Timeout string `cty:"timeout" doc:"connect, header and idle limit of each request, e.g. 30s (default: channel.DefaultLimits)"`
	MaxTime string `cty:"max_time" doc:"overall budget of each file fetched, e.g. 2m (default: channel.DefaultLimits)"`
}

// UpdateCheckOutputs is what an update_check stage produces.
type UpdateCheckOutputs struct {
	Current  string   `cty:"current"`
	Version  string   `cty:"version" doc:"the version to install, or the current one"`
	Update   bool     `cty:"update" doc:"an update is available"`
	Source   string   `cty:"source"`
	Channel  string   `cty:"channel"`
	Archive  string   `cty:"archive"`
	SHA256   string   `cty:"sha256"`
	Bytes    int64    `cty:"bytes"`
	Sequence int64    `cty:"sequence"`
	Signers  []string `cty:"signers"`
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
	trust, err := lock.UpdateTrust()
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
		return none, receipt.Errorf("UPDATE_FAILED", "%s names no update source: pass --from DIR|URL", id)
	}
	limits, err := channel.ParseLimits(cfg.Timeout, cfg.MaxTime)
	if err != nil {
		return none, err
	}
	source, err := channel.OpenSourceWith(src, channel.SourceOptions{Limits: limits})
	if err != nil {
		return none, err
	}
	fctx, ph := phase.Start(ctx, "fetch channel")
	doc, sig, err := source.FetchChannel(fctx, ch)
	ph.End(err)
	if err != nil {
		return none, err
	}
	_, ph = phase.Start(ctx, "verify channel")
	v, err := channel.Verify(doc, sig, *trust, ch, r.Sequences[ch], time.Now())
	ph.End(err)
	if err != nil {
		return none, err
	}
	target := platform.HostTarget()
	rel, ok := v.Channel.Newest(target)
	if !ok {
		return none, receipt.Errorf("UPDATE_FAILED", "channel %s of %s offers no release for %s", ch, id, target)
	}
	out := UpdateCheckOutputs{
		Current: r.Active, Version: r.Active, Source: source.String(), Channel: ch, Sequence: v.Channel.Sequence, Signers: v.Signers,
	}
	if err := channel.CheckUpgrade(r.Active, rel.Version); err != nil {
		if errors.Is(err, channel.ErrUpToDate) {
			return out, nil
		}
		return none, err
	}
	out.Version, out.Update = rel.Version, true
	out.Archive, out.SHA256, out.Bytes = rel.Archive, rel.SHA256, rel.Bytes
	return out, nil
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
		return nil, nil, receipt.Errorf("UPDATE_FAILED", "%s has no active release in its receipt: reinstall it", id)
	}
	raw, err := os.ReadFile(filepath.Join(active.Payload, distribution.LockFileName))
	if err != nil {
		return nil, nil, receipt.Errorf("UPDATE_FAILED", "cannot read the active release's lock: %v", err)
	}
	return r, raw, nil
}
