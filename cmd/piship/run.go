package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/pipelines"
)

func cmdRun(e *env, args []string) int {
	fs := newFlags(e, "run")
	var inputs multiFlag
	fs.Var(&inputs, "input", "set an input: --input name=value (repeatable)")
	parallelism := fs.Int("parallelism", 0, "stages that may run at once (default: number of CPUs)")
	dryRun := fs.Bool("dry-run", false, "print the start order and cache verdicts; run nothing")
	traceFile := fs.String("trace-file", "", "write the run's spans to this file as OTLP JSON")
	dir := fs.String("pipelines", "", "directory to look up pipeline names in (before ./pipelines and the embedded ones)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship run PIPELINE [--input k=v ...] [--parallelism N] [--dry-run] [--trace-file F]")
	}
	if err := engine.CheckParallelism(*parallelism); err != nil {
		return usageErr(e, "%v", err)
	}
	cfg := e.config(runConfig{parallelism: *parallelism, traceFile: *traceFile})
	p, code := pipelines.Prepare(cfg, pos[0], *dir, inputs)
	if p == nil {
		return code
	}
	if *dryRun {
		return dryRunPlan(e, cfg, p)
	}
	o := p.Run(e.ctx, cfg)
	if !o.OK() {
		return o.Code
	}
	printSummary(e, o.Result)
	return o.Code
}

// runConfig holds the run options of `run` and the commands that run a
// built-in pipeline (`build`).
type runConfig struct {
	parallelism int
	traceFile   string
}

func dryRunPlan(e *env, cfg pipelines.Config, p *pipelines.Prepared) int {
	steps, err := p.Plan(cfg)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	g := p.Graph
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline %s: %d stages (dry run, nothing runs)\n", g.Name, len(steps))
	for i, s := range steps {
		line := fmt.Sprintf("%3d  %-32s cache: %s", i+1, s.Stage.Label(), s.Cache)
		if s.Key != "" {
			line += " (" + s.Key[:12] + ")"
		}
		if s.Note != "" {
			line += " - " + s.Note
		}
		if s.Stage.Always {
			line += " [always]"
		}
		b.WriteString(line + "\n")
	}
	if len(g.Verdicts) > 0 {
		names := make([]string, len(g.Verdicts))
		for i, v := range g.Verdicts {
			names[i] = v.Name
		}
		fmt.Fprintf(&b, "verdicts: %s\n", strings.Join(names, ", "))
	}
	writeAll(e.stdout, b.String())
	return exitOK
}

// printSummary prints one line: what ran, what the cache served, what was
// skipped.
func printSummary(e *env, res *engine.Result) {
	var ran, cached, skipped int
	for _, r := range res.Stages {
		switch {
		case r.Status == engine.Skipped || r.Status == engine.NotStarted:
			skipped++
		case r.CacheHit:
			cached++
		default:
			ran++
		}
	}
	parts := []string{strconv.Itoa(ran) + " ran", strconv.Itoa(cached) + " cached"}
	if skipped > 0 {
		parts = append(parts, strconv.Itoa(skipped)+" skipped")
	}
	fmt.Fprintf(e.stderr, "%s: ok (%d stages: %s)\n", res.Pipeline, len(res.Stages), strings.Join(parts, ", "))
}

// printDiags prints HCL diagnostics to stderr (see pipelines.WriteDiags).
func printDiags(e *env, files map[string]*hcl.File, diags hcl.Diagnostics) {
	pipelines.WriteDiags(e.stderr, e.getenv, files, diags)
}

// loadOne finds and loads the pipeline arg (dir: --pipelines); nil when it
// cannot, the problem printed.
func loadOne(e *env, arg, dir string) *graph.Graph {
	src, err := pipelines.Find(arg, dir)
	if err != nil {
		usageErr(e, "%v", err)
		return nil
	}
	g, _ := pipelines.LoadOne(e.stderr, e.getenv, src)
	return g
}

// writeAll is io.WriteString that ignores a closed stdout.
func writeAll(w io.Writer, s string) { pipelines.WriteAll(w, s) }

func humanBytes(n int64) string { return pipelines.HumanBytes(n) }
