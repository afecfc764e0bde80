package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/verify"
)

func releaseCmd(e *env) *cobra.Command {
	var out, channel string
	var rebuild, asJSON, noFootprint bool
	var rc runConfig
	c := &cobra.Command{
		Use:     "release DIST",
		GroupID: groupDist,
		Short:   "qualify and ship a distribution as a reproducible release",
		Long: `Runs the built-in pipeline release.hcl on DIST: the audit, registry signatures, SBOM and
notices beside the build, the smoke tests against the payload, the verdicts in the fixed
order signatures, tests, vulnerabilities, package audits; then release.json, checksums.txt
and a reproducible <id>-<version>-<target>.tar.gz in OUT/releases/.
PISHIP_RELEASE_NO_CACHE=1 equals --rebuild.`,
		Example: `  piship release testdata/distributions/hello --out /tmp/out
  piship release ./mydist --channel beta --rebuild`,
		Args: exactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			distDir, outDir := absArgs(args[0], out)
			noCache := rebuild || e.getenv("PISHIP_RELEASE_NO_CACHE") == "1"
			r, code := pipelines.Release(e.ctx, e.devConfig(rc), pipelines.ReleaseArgs{Distribution: distDir, Out: outDir, Channel: channel, NoCache: noCache, NoFootprint: noFootprint})
			if r == nil {
				return done(code)
			}
			fmt.Fprintln(e.stderr, "runtime cache: "+r.RuntimeCache)
			if r.BuildInfoErr != nil {
				fmt.Fprintf(e.stderr, "piship: build-info: %v\n", r.BuildInfoErr)
			}
			fmt.Fprintf(e.stderr, "%s: %s (%s, archive %s, sha256 %s) in %.2f s\n",
				r.Name, r.Path, canon.Count(r.Files, "file"), humanBytes(r.ArchiveBytes), r.SHA256, r.Total.Seconds())
			if asJSON {
				printJSON(e, r.JSON())
			}
			return done(code)
		},
	}
	jsonFlag(c, &asJSON)
	c.Flags().StringVar(&out, "out", "", "output `DIR` (default: DIST/dist); releases go to DIR/releases/")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "ignore the runtime and bundle caches: run npm ci and the bundler again (also PISHIP_RELEASE_NO_CACHE=1)")
	c.Flags().StringVar(&channel, "channel", "stable", "update `CHANNEL` recorded in release.json")
	c.Flags().BoolVar(&noFootprint, "no-footprint", false, "keep every vendored Pi package file as installed: no closure bundled, no dependency shared (the footprint's baseline; the report still records each decision)")
	runFlags(c.Flags(), &rc)
	return c
}

func verifyReleaseCmd(e *env) *cobra.Command {
	var sum string
	var asJSON bool
	c := &cobra.Command{
		Use:     "verify-release ARCHIVE|DIR",
		GroupID: groupDist,
		Short:   "verify a release as a consumer would trust it",
		Long: `Extracts the release archive (or the archive of a release directory) under the archive
rules, applies the release rules and checks the SBOM, the notices and the verdicts, one line
per check. Exit 1 when a check failed, naming it and its file.`,
		Example: `  piship verify-release /tmp/out/releases/hello-1.0.0-linux-x64.tar.gz
  piship verify-release /tmp/out/releases --sha256 0f3a...`,
		Args: exactArgs("ARCHIVE|DIR"),
		RunE: func(c *cobra.Command, args []string) error {
			return done(runVerifyRelease(e, args[0], sum, asJSON))
		},
	}
	c.Flags().StringVar(&sum, "sha256", "", "expected sha256 of the archive (`HEX`)")
	jsonFlag(c, &asJSON)
	return c
}

// runVerifyRelease checks a release archive or directory.
func runVerifyRelease(e *env, path, sum string, asJSON bool) int {
	start := time.Now()
	rep, err := verify.Release(e.ctx, path, verify.Options{SHA256: sum})
	if err != nil {
		return fail(e, err)
	}
	if asJSON {
		printJSON(e, pipelines.VerifyReleaseJSON(rep, path))
	} else {
		for _, c := range rep.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			line := fmt.Sprintf("%s %-24s %s", mark, c.Name, c.File)
			if c.Detail != "" {
				line += ": " + c.Detail
			}
			fmt.Fprintln(e.stdout, strings.TrimRight(line, " "))
		}
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "verified %s (%s) in %.2f s\n", rep.Release, canon.Count(len(rep.Checks), "check"), time.Since(start).Seconds())
	return exitOK
}
