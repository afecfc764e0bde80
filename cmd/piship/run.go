package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// extraSpanProcessors lets tests watch the spans of a run with an
// independent recorder (tracetest.SpanRecorder).
var extraSpanProcessors []sdktrace.SpanProcessor

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
	if *parallelism < 0 {
		return usageErr(e, "--parallelism must be at least 1")
	}
	src, err := findPipeline(pos[0], *dir)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	g, ok := loadOne(e, src)
	if !ok {
		return exitUsage
	}
	values, err := parseInputs(g, inputs)
	if err != nil {
		return usageErr(e, "%v", err)
	}

	rc := runConfig{parallelism: *parallelism, traceFile: *traceFile}
	if *dryRun {
		return dryRunPlan(e, g, rc.options(e, g, values))
	}
	res, _, code := executeGraph(e, g, values, rc)
	if res == nil || res.Err() != nil {
		return code
	}
	printSummary(e, res)
	return code
}

// runConfig holds the run options shared by `run` and the commands that
// run a built-in pipeline (`build`).
type runConfig struct {
	parallelism int
	traceFile   string
}

func (rc runConfig) options(e *env, g *graph.Graph, values map[string]cty.Value) engine.Options {
	opts := engine.Options{Parallelism: rc.parallelism, Inputs: values, Getenv: e.getenv}
	if home, err := cache.Home(e.getenv); err != nil {
		fmt.Fprintf(e.stderr, "piship: action cache off: %v\n", err)
	} else {
		opts.Cache = cache.OpenActions(home)
	}
	if hasCacheable(g) {
		opts.ToolDigest = cache.ToolDigest()
	}
	return opts
}

// executeGraph runs g with progress output, spans, the optional trace file
// and the timing summary. It returns the result (nil when the run could not
// start), the run span's duration, and the exit code; on failure it has
// already printed the failing verdict as the last line on stderr.
func executeGraph(e *env, g *graph.Graph, values map[string]cty.Value, rc runConfig) (*engine.Result, time.Duration, int) {
	o := execute(e, g, values, rc)
	return o.res, o.total, o.code
}

// outcome is a finished run: the result (nil when it could not start), the
// run span's duration, the exit code and the recorded spans.
type outcome struct {
	res   *engine.Result
	total time.Duration
	code  int
	spans []sdktrace.ReadOnlySpan
}

func execute(e *env, g *graph.Graph, values map[string]cty.Value, rc runConfig) outcome {
	opts := rc.options(e, g, values)
	prov, ctx, err := tracing.Setup(e.ctx, tracing.Options{ServiceName: "piship", Getenv: e.getenv, SpanProcessors: extraSpanProcessors})
	if err != nil {
		return outcome{code: usageErr(e, "CONFIG_INVALID: %v", err)}
	}
	opts.Tracer = prov.Tracer()
	progress := engine.NewProgress(e.stderr, liveProgress(e), e.getenv("NO_COLOR") == "" && liveProgress(e))
	opts.Events = progress.Event
	opts.Log = progress.Log()

	ctx, root := opts.Tracer.Start(ctx, tracing.PipelineSpanName(g.Name),
		trace.WithAttributes(attribute.String(tracing.AttrPipeline, g.Name)))
	res, err := engine.Run(ctx, g, opts)
	progress.Close()
	if err != nil {
		root.SetStatus(codes.Error, err.Error())
		root.End()
		_ = prov.Shutdown(context.WithoutCancel(e.ctx))
		return outcome{code: usageErr(e, "%v", err)}
	}
	runErr := res.Err()
	if runErr != nil {
		root.SetStatus(codes.Error, runErr.Error())
	}
	root.End()

	code := exitOK
	spans := prov.Recorder().Ended()
	var total time.Duration
	for _, sp := range spans {
		if sp.Name() == tracing.PipelineSpanName(g.Name) {
			total = sp.EndTime().Sub(sp.StartTime())
		}
	}
	if rc.traceFile != "" {
		if err := writeTraceFile(rc.traceFile, spans); err != nil {
			fmt.Fprintf(e.stderr, "piship: --trace-file: %v\n", err)
			code = exitFailed
		}
	}
	if e.getenv("PISHIP_DEBUG_TIMING") == "1" {
		_ = tracing.Summarize(spans, g.Name, g.DepNames()).Write(e.stderr)
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 10*time.Second)
	defer cancel()
	if err := prov.Shutdown(flushCtx); err != nil {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
	}
	if runErr != nil {
		// The failing verdict is the last line on stderr.
		fmt.Fprintln(e.stderr, runErr)
		return outcome{res, total, exitFailed, spans}
	}
	return outcome{res, total, code, spans}
}

// liveProgress decides between the live view and plain lines:
// PISHIP_PROGRESS=1 or 0 forces either, otherwise a terminal gets the view.
func liveProgress(e *env) bool {
	switch e.getenv("PISHIP_PROGRESS") {
	case "1":
		return true
	case "0":
		return false
	}
	f, ok := e.stderr.(*os.File)
	return ok && isTerminal(f)
}

func parseInputs(g *graph.Graph, raw []string) (map[string]cty.Value, error) {
	values := map[string]cty.Value{}
	for _, kv := range raw {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("CONFIG_INVALID: --input %q: write name=value", kv)
		}
		val, err := g.ParseInput(k, v)
		if err != nil {
			return nil, fmt.Errorf("CONFIG_INVALID: %v", err)
		}
		values[k] = val
	}
	return values, nil
}

func hasCacheable(g *graph.Graph) bool {
	for _, s := range g.Stages {
		if _, ok := s.Kind.(stage.Cacheable); ok {
			return true
		}
	}
	return false
}

func dryRunPlan(e *env, g *graph.Graph, opts engine.Options) int {
	steps, err := engine.Plan(g, opts)
	if err != nil {
		return usageErr(e, "%v", err)
	}
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

func writeTraceFile(path string, spans []sdktrace.ReadOnlySpan) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".trace-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := tracing.WriteOTLPJSON(f, spans); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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
