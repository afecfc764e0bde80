package main

import (
	"math"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/budgets"
	"piship.dev/piship/stages/contentstore"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/stages/verify"
)

// The --json documents of piship's developer commands (docs/json.md);
// the consumer commands' and the shared ones are in cmd/internal/cli.

// BuildDoc is piship-build/v1.
type BuildDoc struct {
	Schema       string  `json:"schema"`
	ID           string  `json:"id"`
	Version      string  `json:"version"`
	Payload      string  `json:"payload"`
	Bundled      bool    `json:"bundled"`
	Stripped     bool    `json:"stripped"`
	Reuse        string  `json:"reuse"`
	Files        int64   `json:"files"`
	Bytes        int64   `json:"bytes"`
	RuntimeCache string  `json:"runtimeCache"`
	BundleCache  string  `json:"bundleCache"`
	Seconds      float64 `json:"seconds"`
}

// buildJSON is the build as piship-build/v1.
func buildJSON(b *pipelines.Built) BuildDoc {
	return BuildDoc{Schema: cli.Schema("build"), ID: b.ID, Version: b.Version, Payload: b.Final, Bundled: b.Bundled, Stripped: b.Stripped,
		Reuse: b.Reuse, Files: b.Files, Bytes: b.Bytes, RuntimeCache: b.RuntimeCache, BundleCache: b.BundleCache, Seconds: b.Total.Seconds()}
}

// ReleaseDoc is piship-release/v2: the release set and each target's
// release.
type ReleaseDoc struct {
	Schema  string             `json:"schema"`
	ID      string             `json:"id"`
	Version string             `json:"version"`
	Sums    string             `json:"sums"`
	Targets []ReleaseTargetDoc `json:"targets"`
	Seconds float64            `json:"seconds"`
}

// ReleaseTargetDoc is one target's release in piship-release/v2.
type ReleaseTargetDoc struct {
	Target       string `json:"target"`
	Name         string `json:"name"`
	Path         string `json:"path"`
	Archive      string `json:"archive"`
	Files        int64  `json:"files"`
	ArchiveBytes int64  `json:"archiveBytes"`
	SHA256       string `json:"sha256"`
	Smoke        string `json:"smoke"`
	// SearchToolsMissing: search tools the distribution pins no archive
	// for on this target, so its payload ships without them.
	SearchToolsMissing []string `json:"searchToolsMissing"`
	RuntimeCache       string   `json:"runtimeCache"`
	BuildInfo          string   `json:"buildInfo"` // "" when it could not be written (buildInfoError says why)
	BuildInfoErr       string   `json:"buildInfoError"`
	// Runner is the runner release.json names (--runner; "" for none);
	// Registry the artifact pushed (--to) or merged (--merge), as
	// oci://host/repository@<digest>, else "".
	Runner   string `json:"runner"`
	Registry string `json:"registry"`
}

// releaseJSON is the release as piship-release/v2.
func releaseJSON(r *pipelines.Released, runner string) ReleaseDoc {
	d := ReleaseDoc{Schema: cli.Schema("release"), ID: r.ID, Version: r.Version, Sums: r.Sums, Targets: []ReleaseTargetDoc{}, Seconds: r.Total.Seconds()}
	for _, t := range r.Targets {
		td := ReleaseTargetDoc{Target: t.Target, Name: t.Name, Path: t.Path, Archive: t.Archive, Files: t.Files,
			ArchiveBytes: t.ArchiveBytes, SHA256: t.SHA256, Smoke: t.Smoke, SearchToolsMissing: append([]string{}, t.SearchToolsMissing...),
			RuntimeCache: t.RuntimeCache, BuildInfo: t.BuildInfo, Runner: runner}
		if t.BuildInfoErr != nil {
			td.BuildInfoErr = t.BuildInfoErr.Error()
		}
		d.Targets = append(d.Targets, td)
	}
	return d
}

// VerifyReleaseDoc is piship-verify-release/v1: verify.Report with the
// source as given and every file relative to the release.
type VerifyReleaseDoc struct {
	Schema  string        `json:"schema"`
	Source  string        `json:"source"`
	Release string        `json:"release"`
	SHA256  string        `json:"sha256"`
	OK      bool          `json:"ok"`
	Checks  []VerifyCheck `json:"checks"`
}

// VerifyCheck is one check of a verify-release.
type VerifyCheck struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// verifyTemp is the extraction directory verify.Release uses for an archive.
var verifyTemp = regexp.MustCompile(`[^\s"']*piship-verify-[0-9]+/release/?`)

// VerifyReleaseJSON is rep as piship-verify-release/v1; source is the
// path the user passed.
func VerifyReleaseJSON(rep *verify.Report, source string) VerifyReleaseDoc {
	d := VerifyReleaseDoc{Schema: cli.Schema("verify-release"), Source: source, Release: rep.Release, SHA256: rep.SHA256, OK: rep.OK,
		Checks: []VerifyCheck{}}
	for _, c := range rep.Checks {
		d.Checks = append(d.Checks, VerifyCheck{Name: c.Name, File: verifyTemp.ReplaceAllString(c.File, ""), OK: c.OK,
			Detail: verifyTemp.ReplaceAllString(c.Detail, "")})
	}
	return d
}

// VerifySetJSON is a release set's verification as piship-verify-release/v1:
// release is <id>-<version>, sha256 the set file's, and every archive's
// checks in the set's order, each file under its release's name.
func VerifySetJSON(set *release.Sums, reps []*verify.Report, source string) VerifyReleaseDoc {
	d := VerifyReleaseDoc{Schema: cli.Schema("verify-release"), Source: source, Release: set.ID + "-" + set.Version, OK: true, Checks: []VerifyCheck{}}
	if b, err := os.ReadFile(set.Path); err == nil {
		d.SHA256 = canon.SHA256Hex(b)
	}
	for _, rep := range reps {
		one := VerifyReleaseJSON(rep, rep.Source)
		d.OK = d.OK && one.OK
		for _, c := range one.Checks {
			if c.File != "" && !strings.HasPrefix(c.File, rep.Release) {
				c.File = rep.Release + "/" + c.File
			}
			d.Checks = append(d.Checks, c)
		}
	}
	return d
}

// ValidateDoc is piship-validate/v1: terraform validate -json's document
// (valid, error_count, warning_count, diagnostics) in piship's key style.
type ValidateDoc struct {
	Schema       string     `json:"schema"`
	OK           bool       `json:"ok"`        // no file has errors (terraform's valid)
	Pipelines    int        `json:"pipelines"` // pipelines and distributions checked
	Files        []string   `json:"files"`
	ErrorCount   int        `json:"errorCount"`
	WarningCount int        `json:"warningCount"`
	Diagnostics  []DiagJSON `json:"diagnostics"`
}

// DiagJSON is one diagnostic for an editor or CI: where (file and range,
// null for a problem with the whole file), how bad, what and what to do.
type DiagJSON struct {
	Severity   string     `json:"severity"` // error or warning
	Summary    string     `json:"summary"`
	Detail     string     `json:"detail"`
	Suggestion string     `json:"suggestion"` // the did-you-mean replacement, "" when none
	File       string     `json:"file"`
	Range      *RangeJSON `json:"range"`
}

// RangeJSON is a source range: start inclusive, end exclusive.
type RangeJSON struct {
	Start PosJSON `json:"start"`
	End   PosJSON `json:"end"`
}

// PosJSON is a position: line and column from 1 (columns count
// characters), byte the offset from 0.
type PosJSON struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// ValidateJSON is the validation v of srcs.
func ValidateJSON(srcs []*pipelines.Source, v pipelines.Validation) ValidateDoc {
	d := ValidateDoc{Schema: cli.Schema("validate"), OK: v.Failed == 0, Pipelines: v.Count, Files: []string{}, Diagnostics: []DiagJSON{}}
	for _, s := range srcs {
		d.Files = append(d.Files, s.Name)
	}
	for _, dg := range v.Diags {
		j := DiagJSON{Severity: "error", Summary: dg.Summary, Detail: dg.Detail, Suggestion: diag.Suggestion(dg)}
		if dg.Severity == hcl.DiagWarning {
			j.Severity = "warning"
			d.WarningCount++
		} else {
			d.ErrorCount++
		}
		if r := dg.Subject; r != nil {
			j.File = r.Filename
			if r.Start.Line >= 1 {
				j.Range = &RangeJSON{
					Start: PosJSON{Line: r.Start.Line, Column: r.Start.Column, Byte: r.Start.Byte},
					End:   PosJSON{Line: r.End.Line, Column: r.End.Column, Byte: r.End.Byte},
				}
			}
		}
		d.Diagnostics = append(d.Diagnostics, j)
	}
	return d
}

// StagesDoc is piship-stages/v1: every kind, or (with KIND) one.
type StagesDoc struct {
	Schema string    `json:"schema"`
	Kinds  []KindDoc `json:"kinds"`
}

// KindDoc documents one stage kind; its attributes and outputs are the
// contract's own declarations, which carry their json form.
type KindDoc struct {
	Name      string         `json:"name"`
	Version   string         `json:"version"`
	Doc       string         `json:"doc"`
	Cacheable bool           `json:"cacheable"`
	Attrs     []stage.Attr   `json:"attrs"`
	Outputs   []stage.Output `json:"outputs"`
}

// StagesJSON documents kinds (attributes and outputs sorted by name).
func StagesJSON(kinds []stage.Kind) StagesDoc {
	d := StagesDoc{Schema: cli.Schema("stages"), Kinds: []KindDoc{}}
	for _, k := range kinds {
		_, cacheable := k.(stage.Cacheable)
		// Copies: sorting must not reorder the kind's own declarations.
		kd := KindDoc{Name: k.Name(), Version: k.Version(), Doc: k.Doc(), Cacheable: cacheable,
			Attrs: append([]stage.Attr{}, k.Attrs()...), Outputs: append([]stage.Output{}, k.Outputs()...)}
		sort.Slice(kd.Attrs, func(i, j int) bool { return kd.Attrs[i].Name < kd.Attrs[j].Name })
		sort.Slice(kd.Outputs, func(i, j int) bool { return kd.Outputs[i].Name < kd.Outputs[j].Name })
		d.Kinds = append(d.Kinds, kd)
	}
	return d
}

// PipelinesDoc is piship-pipelines/v1: the pipelines built into piship.
type PipelinesDoc struct {
	Schema    string        `json:"schema"`
	Pipelines []PipelineDoc `json:"pipelines"` // by name
	Modules   []ModuleDoc   `json:"modules"`   // by name
}

// ModuleDoc is one built-in module.
type ModuleDoc struct {
	Name        string   `json:"name"`   // what piship pipelines show NAME takes
	Source      string   `json:"source"` // builtin:NAME, what a module block's source takes
	File        string   `json:"file"`   // embedded:pipelines/modules/NAME.hcl, as diagnostics name it
	Description string   `json:"description"`
	Inputs      []string `json:"inputs"`  // in declaration order
	Outputs     []string `json:"outputs"` // in declaration order
	Stages      int      `json:"stages"`
}

// PipelineDoc is one built-in pipeline.
type PipelineDoc struct {
	Name        string   `json:"name"` // what piship run NAME and piship pipelines show NAME take
	File        string   `json:"file"` // embedded:pipelines/NAME.hcl, as a run's first line and root span name it
	Description string   `json:"description"`
	Inputs      []string `json:"inputs"` // in declaration order
	Stages      int      `json:"stages"`
}

// GraphDoc is piship-graph/v1: a pipeline's nodes.
type GraphDoc struct {
	Schema   string      `json:"schema"`
	Pipeline string      `json:"pipeline"`
	File     string      `json:"file"`
	Nodes    []GraphNode `json:"nodes"`
	Verdicts []string    `json:"verdicts"` // the verdict order
}

// GraphNode is one stage of a pipeline graph.
type GraphNode struct {
	Name    string      `json:"name"`
	Kind    string      `json:"kind"`
	Always  bool        `json:"always"`
	When    bool        `json:"when"` // the stage has a when condition
	Line    int         `json:"line"`
	Deps    []GraphEdge `json:"deps"`
	Verdict int         `json:"verdict"` // its place in the verdict order, from 1
}

// GraphEdge is an edge into a node.
type GraphEdge struct {
	From   string `json:"from"`
	Data   bool   `json:"data"`   // a stage.<name>.<output> reference; false: depends_on
	Output string `json:"output"` // the output a data edge reads
}

// GraphJSON is g's nodes in declaration order.
func GraphJSON(g *graph.Graph) GraphDoc {
	d := GraphDoc{Schema: cli.Schema("graph"), Pipeline: g.Name, File: g.File, Nodes: []GraphNode{}, Verdicts: []string{}}
	order := map[*graph.Stage]int{}
	for i, s := range g.VerdictOrder {
		order[s] = i + 1
		d.Verdicts = append(d.Verdicts, s.Name)
	}
	for _, s := range g.Stages {
		n := GraphNode{Name: s.Name, Kind: s.KindName, Always: s.Always, When: s.When != nil, Line: s.DeclRange.Start.Line,
			Deps: []GraphEdge{}, Verdict: order[s]}
		seen := map[GraphEdge]bool{}
		for _, e := range s.Deps {
			ge := GraphEdge{From: e.From.Name, Data: e.Data, Output: e.Output}
			if !seen[ge] {
				seen[ge] = true
				n.Deps = append(n.Deps, ge)
			}
		}
		d.Nodes = append(d.Nodes, n)
	}
	return d
}

// PlanDoc is piship-plan/v1: what each stage of a run would do.
type PlanDoc struct {
	Schema   string      `json:"schema"`
	Pipeline string      `json:"pipeline"`
	File     string      `json:"file"`
	Waves    int         `json:"waves"`
	Stages   []PlanStage `json:"stages"`
}

// PlanStage is one entry of a plan.
type PlanStage struct {
	Address string   `json:"address"`
	Stage   string   `json:"stage"`
	Kind    string   `json:"kind"`
	Action  string   `json:"action"`
	Key     string   `json:"key"`
	Reason  string   `json:"reason"`
	After   []string `json:"after"`
	Wave    int      `json:"wave"`
	Needs   []string `json:"needs"`
	Writes  []string `json:"writes"`
}

// PlanJSON is rp as piship-plan/v1, its entries in declaration order.
func PlanJSON(rp *engine.RunPlan) PlanDoc {
	d := PlanDoc{Schema: cli.Schema("plan"), Pipeline: rp.Pipeline, File: rp.File, Waves: rp.Waves, Stages: []PlanStage{}}
	for _, sp := range rp.Stages {
		d.Stages = append(d.Stages, PlanStage{Address: sp.Address, Stage: sp.Stage.Name, Kind: sp.Stage.KindName, Action: string(sp.Action),
			Key: sp.Key, Reason: sp.Reason, After: nonNil(sp.After), Wave: sp.Wave, Needs: nonNil(sp.Needs), Writes: nonNil(sp.Writes)})
	}
	return d
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CachePruneDoc is piship-cache-prune/v1.
type CachePruneDoc struct {
	Schema string           `json:"schema"`
	Cache  CachePruneCache  `json:"cache"`
	Store  *CachePruneStore `json:"store"` // null without a store
}

// CachePruneJSON is a prune of the action cache (rep) and of the store
// (g, nil without a store) as piship-cache-prune/v1.
func CachePruneJSON(rep cache.PruneReport, g *contentstore.GCResult) CachePruneDoc {
	d := CachePruneDoc{Schema: cli.Schema("cache prune"), Cache: CachePruneCache{Entries: rep.Entries, Removed: rep.Removed,
		BytesBefore: rep.BytesBefore, BytesAfter: rep.BytesAfter}}
	if g != nil {
		d.Store = &CachePruneStore{Objects: g.Objects, Removed: g.Removed, Bytes: g.Bytes}
	}
	return d
}

// CachePruneCache is what prune did to the action cache.
type CachePruneCache struct {
	Entries     int   `json:"entries"`
	Removed     int   `json:"removed"`
	BytesBefore int64 `json:"bytesBefore"`
	BytesAfter  int64 `json:"bytesAfter"`
}

// CachePruneStore is what prune did to the content-addressed store.
type CachePruneStore struct {
	Objects int   `json:"objects"`
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"`
}

// RepoStatusDoc is piship-repo-status/v1: a TUF repository as published
// (tuf.Status), for the publisher's scheduled check that the timestamp
// and snapshot are re-signed in time.
type RepoStatusDoc struct {
	Schema string `json:"schema"`
	Dir    string `json:"dir"`
	// InitialRootSHA256 is the digest of metadata/1.root.json: what a lock
	// or install --expect-root pins.
	InitialRootSHA256 string        `json:"initialRootSha256"`
	Roles             []RepoRole    `json:"roles"`
	Releases          []RepoRelease `json:"releases"`
}

// RepoRole is one top-level role: version, expiry (RFC 3339, UTC),
// threshold, TUF key ids and the keys' names.
type RepoRole struct {
	Role      string   `json:"role"`
	Version   int64    `json:"version"`
	Expires   string   `json:"expires"`
	Threshold int      `json:"threshold"`
	KeyIDs    []string `json:"keyIds"`
	// KeyNames are the names keygen gave the keys, in the order of KeyIDs
	// ("" where the repository recorded none).
	KeyNames []string `json:"keyNames"`
}

// RepoRelease is one release target: an archive, or a delta (format
// piship-delta/v1) from FromVersion to Version.
type RepoRelease struct {
	Path       string `json:"path"`
	Channel    string `json:"channel"`
	Version    string `json:"version"`
	Target     string `json:"target"`
	Format     string `json:"format"`
	From       string `json:"fromVersion"`
	LockSHA256 string `json:"lockSha256"`
	Length     int64  `json:"length"`
	SHA256     string `json:"sha256"`
	// Notes is the path of the release's notes target (piship repo add
	// publishes a release directory's notes.md there) with the length and
	// sha256 the targets role signs; "", 0 and "" when it has none.
	Notes       string `json:"notes"`
	NotesLength int64  `json:"notesLength"`
	NotesSHA256 string `json:"notesSha256"`
	// RegistryBlob is the registry blob URL the archive is served from
	// (repo add --registry), "" when only from the repository.
	RegistryBlob string `json:"registryBlob"`
}

// RepoStatusJSON is st as piship-repo-status/v1; dir is the directory as
// the user named it.
func RepoStatusJSON(dir, initialRootSHA256 string, st tuf.Status) RepoStatusDoc {
	d := RepoStatusDoc{Schema: cli.Schema("repo status"), Dir: dir, InitialRootSHA256: initialRootSHA256, Roles: []RepoRole{}, Releases: []RepoRelease{}}
	for _, r := range st.Roles {
		d.Roles = append(d.Roles, RepoRole{Role: r.Role, Version: r.Version, Expires: r.Expires.UTC().Format("2006-01-02T15:04:05Z"),
			Threshold: r.Threshold, KeyIDs: append([]string{}, r.KeyIDs...), KeyNames: append([]string{}, r.KeyNames...)})
	}
	for _, r := range st.Releases {
		rel := RepoRelease{Path: r.Path, Channel: r.Channel, Version: r.Version, Target: r.For(), Format: r.Kind(), From: r.FromVersion,
			LockSHA256: r.LockSHA256, Length: r.Length, SHA256: r.SHA256, RegistryBlob: r.RegistryBlob}
		if r.Notes != nil {
			rel.Notes, rel.NotesLength, rel.NotesSHA256 = r.Notes.Path, r.Notes.Length, r.Notes.SHA256
		}
		d.Releases = append(d.Releases, rel)
	}
	return d
}

// BudgetsCheckDoc is piship-budgets-check/v1: a release set held to the
// distribution's budgets.hcl.
type BudgetsCheckDoc struct {
	Schema     string             `json:"schema"`
	File       string             `json:"file"`
	Sums       string             `json:"sums"`
	ID         string             `json:"id"`
	Version    string             `json:"version"`
	OK         bool               `json:"ok"`
	Recorded   bool               `json:"recorded"`
	Targets    []BudgetsTargetDoc `json:"targets"`
	Unreleased []string           `json:"unreleased"`
}

// BudgetsTargetDoc is one target's figures and timings.
type BudgetsTargetDoc struct {
	Target   string             `json:"target"`
	Archive  string             `json:"archive"`
	Budgeted bool               `json:"budgeted"`
	Figures  []BudgetsFigureDoc `json:"figures"`
	Timings  []BudgetsTimingDoc `json:"timings"`
}

// BudgetsFigureDoc is one counted figure against its budget.
type BudgetsFigureDoc struct {
	Name   string `json:"name"`
	Budget int64  `json:"budget"`
	Actual int64  `json:"actual"`
	State  string `json:"state"`
}

// BudgetsTimingDoc is one timing against the recorded one (never gated).
type BudgetsTimingDoc struct {
	Name       string  `json:"name"`
	RecordedMs int64   `json:"recordedMs"`
	Ms         int64   `json:"ms"`
	Ratio      float64 `json:"ratio"`
	Note       string  `json:"note"`
}

// BudgetsCheckJSON is the check of set against the budgets as
// piship-budgets-check/v1.
func BudgetsCheckJSON(set *release.Sums, rep *budgets.Report, recorded bool) BudgetsCheckDoc {
	d := BudgetsCheckDoc{Schema: cli.Schema("budgets check"), File: rep.File, Sums: set.Path, ID: set.ID, Version: set.Version,
		OK: rep.Err() == nil, Recorded: recorded, Targets: []BudgetsTargetDoc{}, Unreleased: nonNil(rep.Unreleased)}
	for _, t := range rep.Targets {
		td := BudgetsTargetDoc{Target: t.Target, Archive: t.Archive, Budgeted: t.Budgeted, Figures: []BudgetsFigureDoc{}, Timings: []BudgetsTimingDoc{}}
		for _, f := range t.Figures {
			td.Figures = append(td.Figures, BudgetsFigureDoc{Name: f.Name, Budget: f.Budget, Actual: f.Actual, State: f.State})
		}
		for _, tm := range t.Timings {
			td.Timings = append(td.Timings, BudgetsTimingDoc{Name: tm.Name, RecordedMs: tm.RecordedMs, Ms: tm.Ms, Ratio: math.Round(tm.Ratio*100) / 100, Note: tm.Note})
		}
		d.Targets = append(d.Targets, td)
	}
	return d
}

// PublishDoc is piship-publish/v1: what piship publish pushed, as the
// registry answers it.
type PublishDoc struct {
	Schema   string             `json:"schema"`
	Registry string             `json:"registry"`
	ID       string             `json:"id"`
	Version  string             `json:"version"`
	Set      string             `json:"set"`
	Index    PublishIndexDoc    `json:"index"`
	Targets  []PublishTargetDoc `json:"targets"`
}

// PublishIndexDoc is the version's image index.
type PublishIndexDoc struct {
	Tag    string `json:"tag"`
	Digest string `json:"digest"`
}

// PublishTargetDoc is one target's artifact.
type PublishTargetDoc struct {
	Target      string           `json:"target"`
	Tag         string           `json:"tag"`
	Digest      string           `json:"digest"`
	LockSHA256  string           `json:"lockSha256"`
	ArchiveBlob string           `json:"archiveBlob"`
	Files       []PublishFileDoc `json:"files"`
}

// PublishFileDoc is one layer: a file of the release.
type PublishFileDoc struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}
