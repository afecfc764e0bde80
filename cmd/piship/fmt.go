package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"piship.dev/piship/stages/payload"
)

// cmdFmt rewrites pipeline files in canonical HCL style; with --check it
// lists the files that would change and exits 1 if there are any.
func cmdFmt(e *env, args []string) int {
	fs := newFlags(e, "fmt")
	check := fs.Bool("check", false, "list files that are not formatted; change nothing")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) == 0 {
		matches, _ := filepath.Glob(filepath.Join("pipelines", "*.hcl"))
		pos = matches
	}
	var targets []string
	for _, p := range pos {
		if info, err := os.Stat(p); err == nil && info.IsDir() {
			m, _ := filepath.Glob(filepath.Join(p, "*.hcl"))
			targets = append(targets, m...)
			continue
		}
		targets = append(targets, p)
	}
	unformatted := 0
	for _, p := range targets {
		src, err := os.ReadFile(p)
		if err != nil {
			return usageErr(e, "CONFIG_INVALID: %v", err)
		}
		// Refuse to format a file that does not parse: hclwrite would
		// otherwise produce something that looks fine and means nothing.
		if _, diags := hclsyntax.ParseConfig(src, p, hcl.InitialPos); diags.HasErrors() {
			printDiags(e, map[string]*hcl.File{}, diags)
			return exitUsage
		}
		out := hclwrite.Format(src)
		if bytes.Equal(out, src) {
			continue
		}
		unformatted++
		if *check {
			fmt.Fprintln(e.stdout, p)
			continue
		}
		mode := os.FileMode(0o644)
		if info, err := os.Stat(p); err == nil {
			mode = info.Mode().Perm()
		}
		// Replaced via a temp sibling and rename: an interrupted fmt never
		// leaves a half-written file.
		if err := payload.WriteFile(p, out, mode); err != nil {
			fmt.Fprintf(e.stderr, "piship: fmt: %v\n", err)
			return exitFailed
		}
		fmt.Fprintln(e.stdout, p)
	}
	if *check && unformatted > 0 {
		fmt.Fprintf(e.stderr, "piship: %d files need formatting: run `piship fmt`\n", unformatted)
		return exitFailed
	}
	return exitOK
}
