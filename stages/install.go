package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/channel"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/tracing/phase"
)

// homeOptions resolves the three homes from the run's environment and the
// launcher the command shims run: the piship-launch kept in the install
// home (it starts in ~2 ms), else this binary's `launch` command. Only
// install puts the launcher there (keepLauncher); rollback, doctor and
// update's check just name it.
func homeOptions(inv *Invocation) (home.Options, error) {
	homes, err := receipt.ResolveHomes(inv.Getenv)
	if err != nil {
		return home.Options{}, err
	}
	o := home.Options{Homes: homes, Log: inv.Log}
	if src := launcherBeside(); src != "" {
		o.Launcher = keptLauncher(src, homes.Install)
	} else if exe, err := os.Executable(); err == nil {
		o.Launcher = exe
	}
	return o, nil
}

// launcherBeside returns the piship-launch binary beside this piship, or "".
func launcherBeside() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	for _, name := range []string{"piship-launch", "piship-launch.exe"} {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// keptLauncher is where the launcher is kept: shims must not depend on
// where piship runs from (a downloaded release directory, say).
func keptLauncher(src, installHome string) string {
	return filepath.Join(installHome, "launcher", filepath.Base(src))
}

// keepLauncher copies the launcher beside this piship into the install
// home unless the same bytes stand there already. Install calls it before
// writing shims that name the kept launcher. Comparing the two 3 MB files
// took ~3 ms of every install, so a stamp beside the kept launcher records
// both files' identities (cache.FileIdentity: any change to either file
// changes its change time) when they were last found equal.
func keepLauncher(installHome string) error {
	src := launcherBeside()
	if src == "" {
		return nil
	}
	_, err := keepLauncherFrom(src, installHome)
	return err
}

// keepLauncherFrom keeps src as the launcher of installHome and reports
// whether it wrote it.
func keepLauncherFrom(src, installHome string) (bool, error) {
	dst := keptLauncher(src, installHome)
	stampPath := dst + ".stamp"
	stamp := func() (string, bool) {
		srcID, ok1 := cache.FileIdentity(src)
		dstID, ok2 := cache.FileIdentity(dst)
		return srcID + "\n" + dstID + "\n", ok1 && ok2
	}
	if st, ok := stamp(); ok {
		if b, err := os.ReadFile(stampPath); err == nil && string(b) == st {
			return false, nil
		}
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return false, err
	}
	wrote := false
	if have, err := os.ReadFile(dst); err != nil || !bytes.Equal(have, data) {
		if err := payload.WriteFile(dst, data, 0o755); err != nil {
			return false, fmt.Errorf("CONFIG_UNAVAILABLE: cannot keep the launcher in %s: %v", filepath.Dir(dst), err)
		}
		wrote = true
	}
	if st, ok := stamp(); ok {
		// Failing to write the stamp only costs the next install a compare.
		_ = payload.WriteFile(stampPath, []byte(st), 0o644)
	}
	return wrote, nil
}

// reclaimBudget reads PISHIP_RECLAIM_BUDGET_MS (default def).
func reclaimBudget(inv *Invocation, def time.Duration) time.Duration {
	if v := inv.Getenv("PISHIP_RECLAIM_BUDGET_MS"); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return def
}

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

// Rollback switches an installed distribution back to its previous release.
type Rollback struct{}

func (Rollback) Name() string    { return "rollback" }
func (Rollback) Version() string { return "1" }
func (Rollback) Doc() string {
	return "Makes the retained previous release active again without scanning its payload; a second rollback is refused (ROLLBACK_FAILED)."
}

func (Rollback) Attrs() []Attr { return []Attr{{Name: "id", Type: cty.String, Required: true}} }

func (Rollback) Outputs() []Output {
	return []Output{{Name: "active", Type: cty.String}, {Name: "from", Type: cty.String}}
}

// Run implements Kind.
func (Rollback) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	r, err := home.Rollback(ctx, o, stringOr(inv.Get("id"), ""))
	if err != nil {
		return nil, err
	}
	return map[string]cty.Value{"active": cty.StringVal(r.Active), "from": cty.StringVal(r.RolledBackFrom)}, nil
}

// Doctor verifies an installation and reclaims what it no longer needs.
type Doctor struct{}

func (Doctor) Name() string    { return "doctor" }
func (Doctor) Version() string { return "1" }
func (Doctor) Doc() string {
	return "Verifies the active payload against its inventory and the receipt, reclaims obsolete versions and .retained-* directories within " +
		"PISHIP_RECLAIM_BUDGET_MS (default 5000; never active, previous or leased versions), refreshes an outdated shim, and reports leases, trust and disk use."
}

func (Doctor) Attrs() []Attr { return []Attr{{Name: "id", Type: cty.String, Required: true}} }

func (Doctor) Outputs() []Output {
	return []Output{
		{Name: "report", Type: cty.String, Doc: "the report as JSON"}, {Name: "verified", Type: cty.Bool},
		{Name: "problems", Type: cty.List(cty.String)},
	}
}

// Run implements Kind.
func (Doctor) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	if o.Store, err = cache.OpenStore(inv.Getenv); err != nil {
		return nil, err
	}
	rep, err := home.Doctor(ctx, o, stringOr(inv.Get("id"), ""), reclaimBudget(inv, 5*time.Second))
	if err != nil {
		return nil, err
	}
	// An outdated kept launcher (piship was updated since the install) is
	// replaced; the shims name the kept one, so they need nothing.
	if src := launcherBeside(); src != "" && rep.Active != "" {
		if _, serr := os.Stat(filepath.Dir(keptLauncher(src, o.Homes.Install))); serr == nil {
			replaced, err := keepLauncherFrom(src, o.Homes.Install)
			if err != nil {
				fmt.Fprintf(inv.Log, "%s: warning: %v\n", inv.Pipeline, err)
			}
			rep.LauncherReplaced = replaced
		}
	}
	data, _ := payload.CanonicalJSON(rep)
	out := map[string]cty.Value{"report": cty.StringVal(string(data)), "verified": cty.BoolVal(rep.Verified), "problems": stringListVal(rep.Problems)}
	if len(rep.Problems) > 0 {
		return nil, fmt.Errorf("INTEGRITY_FAILED: %s: %s", rep.ID, strings.Join(rep.Problems, "; "))
	}
	return out, nil
}
