package pipelines

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/budgets"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// Validation is what Validate found.
type Validation struct {
	// Count is how many pipelines and distributions are valid, Failed how
	// many files have errors.
	Count, Failed int
	// Diags are every file's diagnostics, in the order printed.
	Diags hcl.Diagnostics
}

// Validate parses every source (a distribution.hcl as a distribution, a
// budgets.hcl as budgets, the rest as pipeline files), printing the
// diagnostics to stderr.
func Validate(stderr io.Writer, getenv func(string) string, kinds *stage.Registry, srcs []*Source) Validation {
	var v Validation
	for _, src := range srcs {
		if filepath.Base(src.Name) == distribution.FileName {
			// A distribution manifest, not a pipeline file.
			_, diags := distribution.Parse(src.Src, src.Name, src.Dir)
			WriteDiags(stderr, getenv, map[string]*hcl.File{src.Name: {Bytes: src.Src}}, diags)
			v.Diags = append(v.Diags, diags...)
			if diags.HasErrors() {
				v.Failed++
			} else {
				v.Count++
			}
			continue
		}
		if filepath.Base(src.Name) == budgets.FileName {
			// A distribution's budgets (piship budgets check), not a pipeline file.
			_, diags := budgets.Decode(src.Src, src.Name)
			WriteDiags(stderr, getenv, map[string]*hcl.File{src.Name: {Bytes: src.Src}}, diags)
			v.Diags = append(v.Diags, diags...)
			if diags.HasErrors() {
				v.Failed++
			} else {
				v.Count++
			}
			continue
		}
		graphs, files, diags := src.Parse(kinds)
		if diags.HasErrors() && graph.IsModuleFile(src.Src, src.Name) {
			// A module a pipeline calls (source = "./NAME.hcl"), not a
			// pipeline: checked on its own, its inputs unknown.
			var g *graph.Graph
			g, files, diags = src.ParseModule(kinds)
			graphs = []*graph.Graph{g}
		}
		WriteDiags(stderr, getenv, files, diags)
		v.Diags = append(v.Diags, diags...)
		if diags.HasErrors() {
			v.Failed++
			continue
		}
		v.Count += len(graphs)
	}
	return v
}

// Format rewrites pipeline files in canonical HCL style: paths are files
// or directories (every *.hcl under them, recursively, skipping hidden
// directories and node_modules), none meaning the current directory, as
// terraform fmt -recursive does. Each file that changes (with check: would
// change, and stays as it is) is listed on stdout; problems go to stderr,
// and a file that does not parse is left as it is and makes the exit
// code ExitUsage once the others are done. It returns the exit code: with
// check, ExitFailed when any file needs formatting.
func Format(stdout, stderr io.Writer, getenv func(string) string, paths []string, check bool) int {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var targets []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			printFailure(stderr, errcode.ConfigInvalid, "%v", err)
			return ExitUsage
		}
		if !info.IsDir() {
			targets = append(targets, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != p && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".hcl") && d.Type().IsRegular() {
				targets = append(targets, path)
			}
			return nil
		})
		if err != nil {
			printFailure(stderr, errcode.ConfigInvalid, "%v", err)
			return ExitUsage
		}
	}
	code := ExitOK
	unformatted := 0
	for _, p := range targets {
		src, err := atomicfs.ReadRegular(p, 0)
		if err != nil {
			printFailure(stderr, errcode.ConfigInvalid, "%v", err)
			return ExitUsage
		}
		// Refuse to format a file that does not parse: hclwrite would
		// otherwise produce something that looks fine and means nothing.
		if _, diags := diag.ParseConfig(src, p, hcl.InitialPos); diags.HasErrors() {
			WriteDiags(stderr, getenv, map[string]*hcl.File{p: {Bytes: src}}, diags)
			printFailure(stderr, errcode.ConfigInvalid, "%s does not parse (%s); fix %s, then format it", p, canon.Count(errorCount(diags), "error"), itThem(errorCount(diags)))
			code = ExitUsage
			continue
		}
		out := hclwrite.Format(src)
		if bytes.Equal(out, src) {
			continue
		}
		unformatted++
		if check {
			fmt.Fprintln(stdout, p)
			continue
		}
		mode := os.FileMode(0o644)
		if info, err := os.Stat(p); err == nil {
			mode = info.Mode().Perm()
		}
		// Replaced via a temp sibling and rename: an interrupted fmt never
		// leaves a half-written file.
		if err := atomicfs.WriteFileAll(p, out, mode); err != nil {
			fmt.Fprintf(stderr, "piship: fmt: %v\n", err)
			return ExitFailed
		}
		fmt.Fprintln(stdout, p)
	}
	if code != ExitOK {
		printFailure(stderr, errcode.ConfigInvalid, "fix the files that do not parse and run piship fmt again")
		return code
	}
	if check && unformatted > 0 {
		fmt.Fprintf(stderr, "piship: %s %s formatting: run `piship fmt`\n", canon.Count(unformatted, "file"), canon.Verb(unformatted, "needs", "need"))
		return ExitFailed
	}
	return ExitOK
}
