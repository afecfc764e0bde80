package main

import (
	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/pipelines"
)

// fmtCmd rewrites pipeline files in canonical HCL style; with --check it
// lists the files that would change and exits 1 if there are any.
func fmtCmd(e *cli.Env) *cobra.Command {
	var check bool
	c := &cobra.Command{
		Use:     "fmt [FILE|DIR...]",
		GroupID: cli.GroupPipeline,
		Short:   "format pipeline files (every *.hcl under the current directory without arguments)",
		Long: `Rewrites HCL files in canonical style and lists each file it changed. A directory means every
*.hcl under it, recursively (hidden directories and node_modules skipped); no argument means
the current directory, as terraform fmt -recursive. A file that does not parse is left as
it is (CONFIG_INVALID, exit 2). --check changes nothing: it lists the files that need
formatting and exits 1 when there are any.`,
		Example: `  piship fmt
  piship fmt --check
  piship fmt pipelines/check.hcl`,
		Args: cli.RangeArgs(0, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(pipelines.Format(e.Stdout, e.Stderr, e.Getenv, args, check))
		},
	}
	c.Flags().BoolVar(&check, "check", false, "list files that are not formatted; change nothing (exit 1 if any)")
	return c
}
