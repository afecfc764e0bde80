package main

// A release split over a CI fleet's runners: piship release --target T
// --to oci://... on each runner, then piship release --merge --from
// oci://... (stages/release/fleet).

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release/fleet"
	"piship.dev/piship/stages/stage/errcode"
)

// splitFlags are release's flags for a split release.
type splitFlags struct {
	targets  []string
	runner   string
	to, from string
	merge    bool
}

// openRelease opens the repository of a --to or --from value.
func openRelease(flag, s string) (*oci.Repo, error) {
	ref, err := oci.ParseRef(s)
	if err != nil {
		return nil, errcode.Errorf(errcode.ConfigInvalid, "%s: %w", flag, err)
	}
	return oci.Open(ref, oci.Options{Budget: oci.TransferBudget()})
}

// defaultRunner names this runner for release.json when --target is
// given without --runner: RUNNER_NAME (what GitHub Actions and Gitea set),
// else the host name.
func defaultRunner(e *cli.Env) string {
	if r := e.Getenv("RUNNER_NAME"); r != "" {
		return r
	}
	h, _ := os.Hostname()
	return h
}

// checkSplit refuses flags a split or merge cannot take together.
func checkSplit(e *cli.Env, s splitFlags, plan, rebuild, builtin bool) int {
	switch {
	case s.merge && s.from == "":
		return cli.UsageErr(e, cli.CodeUsage, "--merge needs --from oci://host[:port]/repository: the registry the runners pushed their targets to (--to)")
	case !s.merge && s.from != "":
		return cli.UsageErr(e, cli.CodeUsage, "--from names the registry a --merge reads: add --merge, or drop --from")
	case s.merge && (len(s.targets) > 0 || s.to != "" || s.runner != "" || plan || rebuild || builtin):
		return cli.UsageErr(e, cli.CodeUsage, "--merge builds nothing: it takes no --target, --to, --runner, --plan, --rebuild or --builtin (each runner's release did that)")
	}
	return cli.ExitOK
}

// pushReleased pushes every target r released to the registry --to
// names, printing one line per target; it fills each target's Registry.
func pushReleased(e *cli.Env, to string, r *pipelines.Released, doc *ReleaseDoc) int {
	repo, err := openRelease("--to", to)
	if err != nil {
		return cli.Fail(e, err)
	}
	for i, t := range r.Targets {
		p, err := fleet.Push(e.Ctx, repo, t.Path, t.Archive)
		if err != nil {
			return cli.Fail(e, err)
		}
		fmt.Fprintf(e.Stderr, "%s: pushed to %s (%s, %s)\n", t.Target, p.Ref, p.Digest, canon.Count(p.Files, "file"))
		if doc != nil {
			doc.Targets[i].Registry = repo.Ref.String() + "@" + p.Digest
		}
	}
	return cli.ExitOK
}

// runMerge is piship release --merge: every target of the version pulled
// from the registry, checked, and written into OUT/releases with the set.
func runMerge(e *cli.Env, distDir, outDir, from, version string, snapshot, asJSON bool) int {
	start := time.Now()
	w, err := fleet.WantOf(e.Ctx, distDir, distribution.VersionOptions{Version: version, Snapshot: snapshot})
	if err != nil {
		return cli.Fail(e, err)
	}
	repo, err := openRelease("--from", from)
	if err != nil {
		return cli.Fail(e, err)
	}
	if outDir == "" {
		outDir = filepath.Join(distDir, "dist")
	}
	m, err := fleet.Merge(e.Ctx, repo, w, filepath.Join(outDir, "releases"))
	if err != nil {
		return cli.Fail(e, err)
	}
	for _, t := range m.Targets {
		fmt.Fprintln(e.Stderr, t.String())
	}
	fmt.Fprintf(e.Stderr, "%s-%s: %s (%s merged from %s) in %.2f s\n", m.ID, m.Version, m.Sums, canon.Count(len(m.Targets), "target"), repo.Ref, time.Since(start).Seconds())
	if asJSON {
		cli.PrintJSON(e, mergeJSON(m, time.Since(start)))
	}
	return cli.ExitOK
}

// mergeJSON is a merge as piship-release/v2: each target as its runner
// released it (release.json, build-info), registry the artifact pulled.
func mergeJSON(m *fleet.Merged, took time.Duration) ReleaseDoc {
	d := ReleaseDoc{Schema: cli.Schema("release"), ID: m.ID, Version: m.Version, Sums: m.Sums, Targets: []ReleaseTargetDoc{}, Seconds: took.Seconds()}
	for _, t := range m.Targets {
		d.Targets = append(d.Targets, ReleaseTargetDoc{Target: t.Target, Name: t.Name, Path: t.Path, Archive: t.Archive, Files: int64(t.Files),
			ArchiveBytes: t.ArchiveBytes, SHA256: t.SHA256, Smoke: t.Smoke, SearchToolsMissing: []string{}, RuntimeCache: t.RuntimeCache,
			BuildInfo: t.BuildInfo, Runner: t.Runner, Registry: t.From})
	}
	return d
}
