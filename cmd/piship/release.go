package main

import (
	"fmt"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/verify"
)

// cmdRelease runs the built-in release pipeline on a distribution.
func cmdRelease(e *env, args []string) int {
	fs := newFlags(e, "release")
	out := fs.String("out", "", "output directory (default: DIST/dist); releases go to <out>/releases/")
	rebuild := fs.Bool("rebuild", false, "ignore the runtime and bundle caches: run npm ci and the bundler again (also PISHIP_RELEASE_NO_CACHE=1)")
	channel := fs.String("channel", "stable", "update channel recorded in release.json")
	rc := runFlags(fs)
	distDir, outDir, ok, code := distArgs(e, fs, args, "usage: piship release DIST [--out DIR] [--rebuild] [--channel c]", out)
	if !ok {
		return code
	}
	noCache := *rebuild || e.getenv("PISHIP_RELEASE_NO_CACHE") == "1"
	r, code := pipelines.Release(e.ctx, e.config(*rc), pipelines.ReleaseArgs{Distribution: distDir, Out: outDir, Channel: *channel, NoCache: noCache})
	if r == nil {
		return code
	}
	fmt.Fprintln(e.stderr, "runtime cache: "+r.RuntimeCache)
	if r.BuildInfoErr != nil {
		fmt.Fprintf(e.stderr, "piship: build-info: %v\n", r.BuildInfoErr)
	}
	fmt.Fprintf(e.stderr, "%s: %s (%d files, archive %s, sha256 %s) in %.2f s\n",
		r.Name, r.Path, r.Files, humanBytes(r.ArchiveBytes), r.SHA256, r.Total.Seconds())
	return code
}

// cmdVerifyRelease checks a release archive or directory.
func cmdVerifyRelease(e *env, args []string) int {
	fs := newFlags(e, "verify-release")
	sum := fs.String("sha256", "", "expected sha256 of the archive")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship verify-release ARCHIVE|DIR [--sha256 HEX] [--json]")
	}
	start := time.Now()
	rep, err := verify.Release(e.ctx, pos[0], verify.Options{SHA256: *sum})
	if err != nil {
		return usageErr(e, "%v", err)
	}
	if *asJSON {
		data, _ := canon.JSON(rep)
		writeAll(e.stdout, string(data))
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
	fmt.Fprintf(e.stderr, "verified %s (%d checks) in %.2f s\n", rep.Release, len(rep.Checks), time.Since(start).Seconds())
	return exitOK
}
