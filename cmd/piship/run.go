package main

import (
	"fmt"
	"strconv"
	"strings"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/pipelines"
)

func runCmd(e *cli.Env) *cobra.Command {
	var o runOpts
	c := &cobra.Command{
		Use:     "run PIPELINE",
		GroupID: cli.GroupPipeline,
		Short:   "run a pipeline",
		Long: `Runs PIPELINE: a path to an .hcl file holding one pipeline, or a name looked up as NAME.hcl
in --pipelines DIR, then ./pipelines, then the pipelines built into piship (--builtin takes
the built-in one at once); the first line names the file that runs. Stages start
in declaration order as their inputs are ready; on a failure the last line on stderr names
the first failing stage in verdict order. --dry-run prints the start order and the cache
verdicts and runs nothing. --plan prints what each stage would do (cached, runs, skipped,
not cacheable, or decided after the stages whose outputs it waits on), wave by wave, and
runs nothing; with --json as a piship-plan/v1 document.`,
		Example: `  piship run demo --input source=$PWD
  piship run pipelines/check.hcl --input source=. --parallelism 4 --trace-file run.json
  piship run check --dry-run
  piship run check --plan --json`,
		Args:              cli.ExactArgs("PIPELINE"),
		ValidArgsFunction: pipelineNames,
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runPipeline(e, args[0], o))
		},
	}
	c.Flags().StringArrayVar(&o.inputs, "input", nil, "set an input, `NAME=VALUE` (repeatable)")
	c.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the start order and cache verdicts; run nothing")
	planFlag(c.Flags(), &o.plan)
	c.Flags().BoolVar(&o.asJSON, "json", false, "with --plan: print the plan as one JSON document of schema piship-plan/v1 on stdout (docs/json.md)")
	c.Flags().StringVar(&o.dir, "pipelines", "", "`DIR` to look up pipeline names in (before ./pipelines and the built-in ones)")
	builtinFlag(c, &o.builtin, "./pipelines has PIPELINE.hcl (excludes --pipelines)")
	cli.RunFlags(c.Flags(), &o.rc)
	remoteFlags(c.Flags(), &o.remote)
	return c
}

// runOpts are run's flags.
type runOpts struct {
	inputs []string
	dryRun bool
	plan   bool
	asJSON bool
	dir    string
	rc     cli.RunConfig
	remote remoteOpts

	// builtin is --builtin: the built-in pipeline of that name.
	builtin bool
}

func runPipeline(e *cli.Env, name string, o runOpts) int {
	if err := engine.CheckParallelism(o.rc.Parallelism); err != nil {
		return cli.Fail(e, err)
	}
	if o.builtin && o.dir != "" {
		return cli.UsageErr(e, cli.CodeUsage, "--builtin and --pipelines exclude each other: --builtin runs the pipeline built into piship, --pipelines DIR looks in DIR first")
	}
	if o.asJSON && !o.plan {
		return cli.UsageErr(e, cli.CodeUsage, "--json prints the plan: give --plan with it (a run prints its progress on stderr, --progress json as JSON)")
	}
	if o.plan && o.dryRun {
		return cli.UsageErr(e, cli.CodeUsage, "--plan and --dry-run are two views of a run that does not happen: give one")
	}
	cfg, code, ok := devConfig(e, o.rc, o.remote)
	if !ok {
		return code
	}
	p, err := pipelines.Prepare(cfg, name, o.dir, o.builtin, o.inputs)
	code = pipelines.ExitCode(err)
	if p == nil {
		if o.plan {
			return printPlan(e, nil, err, o.asJSON)
		}
		return code
	}
	if o.plan {
		rp, err := p.PlanRun(cfg)
		return printPlan(e, rp, err, o.asJSON)
	}
	if o.dryRun {
		return dryRunPlan(e, cfg, p)
	}
	out := p.Run(e.Ctx, cfg)
	if !out.OK() {
		return out.Code
	}
	printSummary(e, out.Result)
	return out.Code
}

func dryRunPlan(e *cli.Env, cfg pipelines.Config, p *pipelines.Prepared) int {
	steps, err := p.Plan(cfg)
	if err != nil {
		return cli.UsageErrOf(e, err)
	}
	g := p.Graph
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline %s: %s (dry run, nothing runs)\n", g.Name, canon.Count(len(steps), "stage"))
	for i, s := range steps {
		line := fmt.Sprintf("%3d  %-32s cache: %s", i+1, s.Stage.Title(), s.Cache)
		if s.Key != "" {
			line += " (" + s.Key[:12] + ")"
		}
		if s.Note != "" {
			line += " - " + s.Note
		}
		if s.Reason != "" {
			line += " - cache miss: " + s.Reason
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
	pipelines.WriteAll(e.Stdout, b.String())
	return cli.ExitOK
}

// printSummary prints one line: what ran, what the cache served, what was
// skipped.
func printSummary(e *cli.Env, res *engine.Result) {
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
	fmt.Fprintf(e.Stderr, "%s: ok (%s: %s)\n", res.Pipeline, canon.Count(len(res.Stages), "stage"), strings.Join(parts, ", "))
}

// printDiags prints HCL diagnostics to stderr (see pipelines.WriteDiags).
func printDiags(e *cli.Env, files map[string]*hcl.File, diags hcl.Diagnostics) {
	pipelines.WriteDiags(e.Stderr, e.Getenv, files, diags)
}

// loadOne finds and loads the pipeline arg (dir: --pipelines); nil when it
// cannot, the problem printed.
func loadOne(e *cli.Env, arg, dir string) *graph.Graph {
	src, err := pipelines.Find(arg, dir)
	if err != nil {
		cli.UsageErrOf(e, err)
		return nil
	}
	g, _ := pipelines.LoadOne(e.Stderr, e.Getenv, e.Program.Kinds(), src)
	return g
}

// cli.WriteAll is io.WriteString that ignores a closed stdout.
