package pipelines

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage/errcode"
)

// checkDistribution loads the distribution in dir before a command runs
// a pipeline on it (build, release), so a distribution.hcl with errors is
// reported as validate reports it (every diagnostic, with its snippet) and
// is a configuration error (ExitUsage), not a failed stage: a *Reported
// error, the diagnostics printed, when it has errors.
func checkDistribution(c Config, command, dir string) error {
	dir = shown(dir)
	_, diags := distribution.Load(dir)
	if !diags.HasErrors() {
		return nil
	}
	WriteDiags(c.Stderr, c.Getenv, nil, diags)
	n := errorCount(diags)
	return c.usage(errcode.ConfigInvalid, "the distribution in %s has %s; fix %s and run `piship %s` again",
		dir, canon.Count(n, "error"), itThem(n), command)
}

// shown is dir relative to the working directory when it is below it (the
// way the user most likely wrote it, and validate prints it), else as is.
func shown(dir string) string {
	cwd, err := os.Getwd()
	if err != nil || !filepath.IsAbs(dir) {
		return dir
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return dir
	}
	return rel
}

// errorCount is how many of diags are errors.
func errorCount(diags hcl.Diagnostics) int {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			n++
		}
	}
	return n
}

func itThem(n int) string { return canon.Noun(n, "it", "them") }
