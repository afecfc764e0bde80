package pipelines

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/distribution"
)

// Validate parses every source (a distribution.hcl as a distribution, the
// rest as pipeline files), printing the diagnostics to stderr. It returns
// how many pipelines and distributions are valid and how many files have
// errors.
func Validate(stderr io.Writer, getenv func(string) string, srcs []*Source) (count, failed int) {
	for _, src := range srcs {
		if filepath.Base(src.Name) == distribution.FileName {
			// A distribution manifest, not a pipeline file.
			_, diags := distribution.Parse(src.Src, src.Name, src.Dir)
			WriteDiags(stderr, getenv, map[string]*hcl.File{src.Name: {Bytes: src.Src}}, diags)
			if diags.HasErrors() {
				failed++
			} else {
				count++
			}
			continue
		}
		graphs, files, diags := src.Parse()
		WriteDiags(stderr, getenv, files, diags)
		if diags.HasErrors() {
			failed++
			continue
		}
		count += len(graphs)
	}
	return count, failed
}

// Format rewrites pipeline files in canonical HCL style: paths are files
// or directories (their *.hcl), none meaning ./pipelines/*.hcl. Each file
// that changes (with check: would change, and stays as it is) is listed on
// stdout; problems go to stderr. It returns the exit code: with check,
// ExitFailed when any file needs formatting.
func Format(stdout, stderr io.Writer, getenv func(string) string, paths []string, check bool) int {
	if len(paths) == 0 {
		paths, _ = filepath.Glob(filepath.Join("pipelines", "*.hcl"))
	}
	var targets []string
	for _, p := range paths {
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
			fmt.Fprintf(stderr, "piship: CONFIG_INVALID: %v\n", err)
			return ExitUsage
		}
		// Refuse to format a file that does not parse: hclwrite would
		// otherwise produce something that looks fine and means nothing.
		if _, diags := diag.ParseConfig(src, p, hcl.InitialPos); diags.HasErrors() {
			WriteDiags(stderr, getenv, map[string]*hcl.File{p: {Bytes: src}}, diags)
			fmt.Fprintf(stderr, "piship: CONFIG_INVALID: %s does not parse (%s); fix %s, then format it\n", p, plural(errorCount(diags), "error"), itThem(errorCount(diags)))
			return ExitUsage
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
	if check && unformatted > 0 {
		fmt.Fprintf(stderr, "piship: %d files need formatting: run `piship fmt`\n", unformatted)
		return ExitFailed
	}
	return ExitOK
}
