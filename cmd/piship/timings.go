package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing"
)

func timingsCmd(e *cli.Env) *cobra.Command {
	var o timingsOpts
	c := &cobra.Command{
		Use:     "timings TRACE",
		GroupID: cli.GroupPipeline,
		Short:   "write the timings report (HTML) of a run from its --trace-file",
		Long: `Reads TRACE, the OTLP JSON file a run wrote with --trace-file, and writes the run's timings
report to OUT: one self-contained HTML page (no external assets) with the stages on a time
axis, the critical path, cache hits and failures marked, and the timing lines that
PISHIP_DEBUG_TIMING=1 prints. It is the page --timings FILE writes at the end of a run.

The critical path follows the pipeline's dependency edges, which the trace does not hold:
they are read from the pipeline file the trace records (piship.pipeline.file: the file
that ran, or the built-in pipeline); --pipeline names another file, for instance when the
file has moved. A trace of an older piship names only the pipeline, which is then looked up
as piship run does (--pipelines DIR, then ./pipelines, then the built-in ones).`,
		Example: `  piship release ./hello --trace-file run.json && piship timings run.json -o timings.html
  piship timings run.json -o timings.html --pipeline ./ci/check.hcl`,
		Args: cli.ExactArgs("TRACE"),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runTimings(e, args[0], o))
		},
	}
	c.Flags().StringVarP(&o.out, "out", "o", "", "write the HTML page to `FILE` (required)")
	c.Flags().StringVar(&o.pipeline, "pipeline", "", "the `PIPELINE` (file or name) that ran, for its dependency edges (default: the file the trace records)")
	c.Flags().StringVar(&o.dir, "pipelines", "", "`DIR` to look up pipeline names in (before ./pipelines and the built-in ones): --pipeline NAME, or a trace that records no file")
	return c
}

// timingsOpts are timings' flags.
type timingsOpts struct {
	out, pipeline, dir string
}

func runTimings(e *cli.Env, path string, o timingsOpts) int {
	if o.out == "" {
		return cli.UsageErr(e, errcode.UsageInvalid, "piship timings needs -o FILE.html, the page to write")
	}
	f, err := atomicfs.OpenRegular(path)
	if err != nil {
		return cli.UsageErr(e, errcode.ConfigInvalid, "%s: cannot read the trace file: %v", path, err)
	}
	spans, err := tracing.ReadOTLPJSON(f)
	f.Close()
	if err != nil {
		return cli.UsageErr(e, errcode.ConfigInvalid, "%s: %v; pass the file a run wrote with --trace-file", path, err)
	}
	name, root, err := tracing.PipelineRoot(spans)
	if errors.Is(err, tracing.ErrNoPipeline) {
		return cli.UsageErr(e, errcode.ConfigInvalid, "%s: %v; a piship-launch trace (PISHIP_TRACE_FILE) has phases, not stages: read it with PISHIP_DEBUG_TIMING=1", path, err)
	}
	deps, code := timingsDeps(e, path, name, tracing.PipelineFileOf(root), spans, o)
	if code != cli.ExitOK {
		return code
	}
	if err := pipelines.WriteTimingsFile(o.out, spans, deps); err != nil {
		return cli.Fail(e, err)
	}
	fmt.Fprintf(e.Stdout, "wrote %s: timings of pipeline %s\n", o.out, name)
	return cli.ExitOK
}

// timingsDeps are the dependency edges of the pipeline that wrote the
// trace: --pipeline when given, else the file the trace records
// (piship.pipeline.file), else (a trace without it) the name looked up as
// piship run does. An explicit --pipeline must be found and match the trace;
// the default may cli.Fail, and the page then says the critical path is
// unknown rather than guess it (nil deps).
func timingsDeps(e *cli.Env, path, name, file string, spans []sdktrace.ReadOnlySpan, o timingsOpts) (map[string][]string, int) {
	var src *pipelines.Source
	var err error
	switch {
	case o.pipeline != "":
		src, err = pipelines.Find(o.pipeline, o.dir)
	case file != "":
		src, err = pipelines.FindFile(file)
	default:
		src, err = pipelines.Find(name, o.dir)
	}
	if err != nil {
		if o.pipeline != "" {
			return nil, cli.UsageErrOf(e, err)
		}
		fmt.Fprintf(e.Stderr, "piship: warning: the critical path is not marked: %v\n", err)
		return nil, cli.ExitOK
	}
	g, ok := pipelines.LoadOne(e.Stderr, e.Getenv, e.Program.Kinds(), src)
	if !ok {
		return nil, cli.ExitUsage // LoadOne named the CONFIG_INVALID problem
	}
	if g.Name != name {
		return nil, cli.UsageErr(e, errcode.ConfigInvalid, "%s: the trace is of pipeline %s, but %s holds pipeline %s; pass --pipeline the file that ran",
			path, name, src.Name, g.Name)
	}
	deps, unknown := g.DepNamesOf(tracing.StageNames(spans))
	if len(unknown) > 0 {
		return nil, cli.UsageErr(e, errcode.ConfigInvalid, "%s: %s has no stage %s that the trace ran (it changed since, or is another file); pass --pipeline the file that ran",
			path, src.Name, strings.Join(unknown, ", "))
	}
	return deps, cli.ExitOK
}
