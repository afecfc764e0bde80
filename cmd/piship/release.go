package main

import (
	"fmt"
	"strings"
	"time"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/verify"
)

func releaseCmd(e *cli.Env) *cobra.Command {
	var out, channel, version string
	var rebuild, asJSON, noFootprint, builtin, plan, snapshot bool
	var rc cli.RunConfig
	var split splitFlags
	var ro remoteOpts
	c := &cobra.Command{
		Use:     "release DIST",
		GroupID: cli.GroupDist,
		Short:   "qualify and ship a distribution as a reproducible release",
		Long: `Runs the pipeline release.hcl on DIST: DIST/pipelines/release.hcl when the distribution has
its own, else the built-in one (--builtin forces it; the first line names the file that
runs). The built-in one runs the audit, registry signatures, SBOM and notices beside the
build, the smoke tests against the payload, the verdicts in the fixed order signatures,
tests, vulnerabilities, package audits; then writes release.json, checksums.txt and a
reproducible <id>-<version>-<target>.tar.zst in OUT/releases/.
PISHIP_RELEASE_NO_CACHE=1 equals --rebuild.

The release version is --version, else distribution.hcl's version, else the git tag at
HEAD of DIST (v1.2.3 or 1.2.3 names release 1.2.3); without any, the release is refused
(CONFIG_INVALID). --snapshot makes a release to try from the commit at HEAD, version
<next>-snapshot.g<sha> (v1.2.3 then 1.2.4-snapshot.g0123456789ab), which piship repo add
refuses.

A release split over a CI fleet: on each runner, --target T (again for more) releases only
that entry of release.targets, smoke-tests it where the runner can run it, records the runner
in release.json (--runner, default RUNNER_NAME, else the host name) and, with --to, pushes
the target's archive, sidecar, build-info and the files its release directory holds beside
the archive to the registry as the artifact <version>-<target>. Then --merge --from the same registry, on any machine, pulls
every target of the version, holds each to this checkout's piship.lock and to the release
rules (verify-release's checks), and writes OUT/releases as one run over every target
would: the release directories (each extracted from its archive) and archives, <id>-<version>.SHA256SUMS, install.sh and
install.ps1, which piship repo add takes. A target no runner has pushed fails the merge
(TARGET_NOT_PUSHED, naming it).`,
		Example: `  piship release testdata/distributions/hello --out /tmp/out
  piship release ./mydist --channel beta --rebuild
  piship release ./mydist --version 1.2.3
  piship release ./mydist --snapshot
  piship release ./mydist --target linux-x64 --to oci://ghcr.io/acme/releases
  piship release ./mydist --merge --from oci://ghcr.io/acme/releases`,
		Args: cli.ExactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			distDir, outDir := absArgs(args[0], out)
			if code := checkSplit(e, split, plan, rebuild, builtin); code != cli.ExitOK {
				return cli.Done(code)
			}
			if split.merge {
				return cli.Done(runMerge(e, distDir, outDir, split.from, version, snapshot, asJSON))
			}
			cfg, code, ok := devConfig(e, rc, ro)
			if !ok {
				return cli.Done(code)
			}
			noCache := rebuild || e.Getenv("PISHIP_RELEASE_NO_CACHE") == "1"
			runner := split.runner
			if runner == "" && len(split.targets) > 0 {
				runner = defaultRunner(e)
			}
			ra := pipelines.ReleaseArgs{Distribution: distDir, Out: outDir, Channel: channel, NoCache: noCache, NoFootprint: noFootprint, Builtin: builtin, Version: version, Snapshot: snapshot,
				Targets: split.targets, Runner: runner}
			if plan {
				rp, err := pipelines.PlanRelease(cfg, ra)
				return cli.Done(printPlan(e, rp, err, asJSON))
			}
			r, err := pipelines.Release(e.Ctx, cfg, ra)
			code = pipelines.ExitCode(err)
			if r == nil {
				return cli.Done(code)
			}
			printReleased(e, r)
			doc := releaseJSON(r, runner)
			if code == cli.ExitOK && split.to != "" {
				code = pushReleased(e, split.to, r, &doc)
			}
			if asJSON {
				cli.PrintJSON(e, doc)
			}
			return cli.Done(code)
		},
	}
	cli.JSONFlag(c, &asJSON)
	c.Flags().StringVar(&out, "out", "", "output `DIR` (default: DIST/dist); releases go to DIR/releases/")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "ignore the runtime and bundle caches: run npm ci and the bundler again (also PISHIP_RELEASE_NO_CACHE=1)")
	c.Flags().StringVar(&channel, "channel", "stable", "update `CHANNEL` recorded in release.json")
	c.Flags().BoolVar(&noFootprint, "no-footprint", false, "keep every vendored Pi package file as installed: no closure bundled, no dependency shared (the footprint's baseline; the report still records each decision)")
	versionFlags(c, &version, &snapshot)
	c.Flags().StringArrayVar(&split.targets, "target", nil, "release only `TARGET`, one entry of release.targets (again for more): this runner's part of a split release")
	c.Flags().StringVar(&split.runner, "runner", "", "the runner `NAME` release.json records as having built and smoke-tested the targets (default with --target: $RUNNER_NAME, else the host name)")
	c.Flags().StringVar(&split.to, "to", "", "push each released target to the registry `oci://HOST/REPO` (tag <version>-<target>) for a later --merge")
	c.Flags().BoolVar(&split.merge, "merge", false, "build nothing: pull every target of the version from --from, check each against piship.lock and the release rules, and write the release set")
	c.Flags().StringVar(&split.from, "from", "", "the registry `oci://HOST/REPO` a --merge pulls the targets from")
	builtinFlag(c, &builtin, "DIST/pipelines/release.hcl exists")
	planFlag(c.Flags(), &plan)
	cli.RunFlags(c.Flags(), &rc)
	remoteFlags(c.Flags(), &ro)
	return c
}

// printReleased prints each target's release (its runtime cache line,
// then where it is), then the set file.
func printReleased(e *cli.Env, r *pipelines.Released) {
	for _, t := range r.Targets {
		label := ""
		if len(r.Targets) > 1 {
			label = t.Target + ": "
		}
		fmt.Fprintln(e.Stderr, label+"runtime cache: "+t.RuntimeCache)
		if t.BuildInfoErr != nil {
			fmt.Fprintf(e.Stderr, "piship: build-info: %v\n", t.BuildInfoErr)
		}
		notes := ""
		if strings.HasPrefix(t.Smoke, "not-run") {
			notes = ", smoke tests " + t.Smoke
		}
		if len(t.SearchToolsMissing) > 0 {
			notes += fmt.Sprintf(", without the search tools %s: no archive pinned for %s", strings.Join(t.SearchToolsMissing, ", "), t.Target)
		}
		fmt.Fprintf(e.Stderr, "%s: %s (%s, archive %s, sha256 %s%s)\n",
			t.Name, t.Path, canon.Count(t.Files, "file"), pipelines.HumanBytes(t.ArchiveBytes), t.SHA256, notes)
	}
	if r.Sums != "" {
		fmt.Fprintf(e.Stderr, "%s-%s: %s (%s) in %.2f s\n", r.ID, r.Version, r.Sums, canon.Count(len(r.Targets), "target"), r.Total.Seconds())
	}
}

func verifyReleaseCmd(e *cli.Env) *cobra.Command {
	var sum string
	var asJSON bool
	c := &cobra.Command{
		Use:     "verify-release ARCHIVE|DIR|SET",
		GroupID: cli.GroupDist,
		Short:   "verify a release as a consumer would trust it",
		Long: `Extracts the release archive (or the archive of a release directory) under the archive
rules, applies the release rules and checks the SBOM, the notices and the verdicts, one line
per check. Exit 1 when a check failed, naming it and its file.

A release set (<id>-<version>.SHA256SUMS, what piship release writes beside the archives)
verifies every archive it lists, each held to the set's digest, whatever its target: this
is how an archive for another machine is inspected (piship install refuses it).`,
		Example: `  piship verify-release /tmp/out/releases/hello-1.0.0-linux-x64.tar.zst
  piship verify-release /tmp/out/releases/hello-1.0.0.SHA256SUMS
  piship verify-release /tmp/out/releases --sha256 0f3a...`,
		Args: cli.ExactArgs("ARCHIVE|DIR|SET"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runVerifyRelease(e, args[0], sum, asJSON))
		},
	}
	c.Flags().StringVar(&sum, "sha256", "", "expected sha256 of the archive (`HEX`)")
	cli.JSONFlag(c, &asJSON)
	return c
}

// runVerifyRelease checks a release archive, directory or set.
func runVerifyRelease(e *cli.Env, path, sum string, asJSON bool) int {
	start := time.Now()
	if release.IsSums(path) {
		return runVerifySet(e, path, sum, asJSON, start)
	}
	rep, err := verify.Release(e.Ctx, path, verify.Options{SHA256: sum})
	if err != nil {
		return cli.Fail(e, err)
	}
	if asJSON {
		cli.PrintJSON(e, VerifyReleaseJSON(rep, path))
	} else {
		printChecks(e, rep.Checks)
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintln(e.Stderr, err)
		return cli.ExitFailed
	}
	fmt.Fprintf(e.Stderr, "verified %s (%s) in %.2f s\n", rep.Release, canon.Count(len(rep.Checks), "check"), time.Since(start).Seconds())
	return cli.ExitOK
}

// printChecks prints one line per check.
func printChecks(e *cli.Env, checks []verify.Check) {
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		line := fmt.Sprintf("%s %-24s %s", mark, c.Name, c.File)
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		fmt.Fprintln(e.Stdout, strings.TrimRight(line, " "))
	}
}

// runVerifySet verifies every archive of a release set: one block of
// checks per archive (a header line naming it), every archive verified
// even after one failed.
func runVerifySet(e *cli.Env, path, sum string, asJSON bool, start time.Time) int {
	if sum != "" {
		return cli.UsageErr(e, cli.CodeUsage, "--sha256 names one archive's digest; the release set %s pins each archive's itself", path)
	}
	set, reps, err := verify.Set(e.Ctx, path)
	if err != nil {
		return cli.Fail(e, err)
	}
	if asJSON {
		cli.PrintJSON(e, VerifySetJSON(set, reps, path))
	}
	var failed []error
	checks := 0
	for _, rep := range reps {
		checks += len(rep.Checks)
		if !asJSON {
			fmt.Fprintf(e.Stdout, "== %s\n", rep.Release)
			printChecks(e, rep.Checks)
		}
		if err := rep.Err(); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", rep.Release, err))
		}
	}
	if len(failed) > 0 {
		for _, err := range failed {
			fmt.Fprintln(e.Stderr, err)
		}
		return cli.ExitFailed
	}
	fmt.Fprintf(e.Stderr, "verified %s-%s (%s: %s; %s) in %.2f s\n", set.ID, set.Version, canon.Count(len(reps), "archive"),
		strings.Join(set.Targets(), ", "), canon.Count(checks, "check"), time.Since(start).Seconds())
	return cli.ExitOK
}
