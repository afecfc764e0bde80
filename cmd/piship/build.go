package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

func lockCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:     "lock DIST",
		GroupID: groupDist,
		Short:   "write DIST/piship.lock from distribution.hcl, the npm lock, resources and tools",
		Long: `Reads DIST/distribution.hcl, the runtime's package-lock.json, the resources and the tools
and writes DIST/piship.lock: what build and release check before they run (a lock that no
longer matches is LOCK_INVALID: run piship lock again). With package blocks, each vendored Pi
package is installed from its own lock (through the runtime cache, as a build does) and its
package.json and extension entry files are pinned by sha256.`,
		Example: "  piship lock testdata/distributions/hello",
		Args:    exactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			return done(runLock(e, args[0]))
		},
	}
}

// runLock writes DIST/piship.lock.
func runLock(e *env, dir string) int {
	d, diags := distribution.Load(dir)
	if diags.HasErrors() {
		printDiags(e, distFiles(dir), diags)
		return usageErr(e, errcode.ConfigInvalid, "%s has errors; fix them and run piship lock again", filepath.Join(dir, distribution.FileName))
	}
	l, err := distribution.ComputeLock(d)
	if err != nil {
		return fail(e, err)
	}
	if err := pipelines.PinPiPackages(e.ctx, e.getenv, e.stderr, d, l); err != nil {
		return fail(e, err)
	}
	if err := distribution.WriteLock(d, l); err != nil {
		fmt.Fprintf(e.stderr, "piship: cannot write the lock: %v\n", err)
		return exitFailed
	}
	pi := ""
	if n := len(l.Packages); n > 0 {
		pi = ", " + canon.Count(n, "Pi package")
	}
	fmt.Fprintf(e.stdout, "locked %s %s: %s (%s, %s, %s%s)\n",
		d.ID, d.Version, filepath.Join(d.Dir, "piship.lock"), canon.Count(l.Runtime.Packages, "package"),
		canon.Count(len(l.Resources), "resource file"), canon.Count(len(l.Tools), "tool"), pi)
	return exitOK
}

func buildCmd(e *env) *cobra.Command {
	var out string
	var rebuild, asJSON, noFootprint bool
	var rc runConfig
	c := &cobra.Command{
		Use:     "build DIST",
		GroupID: groupDist,
		Short:   "build a distribution's payload (the built-in build pipeline)",
		Long: `Runs the built-in pipeline build.hcl on the distribution directory DIST: lock check, npm ci
into the runtime cache, prune, strip, bundle, resources, inventory, publish. The payload is
renamed to OUT/<id> only when complete; an unchanged rebuild reuses it. The last line says
what was built: files, size, cache hits and the time.`,
		Example: `  piship build testdata/distributions/hello
  piship build ./mydist --out /tmp/out --rebuild`,
		Args: exactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			dist, outDir := absArgs(args[0], out)
			b, code := pipelines.Build(e.ctx, e.devConfig(rc), pipelines.BuildArgs{Distribution: dist, Out: outDir, Rebuild: rebuild, NoFootprint: noFootprint})
			if b == nil {
				return done(code)
			}
			if asJSON {
				printJSON(e, b.JSON())
			}
			fmt.Fprintln(e.stderr, buildSummary(b))
			return done(code)
		},
	}
	jsonFlag(c, &asJSON)
	c.Flags().StringVar(&out, "out", "", "output `DIR` (default: DIST/dist)")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "ignore the build stamp and rebuild the payload")
	c.Flags().BoolVar(&noFootprint, "no-footprint", false, "keep every vendored Pi package file as installed: no closure bundled, no dependency shared, nothing pretranspiled (the footprint's baseline)")
	runFlags(c.Flags(), &rc)
	return c
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
	return fmt.Sprintf("%s %s: %s (%s): %s, %s; %s; %.2f s",
		b.ID, b.Version, b.Final, form, canon.Count(b.Files, "file"), humanBytes(b.Bytes), strings.Join(how, ", "), b.Total.Seconds())
}

// distFiles returns distribution.hcl's source for diagnostic snippets.
func distFiles(dir string) map[string]*hcl.File {
	path := filepath.Join(dir, distribution.FileName)
	src, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return nil
	}
	return map[string]*hcl.File{path: {Bytes: src}}
}

// runFlags adds the run options every pipeline command takes.
func runFlags(fs *pflag.FlagSet, rc *runConfig) {
	runFlagsWith(fs, rc, "progress on stderr: auto (tty on a terminal, plain otherwise), tty, plain or json (default: PISHIP_PROGRESS=1/0, else auto)")
}

// consumerRunFlags are runFlags for the consumer commands that run a
// pipeline (install, update, rollback, doctor): they print a short result
// and no stage progress unless --progress asks for it.
func consumerRunFlags(fs *pflag.FlagSet, rc *runConfig) {
	rc.resultOnly = true
	runFlagsWith(fs, rc, "show the stages' progress on stderr: auto (tty on a terminal, plain otherwise), tty, plain or json (default: none, only the result)")
}

func runFlagsWith(fs *pflag.FlagSet, rc *runConfig, progressHelp string) {
	fs.StringVar(&rc.timings, "timings", "", "write the run's timings report to `FILE` (one self-contained HTML page: stages on a time axis, the critical path, cache hits and failures)")
	fs.IntVar(&rc.parallelism, "parallelism", 0, "`N` stages that may run at once, 1 to 1024 (default: number of CPUs)")
	fs.StringVar(&rc.traceFile, "trace-file", "", "write the run's spans to `FILE` as OTLP JSON")
	fs.Var(&rc.progress, "progress", progressHelp)
}

// absArgs makes a `COMMAND DIST` command line's paths absolute (out
// empty if unset).
func absArgs(dist, out string) (string, string) {
	dist, _ = filepath.Abs(dist)
	if out != "" {
		out, _ = filepath.Abs(out)
	}
	return dist, out
}
