package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/engine"
	"piship.dev/piship/pipelines"
)

// --plan on run, build and release: what each stage would do, printed
// without running anything (engine.PlanRun; docs/pipelines.md, "The plan").

// planFlag adds --plan to a command that runs a pipeline.
func planFlag(fs *pflag.FlagSet, plan *bool) {
	fs.BoolVar(plan, "plan", false, "print what each stage would do (cached, runs, skipped, not cacheable, decided after a stage), what can run at once and what it writes; run nothing (with --json: a piship-plan/v1 document)")
}

// printPlan prints rp (or the failure err, already printed on stderr): the
// text on stdout, or with --json the piship-plan/v1 document.
func printPlan(e *cli.Env, rp *engine.RunPlan, err error, asJSON bool) int {
	if err != nil {
		code := pipelines.ExitCode(err)
		if asJSON && e.JSONLog != nil {
			// The error document of the plan's schema, not the command's.
			cli.PrintJSON(e, cli.ErrorDoc{Schema: cli.Schema("plan"), Error: e.JSONLog.Error(code, "the plan could not be made")})
		}
		return code
	}
	if asJSON {
		cli.PrintJSON(e, PlanJSON(rp))
		return cli.ExitOK
	}
	pipelines.WriteAll(e.Stdout, planText(rp))
	return cli.ExitOK
}

// planText is the plan for people: the stages wave by wave, one line each.
func planText(rp *engine.RunPlan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan of pipeline %s (%s): %s in %s; nothing runs\n", rp.Pipeline, rp.File,
		canon.Count(len(rp.Stages), "stage"), canon.Count(rp.Waves, "wave"))
	counts := map[engine.Action]int{}
	for w := 1; w <= rp.Waves; w++ {
		fmt.Fprintf(&b, "wave %d\n", w)
		for _, sp := range rp.Stages {
			if sp.Wave != w {
				continue
			}
			counts[sp.Action]++
			line := fmt.Sprintf("  %-32s %s", sp.Stage.Title(), actionWords(sp))
			if len(sp.Writes) > 0 {
				line += "; writes " + strings.Join(shownPaths(rp.Dir, sp.Writes), ", ")
			}
			if len(sp.Needs) > 0 {
				line += "; needs " + strings.Join(sp.Needs, ", ")
			}
			b.WriteString(line + "\n")
		}
	}
	var parts []string
	for _, a := range []engine.Action{engine.ActionCached, engine.ActionRuns, engine.ActionNotCacheable, engine.ActionSkipped, engine.ActionDecidedAfter, engine.ActionFails} {
		if n := counts[a]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, actionCount(a, n)))
		}
	}
	fmt.Fprintf(&b, "%s; the stages of one wave need none of each other and can run at once (up to --parallelism)\n", strings.Join(parts, ", "))
	return b.String()
}

// actionWords says what one stage would do: the action and its detail.
func actionWords(sp *engine.StagePlan) string {
	switch sp.Action {
	case engine.ActionCached:
		return "cached, key " + short(sp.Key)
	case engine.ActionRuns:
		if sp.Key == "" {
			return "runs: " + sp.Reason
		}
		s := "runs, key " + short(sp.Key)
		if sp.Reason != "" {
			s += ", cache miss: " + sp.Reason
		}
		return s
	case engine.ActionSkipped, engine.ActionFails:
		return string(sp.Action) + ": " + sp.Reason
	case engine.ActionDecidedAfter:
		return "decided after " + canon.Noun(len(sp.After), "stage") + " " + strings.Join(sp.After, ", ") + ": " + sp.Reason
	}
	return string(sp.Action)
}

// actionCount words n stages of action a in the summary line.
func actionCount(a engine.Action, n int) string {
	switch a {
	case engine.ActionRuns:
		return canon.Verb(n, "runs", "run")
	case engine.ActionFails:
		return canon.Verb(n, "fails", "fail")
	case engine.ActionDecidedAfter:
		return "decided after other stages"
	}
	return string(a)
}

// short is a cache key as the dry run shows it: its first 12 digits.
func short(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

// shownPaths are paths relative to the pipeline's directory when below
// it, as the file writes them.
func shownPaths(dir string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p
		if rel, err := filepath.Rel(dir, p); err == nil && filepath.IsLocal(rel) {
			out[i] = filepath.ToSlash(rel)
		}
	}
	return out
}
