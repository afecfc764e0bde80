package main

import (
	"fmt"
	"path/filepath"

	"piship.dev/piship/stages/scaffold"
)

// runInit scaffolds a new distribution into DIR (default: the current
// directory) and prints the files it wrote and the next commands.
func runInit(e *env, args []string) int {
	fs := newFlags(e, "init")
	id := fs.String("id", "", "distribution id, also its command (default: DIR's name)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 1 {
		return usageErr(e, "usage: piship init [DIR] [--id ID]")
	}
	dir := "."
	if len(pos) == 1 {
		dir = pos[0]
	}
	files, err := scaffold.Write(dir, scaffold.Options{ID: *id})
	for _, f := range files {
		fmt.Fprintf(e.stdout, "wrote %s\n", filepath.Join(dir, filepath.FromSlash(f)))
	}
	if err != nil {
		return usageErr(e, "%v", err)
	}
	name, _ := scaffold.ID(dir, scaffold.Options{ID: *id})
	fmt.Fprintf(e.stdout, "\nNext: lock and build it, run the built program, and release it (which runs its smoke tests):\n  piship lock %[1]s && piship build %[1]s\n  %[2]s\n  piship release %[1]s\n",
		dir, filepath.Join(dir, "dist", name, "bin", name))
	return exitOK
}
