package main

import "piship.dev/piship/pipelines"

// cmdFmt rewrites pipeline files in canonical HCL style; with --check it
// lists the files that would change and exits 1 if there are any.
func cmdFmt(e *env, args []string) int {
	fs := newFlags(e, "fmt")
	check := fs.Bool("check", false, "list files that are not formatted; change nothing")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	return pipelines.Format(e.stdout, e.stderr, e.getenv, pos, *check)
}
