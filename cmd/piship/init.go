package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages/scaffold"
)

func initCmd(e *cli.Env) *cobra.Command {
	var id, version string
	c := &cobra.Command{
		Use:     "init [DIR]",
		GroupID: cli.GroupDist,
		Short:   "scaffold a new distribution that lock, build and release accept at once",
		Long: `Writes a new distribution into DIR (default: the current directory): distribution.hcl
with every block commented, app/ (a dependency-free Node program), runtime/ (its package.json,
package-lock.json and the vendored tarball of app/), pack.sh to repack app/ after an edit, and
.gitignore. The id, which is also the command, is DIR's name unless --id gives one; the
version is 0.1.0 unless --version gives one. Nothing
is overwritten: a file in the way is CONFIG_INVALID and nothing is written.`,
		Example: `  piship init hello && piship lock hello && piship build hello
  piship init . --id my-tool --version 1.0.0`,
		Args: cli.RangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return cli.Done(runInit(e, dir, scaffold.Options{ID: id, Version: version}))
		},
	}
	c.Flags().StringVar(&id, "id", "", "distribution id, also its command (default: DIR's name)")
	c.Flags().StringVar(&version, "version", scaffold.Version, "the semantic `VERSION` it starts at")
	return c
}

// runInit scaffolds a new distribution into dir and prints the files it
// wrote and the next commands.
func runInit(e *cli.Env, dir string, o scaffold.Options) int {
	files, err := scaffold.Write(dir, o)
	for _, f := range files {
		fmt.Fprintf(e.Stdout, "wrote %s\n", filepath.Join(dir, filepath.FromSlash(f)))
	}
	if err != nil {
		return cli.UsageErrOf(e, err)
	}
	name, _ := scaffold.ID(dir, o)
	fmt.Fprintf(e.Stdout, "\nNext: lock and build it, run the built program, and release it (which runs its smoke tests):\n  piship lock %[1]s && piship build %[1]s\n  %[2]s\n  piship release %[1]s\n",
		dir, filepath.Join(dir, "dist", name, "bin", name))
	fmt.Fprintf(e.Stdout, "Before you hand out a release, make it updatable: the commented updates block in %s says how.\n", filepath.Join(dir, "distribution.hcl"))
	return cli.ExitOK
}
