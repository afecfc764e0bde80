package pipelines

// This file is the one place that knows the built-in pipelines' inputs and
// their stages' names and outputs: each command runs its pipeline through a
// typed function here and gets a typed result back. The output structs
// declare, with cty tags, the subset of a kind's outputs a command reads.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/consumer"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// outputs reads the results of one run by stage name.
type outputs struct {
	res *engine.Result
	err error // the first output that did not decode
}

// reader reads the outputs of one stage of one built-in pipeline into O,
// which declares (cty tags) the subset of the kind's outputs a command uses.
type reader[O any] struct{ pipeline, stage string }

// readDecl is a reader as TestReadersMatchTheEmbeddedPipelines checks it.
type readDecl struct {
	pipeline, stage string
	decode          func(map[string]cty.Value) error
}

// readers lists every reader declared below.
var readers []readDecl

func reads[O any](pipeline, stageName string) reader[O] {
	readers = append(readers, readDecl{pipeline, stageName, func(m map[string]cty.Value) error {
		_, err := stage.DecodeOutputs[O](m)
		return err
	}})
	return reader[O]{pipeline, stageName}
}

// from decodes the stage's outputs. A stage that did not succeed (skipped
// by its condition, say) reads as O's zero value and false.
func (rd reader[O]) from(o *outputs) (O, bool) {
	v, ok := rd.each(o)[""]
	return v, ok
}

// each decodes the outputs of every instance of the stage that
// succeeded, by the key of the for_each module or stage it is in (the
// first key of its address: module.target["linux-x64"]....); a stage of
// no for_each is under "".
func (rd reader[O]) each(o *outputs) map[string]O {
	got := map[string]O{}
	for _, r := range o.res.Stages {
		if graph.TemplateName(r.Stage.Name) != rd.stage || r.Status != engine.Succeeded {
			continue
		}
		v, err := stage.DecodeOutputs[O](r.Outputs)
		if err != nil {
			if o.err == nil {
				o.err = fmt.Errorf("stage %s: %v", r.Stage.Name, err)
			}
			continue
		}
		got[firstKey(r.Stage.Name)] = v
	}
	return got
}

// firstKey is the first ["KEY"] of an address, "" when it has none.
func firstKey(addr string) string {
	_, rest, ok := strings.Cut(addr, "[")
	if !ok {
		return ""
	}
	k, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return ""
	}
	k, _ = strconv.Unquote(k)
	return k
}

// What the commands read of the build side's stages: the subset of each
// kind's outputs (cty tags) they use, declared here so a run of the
// end-user installer links no build kind; TestReadersMatchTheEmbeddedPipelines
// holds every field to the kind's declaration.
type (
	distInputsRead struct {
		ID      string `cty:"id"`
		Version string `cty:"version"`
		Out     string `cty:"out"`
		Final   string `cty:"final"`
		Reuse   string `cty:"reuse"`
		Bundle  bool   `cty:"bundle"`
		Strip   bool   `cty:"strip"`
	}
	inventoryRead struct {
		Files int   `cty:"files"`
		Bytes int64 `cty:"bytes"`
	}
	runtimeRead struct {
		Entry  string `cty:"entry"`
		Hit    bool   `cty:"hit"`
		Linked int    `cty:"linked"`
		Copied int    `cty:"copied"`
		Digest string `cty:"digest"`
	}
	bundleRead struct {
		Hit bool `cty:"hit"`
	}
	releaseInputsRead struct {
		ID       string `cty:"id"`
		Version  string `cty:"version"`
		Releases string `cty:"releases"`
		// Targets is a map of objects with more attributes than a
		// command reads: targetNames reads their names.
		Targets cty.Value `cty:"targets"`
	}
	releaseSetRead struct {
		Path string `cty:"path"`
	}
	searchToolsRead struct {
		Missing []string `cty:"missing"`
	}
	smokeRead struct {
		Results string `cty:"results"`
		Passed  int    `cty:"passed"`
		NotRun  int    `cty:"not_run"`
	}
	releasePublishRead struct {
		Path    string               `cty:"path"`
		Archive string               `cty:"archive"`
		Tools   []release.ToolDigest `cty:"tools"`
	}
	archiveRead struct {
		SHA256 string `cty:"sha256"`
		Bytes  int64  `cty:"bytes"`
	}
)

// The stages the commands read, by pipeline: one declaration each, and
// TestReadersMatchTheEmbeddedPipelines fails if a stage is renamed or
// changes kind. The consumer side reads its kinds' own outputs structs.
var (
	buildInputs    = reads[distInputsRead]("build", "inputs")
	buildInventory = reads[inventoryRead]("build", "module.payload.stage.inventory")
	buildRuntime   = reads[runtimeRead]("build", "module.payload.stage.runtime")
	buildBundle    = reads[bundleRead]("build", "module.payload.stage.bundle")

	releaseInputs = reads[releaseInputsRead]("release", "inputs")
	releaseSet    = reads[releaseSetRead]("release", "set")
	// Per target: module.target["TARGET"]...., read by target.
	releaseEntry     = reads[runtimeRead]("release", "module.target.module.qualify.stage.runtime_entry")
	releaseSmoke     = reads[smokeRead]("release", "module.target.module.qualify.stage.tests")
	releaseTools     = reads[searchToolsRead]("release", "module.target.module.payload.stage.search_tools")
	releaseRuntime   = reads[runtimeRead]("release", "module.target.module.payload.stage.runtime")
	releaseBundle    = reads[bundleRead]("release", "module.target.module.payload.stage.bundle")
	releasePublish   = reads[releasePublishRead]("release", "module.target.module.publish.stage.publish")
	releaseInventory = reads[inventoryRead]("release", "module.target.module.payload.stage.inventory")
	releaseArchive   = reads[archiveRead]("release", "module.target.module.publish.stage.archive")

	installInstall = reads[consumer.InstallOutputs]("install", "install")
	updateCheck    = reads[consumer.UpdateCheckOutputs]("update", "check")
	updateInstall  = reads[consumer.InstallOutputs]("update", "install")
	rollbackStage  = reads[consumer.RollbackOutputs]("rollback", "rollback")
	doctorStage    = reads[consumer.DoctorOutputs]("doctor", "doctor")
)

// finish turns a finished run into its typed result: nil and a *Reported
// error when the run failed (the failure is printed), or when an output did
// not decode.
func finish[T any](c Config, o Outcome, decode func(*outputs) *T) (*T, error) {
	if !o.OK() {
		return nil, o.Err()
	}
	out := &outputs{res: o.Result}
	t := decode(out)
	if out.err != nil {
		fmt.Fprintf(c.Stderr, "piship: %s: %v\n", o.Graph.Name, out.err)
		return nil, &Reported{Exit: ExitFailed, Err: out.err}
	}
	return t, o.Err()
}

func hitMiss(hit bool) string {
	if hit {
		return "hit"
	}
	return "miss"
}

// BuildArgs are the build pipeline's inputs (absolute paths; Out empty
// for DIST/dist).
type BuildArgs struct {
	Distribution, Out string
	Rebuild           bool
	// NoFootprint keeps every vendored Pi package file as installed.
	NoFootprint bool
	// Builtin runs the built-in build.hcl even when the distribution has
	// its own pipelines/build.hcl (FindForDistribution).
	Builtin bool
	// Version and Snapshot are --version and --snapshot: what
	// distribution.ResolveVersion names the build's version from.
	Version  string
	Snapshot bool
}

// values are the build pipeline's input values.
func (a BuildArgs) values() map[string]cty.Value {
	return map[string]cty.Value{
		"distribution": cty.StringVal(a.Distribution),
		"out":          cty.StringVal(a.Out),
		"rebuild":      cty.BoolVal(a.Rebuild),
		"pi_footprint": cty.BoolVal(!a.NoFootprint),
		"version":      cty.StringVal(a.Version),
		"snapshot":     cty.BoolVal(a.Snapshot),
	}
}

// Built is a finished build.
type Built struct {
	ID, Version, Final string // Final: the payload directory
	Bundled, Stripped  bool
	// Reuse is what the build stamp let the build keep: all, resources
	// or none.
	Reuse        string
	Files, Bytes int64
	// RuntimeCache and BundleCache are hit or miss, empty when the stage
	// did not run.
	RuntimeCache, BundleCache string
	Total                     time.Duration // the run span's duration
}

// Build runs the build pipeline on the distribution: its own
// pipelines/build.hcl, else the built-in one (FindForDistribution).
func Build(ctx context.Context, c Config, a BuildArgs) (*Built, error) {
	if err := checkDistribution(c, "build", a.Distribution); err != nil {
		return nil, err
	}
	o := runForDistribution(ctx, c, "build", a.Distribution, a.Builtin, a.values())
	return finish(c, o, func(out *outputs) *Built {
		in, _ := buildInputs.from(out)
		b := &Built{ID: in.ID, Version: in.Version, Final: in.Final, Bundled: in.Bundle, Stripped: in.Strip, Reuse: in.Reuse, Total: o.Total}
		if in.Reuse == "all" {
			var st payload.Stamp
			if err := canon.ReadJSON(payload.StampPath(in.Out, in.ID), &st); err == nil {
				b.Files, b.Bytes = int64(st.Files), st.Bytes
			}
			return b
		}
		inv, _ := buildInventory.from(out)
		b.Files, b.Bytes = int64(inv.Files), inv.Bytes
		if rt, ran := buildRuntime.from(out); ran {
			b.RuntimeCache = hitMiss(rt.Hit)
		}
		if bu, ran := buildBundle.from(out); ran {
			b.BundleCache = hitMiss(bu.Hit)
		}
		return b
	})
}

// ReleaseArgs are the release pipeline's inputs (absolute paths; Out
// empty for DIST/dist).
type ReleaseArgs struct {
	Distribution, Out, Channel string
	// NoCache ignores the runtime and bundle caches (a cold release).
	NoCache bool
	// NoFootprint keeps every vendored Pi package file as installed (no
	// closure bundled, no dependency shared): the footprint's baseline.
	NoFootprint bool
	// Builtin runs the built-in release.hcl even when the distribution
	// has its own pipelines/release.hcl (FindForDistribution).
	Builtin bool
	// Version and Snapshot are --version and --snapshot: what
	// distribution.ResolveVersion names the release from.
	Version  string
	Snapshot bool
	// Targets and Runner make one runner's part of a split release
	// (--target, --runner): only these entries of release.targets are
	// built, and release.json records the runner.
	Targets []string
	Runner  string
}

// values are the release pipeline's input values.
func (a ReleaseArgs) values() map[string]cty.Value {
	return map[string]cty.Value{
		"distribution": cty.StringVal(a.Distribution), "out": cty.StringVal(a.Out),
		"channel": cty.StringVal(a.Channel), "no_cache": cty.BoolVal(a.NoCache), "pi_footprint": cty.BoolVal(!a.NoFootprint),
		"version": cty.StringVal(a.Version), "snapshot": cty.BoolVal(a.Snapshot),
		"targets": stringList(a.Targets), "runner": cty.StringVal(a.Runner),
	}
}

// stringList is ss as a cty list of strings (empty, not null, for none).
func stringList(ss []string) cty.Value {
	if len(ss) == 0 {
		return cty.ListValEmpty(cty.String)
	}
	vs := make([]cty.Value, len(ss))
	for i, s := range ss {
		vs[i] = cty.StringVal(s)
	}
	return cty.ListVal(vs)
}

// Released is a finished release: one per target of release.targets,
// and the set file over their archives.
type Released struct {
	ID, Version string
	Targets     []ReleasedTarget // in target order
	Sums        string           // <releases>/<id>-<version>.SHA256SUMS
	Total       time.Duration
}

// ReleasedTarget is one target's release.
type ReleasedTarget struct {
	Target       string
	Name, Path   string // <id>-<version>-<target> and its directory
	Archive      string
	Files        int64 // payload files
	ArchiveBytes int64
	SHA256       string // the archive's
	// Smoke says what became of the smoke tests: "passed", "none", or
	// "not-run: <reason>" (a target this host cannot run).
	Smoke string
	// SearchToolsMissing are the search tools this target's payload ships
	// without: the distribution pins no archive for the target.
	SearchToolsMissing []string
	// RuntimeCache says where the runtime came from: "off (cold
	// release)", "miss" or "hit (entry ..., linked N, copied N, bundle
	// hit|miss|off)"; build-info.json records the same words.
	RuntimeCache string
	// BuildInfo is <name>.build-info.json; BuildInfoErr is why it could
	// not be written.
	BuildInfo    string
	BuildInfoErr error
}

// Release runs the release pipeline on the distribution (its own
// pipelines/release.hcl, else the built-in one: FindForDistribution) and
// writes each target's build-info.json: the line RuntimeCache, the
// timings and the shipped tools are the only places cache provenance is
// recorded (release.json is the same whether the cache hit or not).
func Release(ctx context.Context, c Config, a ReleaseArgs) (*Released, error) {
	if err := checkDistribution(c, "release", a.Distribution); err != nil {
		return nil, err
	}
	o := runForDistribution(ctx, c, "release", a.Distribution, a.Builtin, a.values())
	return finish(c, o, func(out *outputs) *Released {
		in, _ := releaseInputs.from(out)
		set, _ := releaseSet.from(out)
		entries, runtimes, bundles := releaseEntry.each(out), releaseRuntime.each(out), releaseBundle.each(out)
		pubs, invs, arcs, smokes := releasePublish.each(out), releaseInventory.each(out), releaseArchive.each(out), releaseSmoke.each(out)
		tools := releaseTools.each(out)
		r := &Released{ID: in.ID, Version: in.Version, Sums: set.Path, Total: o.Total}
		timing := tracing.Summarize(o.Spans, o.Graph.Name, o.depNames()).JSON
		names := in.targetNames()
		for _, target := range slices.Sorted(maps.Keys(names)) {
			name := names[target]
			entry, rt, pub, inv, arc := entries[target], runtimes[target], pubs[target], invs[target], arcs[target]
			bundle := "off"
			if b, ran := bundles[target]; ran {
				bundle = hitMiss(b.Hit)
			}
			t := ReleasedTarget{Target: target, Name: name, Path: pub.Path, Archive: pub.Archive, Files: int64(inv.Files),
				ArchiveBytes: arc.Bytes, SHA256: arc.SHA256}
			t.SearchToolsMissing = tools[target].Missing
			if sm, ran := smokes[target]; ran {
				t.Smoke = smokeSummary(sm)
			}
			switch {
			case a.NoCache:
				t.RuntimeCache = "off (cold release)"
			case !entry.Hit:
				t.RuntimeCache = "miss"
			default:
				t.RuntimeCache = fmt.Sprintf("hit (entry %s, linked %d, copied %d, bundle %s)", entry.Digest, rt.Linked, rt.Copied, bundle)
			}
			if len(pub.Tools) == 0 {
				pub.Tools = nil
			}
			t.BuildInfo = release.BuildInfoPath(in.Releases, name)
			t.BuildInfoErr = release.WriteBuildInfo(in.Releases, release.BuildInfo{
				Schema: release.BuildInfoSchema, Release: name, RuntimeCache: t.RuntimeCache,
				Entry: entry.Entry, EntryDigest: entry.Digest, Linked: int64(rt.Linked), Copied: int64(rt.Copied), Bundle: bundle,
				Tools:  pub.Tools,
				Timing: timing,
			})
			if t.BuildInfoErr != nil {
				t.BuildInfo = ""
			}
			r.Targets = append(r.Targets, t)
		}
		return r
	})
}

// targetNames maps each target of release_inputs' targets to its release
// name.
func (in releaseInputsRead) targetNames() map[string]string {
	names := map[string]string{}
	if in.Targets.IsNull() || !in.Targets.IsKnown() || !in.Targets.CanIterateElements() {
		return names
	}
	for it := in.Targets.ElementIterator(); it.Next(); {
		k, v := it.Element()
		if v.Type().IsObjectType() && v.Type().HasAttribute("name") && v.GetAttr("name").Type() == cty.String {
			names[k.AsString()] = v.GetAttr("name").AsString()
		}
	}
	return names
}

// smokeSummary is "passed" (every test), "none" (the distribution has
// none), or "not-run: <reason>" when the target's smoke tests could not
// run here.
func smokeSummary(s smokeRead) string {
	switch {
	case s.NotRun == 0 && s.Passed == 0:
		return "none"
	case s.NotRun == 0:
		return releasejson.TestPassed
	}
	var rs []releasejson.TestResult
	if json.Unmarshal([]byte(s.Results), &rs) == nil && len(rs) > 0 {
		return releasejson.TestNotRun + ": " + rs[0].Reason
	}
	return releasejson.TestNotRun
}

// InstallArgs are the install pipeline's inputs.
type InstallArgs struct {
	Source    string // absolute: an archive, a release or a payload directory
	SHA256    string // expected sha256 of the archive
	ExpectKey string // a sha256:<hex> fingerprint the release must trust for updates
}

// Installed is a finished install.
type Installed struct {
	ID, Version, Command string
	Payload              string // the installed payload directory
	// Reused: the same bytes were installed before; nothing was written.
	Reused               bool
	Files, Bytes, Linked int64 // Linked: files placed from the store
	Total                time.Duration
}

// Install runs the built-in install pipeline.
func Install(ctx context.Context, c Config, a InstallArgs) (*Installed, error) {
	o := runBuiltin(ctx, c, "install", map[string]cty.Value{
		"source": cty.StringVal(a.Source), "sha256": cty.StringVal(a.SHA256), "expect_key": cty.StringVal(a.ExpectKey),
	})
	return finish(c, o, func(out *outputs) *Installed {
		in, _ := installInstall.from(out)
		return &Installed{ID: in.ID, Version: in.Version, Command: in.Command, Payload: in.Payload, Reused: in.Reused,
			Files: int64(in.Files), Bytes: in.Bytes, Linked: int64(in.Linked), Total: o.Total}
	})
}

// UpdateArgs are the update pipeline's inputs.
type UpdateArgs struct {
	ID      string
	From    string // channel source (absolute when a directory); empty: the release's
	Channel string // empty: the release's
	Check   bool   // report only
	Timeout string // --timeout: connect, header and idle limit (empty: updatesource.DefaultLimits)
	MaxTime string // --max-time: overall budget of each file fetched (empty: the defaults)
}

// Updated is a finished update (or check).
type Updated struct {
	Available        bool   // an update is (or was) available
	Current, Version string // installed before, and the channel's newest
	Channel          string
	Root, Timestamp  int64 // the trusted TUF root and timestamp versions
	Bytes            int64
	Linked           int64 // files the install linked from the store
	// Notes are the new version's release notes ("" when the repository
	// publishes none, or this run installed nothing), verified through TUF.
	Notes string
	// Download is what the update downloaded (with check: would):
	// "delta" (the delta from DeltaFrom, DownloadBytes long) or "archive"
	// (Bytes); "" when up to date. DeltaSkipped says why a delta published
	// for the update was not taken, DeltaFallback why the downloaded
	// delta could not be used, so the archive was fetched and installed.
	Download                    string
	DownloadBytes               int64
	DeltaFrom                   string
	DeltaSkipped, DeltaFallback string
	// Registry is the registry blob URL the archive came (with check:
	// would come) from when its signed target names one; "" when it came
	// from the TUF repository, or only a delta was downloaded.
	Registry string
	Total    time.Duration
}

// Update runs the built-in update pipeline.
func Update(ctx context.Context, c Config, a UpdateArgs) (*Updated, error) {
	inputs := map[string]cty.Value{
		"id": cty.StringVal(a.ID), "from": cty.StringVal(a.From), "channel": cty.StringVal(a.Channel), "check": cty.BoolVal(a.Check),
	}
	// Only when set, so an update.hcl of ./pipelines written before these
	// inputs existed still runs.
	if a.Timeout != "" {
		inputs["timeout"] = cty.StringVal(a.Timeout)
	}
	if a.MaxTime != "" {
		inputs["max_time"] = cty.StringVal(a.MaxTime)
	}
	o := runBuiltin(ctx, c, "update", inputs)
	return finish(c, o, func(out *outputs) *Updated {
		ch, _ := updateCheck.from(out)
		in, _ := updateInstall.from(out)
		u := &Updated{Available: ch.Update, Current: ch.Current, Version: ch.Version, Channel: ch.Channel,
			Root: ch.Root, Timestamp: ch.Timestamp, Bytes: ch.Bytes, Linked: int64(in.Linked), Notes: ch.Notes, Total: o.Total,
			DeltaSkipped: ch.DeltaSkipped, DeltaFallback: in.DeltaFallback}
		switch {
		case !ch.Update:
		case ch.DeltaBytes > 0 && in.DeltaFallback == "":
			u.Download, u.DownloadBytes, u.DeltaFrom = "delta", ch.DeltaBytes, ch.DeltaFrom
		case ch.DeltaBytes > 0:
			// The delta, then the archive.
			u.Download, u.DownloadBytes, u.DeltaFrom = "archive", ch.DeltaBytes+ch.Bytes, ch.DeltaFrom
		default:
			u.Download, u.DownloadBytes = "archive", ch.Bytes
		}
		if u.Download == "archive" {
			u.Registry = ch.RegistryBlob
		}
		if in.UpToDate {
			// Another command activated the version while this update ran.
			u.Available, u.Current, u.Version, u.Notes = false, in.Version, in.Version, ""
		}
		return u
	})
}

// RolledBack is a finished rollback.
type RolledBack struct {
	From, Active string
}

// Rollback runs the built-in rollback pipeline for id.
func Rollback(ctx context.Context, c Config, id string) (*RolledBack, error) {
	o := runBuiltin(ctx, c, "rollback", map[string]cty.Value{"id": cty.StringVal(id)})
	return finish(c, o, func(out *outputs) *RolledBack {
		r, _ := rollbackStage.from(out)
		return &RolledBack{From: r.From, Active: r.Active}
	})
}

// Doctored is the report of one doctor run.
type Doctored struct {
	report home.DoctorReport
}

// JSON is the report as `piship doctor --json` prints it.
func (d *Doctored) JSON() string {
	b, err := d.report.JSON()
	if err != nil {
		return ""
	}
	return string(b)
}

// Report is the report.
func (d *Doctored) Report() (home.DoctorReport, error) { return d.report, nil }

// Doctor runs the built-in doctor pipeline for id. The report is nil when
// the pipeline failed or wrote none. The pipeline's stage returns the
// report whatever it found (fail_on_damage = false); a report that found
// damage comes with a *Reported error (ExitFailed), its INTEGRITY_FAILED line (what was
// found and repaired) last on stderr.
func Doctor(ctx context.Context, c Config, id string) (*Doctored, error) {
	o := runBuiltin(ctx, c, "doctor", map[string]cty.Value{"id": cty.StringVal(id)})
	ran := false
	d, err := finish(c, o, func(out *outputs) *Doctored {
		r, ok := doctorStage.from(out)
		ran = ok
		return &Doctored{report: r.Report}
	})
	if d != nil && !ran {
		return nil, err
	}
	if d != nil && d.report.Damaged() {
		damage := home.DamageError(d.report)
		fmt.Fprintln(c.Stderr, damage)
		err = &Reported{Exit: max(ExitCode(err), ExitFailed), Err: damage}
	}
	return d, err
}
