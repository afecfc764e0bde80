package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/distribution"
)

// cmdLock writes DIST/piship.lock.
func cmdLock(e *env, args []string) int {
	fs := newFlags(e, "lock")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship lock DIST")
	}
	d, diags := distribution.Load(pos[0])
	if diags.HasErrors() {
		printDiags(e, distFiles(pos[0]), diags)
		return exitUsage
	}
	l, err := distribution.ComputeLock(d)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
		return exitFailed
	}
	if err := distribution.WriteLock(d, l); err != nil {
		fmt.Fprintf(e.stderr, "piship: cannot write the lock: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "locked %s %s: %s (%d packages, %d resource files, %d tools)\n",
		d.ID, d.Version, filepath.Join(d.Dir, "piship.lock"), l.Runtime.Packages, len(l.Resources), len(l.Tools))
	return exitOK
}

// cmdBuild runs the built-in build pipeline on a distribution and prints
// one summary line: files, bytes, cache hits, time (from the run's span).
func cmdBuild(e *env, args []string) int {
	fs := newFlags(e, "build")
	out := fs.String("out", "", "output directory (default: DIST/dist)")
	rebuild := fs.Bool("rebuild", false, "ignore the build stamp and rebuild the payload")
	rc := runFlags(fs)
	distDir, outDir, ok, code := distArgs(e, fs, args, "usage: piship build DIST [--out DIR] [--rebuild]", out)
	if !ok {
		return code
	}
	b, code := pipelines.Build(e.ctx, e.config(*rc), pipelines.BuildArgs{Distribution: distDir, Out: outDir, Rebuild: *rebuild})
	if b == nil {
		return code
	}
	fmt.Fprintln(e.stderr, buildSummary(b))
	return code
}

// buildSummary words a finished build in one line.
func buildSummary(b *pipelines.Built) string {
	var how []string
	switch b.Reuse {
	case "all":
		how = append(how, "unchanged: payload reused")
	default:
		if b.Reuse == "resources" {
			how = append(how, "runtime reused, resources refreshed")
		}
		if b.RuntimeCache != "" {
			how = append(how, "runtime cache "+b.RuntimeCache)
		}
		if b.BundleCache != "" {
			how = append(how, "bundle cache "+b.BundleCache)
		}
	}
	form := "unbundled"
	if b.Bundled {
		form = "bundled"
	}
	if b.Stripped {
		form += ", stripped"
	}
	return fmt.Sprintf("%s %s: %s (%s): %d files, %s; %s; %.2f s",
		b.ID, b.Version, b.Final, form, b.Files, humanBytes(b.Bytes), strings.Join(how, ", "), b.Total.Seconds())
}

// distFiles returns distribution.hcl's source for diagnostic snippets.
func distFiles(dir string) map[string]*hcl.File {
	path := filepath.Join(dir, distribution.FileName)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return map[string]*hcl.File{path: {Bytes: src}}
}

// runFlags adds the run options every pipeline command takes.
func runFlags(fs *flag.FlagSet) *runConfig {
	rc := &runConfig{}
	fs.IntVar(&rc.parallelism, "parallelism", 0, "stages that may run at once (default: number of CPUs)")
	fs.StringVar(&rc.traceFile, "trace-file", "", "write the run's spans to this file as OTLP JSON")
	return rc
}

// distArgs parses a `COMMAND DIST` command line. ok is false, with the
// exit code, when it cannot go on; dist and out come back absolute (out
// empty if unset).
func distArgs(e *env, fs *flag.FlagSet, args []string, usage string, outFlag *string) (dist, out string, ok bool, code int) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return "", "", false, flagErr(err)
	}
	if len(pos) != 1 {
		return "", "", false, usageErr(e, "%s", usage)
	}
	dist, _ = filepath.Abs(pos[0])
	if *outFlag != "" {
		out, _ = filepath.Abs(*outFlag)
	}
	return dist, out, true, exitOK
}
