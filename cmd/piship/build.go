package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

func lockCmd(e *cli.Env) *cobra.Command {
	return &cobra.Command{
		Use:     "lock DIST",
		GroupID: cli.GroupDist,
		Short:   "write DIST/piship.lock from distribution.hcl, the npm lock, resources and tools",
		Long: `Reads DIST/distribution.hcl, the runtime's package-lock.json, the resources and the tools
and writes DIST/piship.lock: what build and release check before they run (a lock that no
longer matches is LOCK_INVALID: run piship lock again). With package blocks, each vendored Pi
package is installed from its own lock (through the runtime cache, as a build does) and its
package.json and extension entry files are pinned by sha256. With an installers block whose
source is a directory, each pinned binary there is checked against its pin (a release checks
them again before shipping them; a URL source's are fetched only then).`,
		Example: "  piship lock testdata/distributions/hello",
		Args:    cli.ExactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runLock(e, args[0]))
		},
	}
}

// runLock writes DIST/piship.lock.
func runLock(e *cli.Env, dir string) int {
	d, diags := distribution.Load(dir)
	if diags.HasErrors() {
		printDiags(e, distFiles(dir), diags)
		return cli.UsageErr(e, errcode.ConfigInvalid, "%s has errors; fix them and run piship lock again", filepath.Join(dir, distribution.FileName))
	}
	l, err := distribution.ComputeLock(d)
	if err != nil {
		return cli.Fail(e, err)
	}
	if err := PinPiPackages(e.Ctx, e.Getenv, e.Stderr, d, l); err != nil {
		return cli.Fail(e, err)
	}
	if err := PinNode(e.Ctx, e.Getenv, d, l); err != nil {
		return cli.Fail(e, err)
	}
	if err := checkInstallers(e.Ctx, d); err != nil {
		return cli.Fail(e, err)
	}
	if err := distribution.WriteLock(d, l); err != nil {
		fmt.Fprintf(e.Stderr, "piship: cannot write the lock: %v\n", err)
		return cli.ExitFailed
	}
	pi := ""
	if n := len(l.Packages); n > 0 {
		pi = ", " + canon.Count(n, "Pi package")
	}
	if l.Installers != nil {
		pi += ", installers for " + canon.Count(len(l.Installers.SHA256), "target")
	}
	name := d.ID
	if d.Version != "" {
		name += " " + d.Version
	}
	fmt.Fprintf(e.Stdout, "locked %s: %s (%s, %s, %s%s)\n",
		name, filepath.Join(d.Dir, "piship.lock"), canon.Count(l.Runtime.Packages, "package"),
		canon.Count(len(l.Resources), "resource file"), canon.Count(len(l.Tools), "tool"), pi)
	return cli.ExitOK
}

func buildCmd(e *cli.Env) *cobra.Command {
	var out, version string
	var rebuild, asJSON, noFootprint, builtin, plan, snapshot bool
	var rc cli.RunConfig
	var ro remoteOpts
	c := &cobra.Command{
		Use:     "build DIST",
		GroupID: cli.GroupDist,
		Short:   "build a distribution's payload (its build pipeline, else the built-in one)",
		Long: `Runs the pipeline build.hcl on the distribution directory DIST: DIST/pipelines/build.hcl when
the distribution has its own, else the built-in one (--builtin forces it; the first line
names the file that runs). The built-in one checks the lock, runs npm ci into the runtime
cache, prunes, strips, bundles, adds the resources, writes the inventory and publishes. The
payload is renamed to OUT/<id> only when complete; an unchanged rebuild reuses it. The last
line says what was built: files, size, cache hits and the time. The version it names is
resolved as piship release resolves it (--version, distribution.hcl's version, the git tag
at HEAD), and is the snapshot version of HEAD when none names one.`,
		Example: `  piship build testdata/distributions/hello
  piship build ./mydist --out /tmp/out --rebuild`,
		Args: cli.ExactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			dist, outDir := absArgs(args[0], out)
			cfg, code, ok := devConfig(e, rc, ro)
			if !ok {
				return cli.Done(code)
			}
			if plan {
				rp, err := pipelines.PlanBuild(cfg, pipelines.BuildArgs{Distribution: dist, Out: outDir, Rebuild: rebuild, NoFootprint: noFootprint, Builtin: builtin, Version: version, Snapshot: snapshot})
				return cli.Done(printPlan(e, rp, err, asJSON))
			}
			b, err := pipelines.Build(e.Ctx, cfg, pipelines.BuildArgs{Distribution: dist, Out: outDir, Rebuild: rebuild, NoFootprint: noFootprint, Builtin: builtin, Version: version, Snapshot: snapshot})
			code = pipelines.ExitCode(err)
			if b == nil {
				return cli.Done(code)
			}
			if asJSON {
				cli.PrintJSON(e, buildJSON(b))
			}
			fmt.Fprintln(e.Stderr, buildSummary(b))
			return cli.Done(code)
		},
	}
	cli.JSONFlag(c, &asJSON)
	c.Flags().StringVar(&out, "out", "", "output `DIR` (default: DIST/dist)")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "ignore the build stamp and rebuild the payload")
	c.Flags().BoolVar(&noFootprint, "no-footprint", false, "keep every vendored Pi package file as installed: no closure bundled, no dependency shared, nothing pretranspiled (the footprint's baseline)")
	versionFlags(c, &version, &snapshot)
	builtinFlag(c, &builtin, "DIST/pipelines/build.hcl exists")
	planFlag(c.Flags(), &plan)
	cli.RunFlags(c.Flags(), &rc)
	remoteFlags(c.Flags(), &ro)
	return c
}

// versionFlags adds --version and --snapshot, what
// distribution.ResolveVersion names a release (or a build) from.
func versionFlags(c *cobra.Command, version *string, snapshot *bool) {
	c.Flags().StringVar(version, "version", "", "the release `VERSION` (a semantic version); default: distribution.hcl's version, else the git tag at HEAD (v1.2.3 -> 1.2.3)")
	c.Flags().BoolVar(snapshot, "snapshot", false, "a snapshot version made from the commit at HEAD, <next>-snapshot.g<sha>: to try, never to publish (piship repo add refuses it)")
	c.MarkFlagsMutuallyExclusive("version", "snapshot")
}

// builtinFlag adds --builtin: run the built-in pipeline even when own
// says the file that replaces it otherwise exists.
func builtinFlag(c *cobra.Command, builtin *bool, own string) {
	c.Flags().BoolVar(builtin, "builtin", false, "run the pipeline built into piship even when "+own+" (piship pipelines show NAME prints it)")
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
		b.ID, b.Version, b.Final, form, canon.Count(b.Files, "file"), pipelines.HumanBytes(b.Bytes), strings.Join(how, ", "), b.Total.Seconds())
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

// absArgs makes a `COMMAND DIST` command line's paths absolute (out
// empty if unset).
func absArgs(dist, out string) (string, string) {
	dist, _ = filepath.Abs(dist)
	if out != "" {
		out, _ = filepath.Abs(out)
	}
	return dist, out
}
