package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages/budgets"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

func budgetsCmd(e *cli.Env) *cobra.Command {
	c := &cobra.Command{
		Use:     "budgets COMMAND",
		GroupID: cli.GroupDist,
		Short:   "hold a release to the distribution's budgets (budgets check)",
		Long: `Checks a release against DIST/budgets.hcl: per target, its payload files, installed files
and archive bytes, and its timings (reported, never gated).`,
		Example: "  piship budgets check testdata/distributions/hello",
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), cli.SuggestFor(c, args))
			}
			return fmt.Errorf("%s needs a command: usage: piship budgets check DIST [flags]", c.CommandPath())
		},
	}
	var out, target string
	var record, asJSON bool
	check := &cobra.Command{
		Use:   "check DIST",
		Short: "check the newest release of DIST against DIST/budgets.hcl",
		Long: `Reads the newest release set of DIST that piship release wrote in OUT/releases (OUT is
--out, default DIST/dist; nothing is built: run piship release first) and holds each target's
release to its block in DIST/budgets.hcl:

  payload files    release.json's payload.files (the payload's inventory)
  installed files  the archive's regular files: what an install writes into apps/<id>/<version>/
  archive bytes    the size of <id>-<version>-<target>.tar.zst

A figure more than 10% over its budget fails the check (BUDGET_EXCEEDED, exit 1, naming the
figure, its budget and its value); one more than 10% under is reported so the budget can be
tightened. A target with no budget says so and passes. The release's timings (its
build-info.json: the total and every stage that took a tenth of it) are reported as ratios
to the recorded ones and never gated: they vary by 20% run to run.

--record rewrites the budgets of the release's targets (only --target's with it) from this
release, keeping the other targets', and exits 0: how a deliberate growth is accepted.`,
		Example: `  piship release testdata/distributions/hello && piship budgets check testdata/distributions/hello
  piship budgets check ./mydist --target linux-x64
  piship budgets check ./mydist --record`,
		Args: cli.ExactArgs("DIST"),
		RunE: func(c *cobra.Command, args []string) error {
			dist, outDir := absArgs(args[0], out)
			return cli.Done(runBudgetsCheck(e, dist, outDir, target, record, asJSON))
		},
	}
	check.Flags().StringVar(&out, "out", "", "the release's output `DIR` as given to piship release (default: DIST/dist); the release set is read from DIR/releases/")
	check.Flags().StringVar(&target, "target", "", "check only `TARGET` of the release (linux-x64 ...)")
	check.Flags().BoolVar(&record, "record", false, "rewrite DIST/budgets.hcl from this release instead of failing on it")
	cli.JSONFlag(check, &asJSON)
	c.AddCommand(check)
	return c
}

// runBudgetsCheck checks (or records) the newest release of dist.
func runBudgetsCheck(e *cli.Env, dist, out, target string, record, asJSON bool) int {
	d, diags := distribution.Load(dist)
	if diags.HasErrors() {
		printDiags(e, distFiles(dist), diags)
		return cli.UsageErr(e, errcode.ConfigInvalid, "%s has errors; fix them and run piship budgets check again", filepath.Join(dist, distribution.FileName))
	}
	if out == "" {
		out = filepath.Join(dist, "dist")
	}
	set, err := budgets.FindSet(filepath.Join(out, "releases"), d.ID)
	if err != nil {
		return cli.Fail(e, err)
	}
	if target != "" {
		if _, ok := set.For(target); !ok {
			return cli.UsageErr(e, errcode.ConfigInvalid, "--target %s: the release set %s has no such target (it has %s)", target, set.Path, strings.Join(set.Targets(), ", "))
		}
	}
	ms, err := budgets.MeasureSet(set)
	if err != nil {
		return cli.Fail(e, err)
	}
	if target != "" {
		ms = slices.DeleteFunc(ms, func(m budgets.Measured) bool { return m.Target != target })
	}
	f, _, err := budgets.Read(budgets.Path(dist))
	if err != nil {
		return cli.Fail(e, err)
	}
	rep := budgets.Check(f, ms)
	if record {
		f.Record(ms)
		if err := f.Write(); err != nil {
			return cli.Fail(e, err)
		}
	}
	if asJSON {
		cli.PrintJSON(e, BudgetsCheckJSON(set, rep, record))
	} else {
		fmt.Fprintf(e.Stdout, "%s-%s (%s) against %s:\n", set.ID, set.Version, set.Path, f.Path)
		for _, l := range rep.Lines() {
			fmt.Fprintln(e.Stdout, "  "+l)
		}
	}
	var targets []string
	for _, m := range ms {
		targets = append(targets, m.Target)
	}
	if record {
		fmt.Fprintf(e.Stderr, "recorded the budgets of %s (%s) in %s\n", canon.Count(len(ms), "target"), strings.Join(targets, ", "), f.Path)
		return cli.ExitOK
	}
	if err := rep.Err(); err != nil {
		return cli.Fail(e, err)
	}
	fmt.Fprintf(e.Stderr, "%s-%s within its budgets (%s: %s)\n", set.ID, set.Version, canon.Count(len(ms), "target"), strings.Join(targets, ", "))
	return cli.ExitOK
}
