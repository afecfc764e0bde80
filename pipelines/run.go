package pipelines

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing"
)

// Exit codes a run ends with; piship exits with them.
const (
	ExitOK     = 0
	ExitFailed = 1 // a pipeline (or a check) failed
	ExitUsage  = 2 // usage or configuration error
)

// Config is how a pipeline runs and what it sees of the process.
type Config struct {
	// Stderr gets the progress, diagnostics and the failing verdict.
	Stderr io.Writer
	// Getenv is the run's environment (never nil).
	Getenv func(string) string
	// Parallelism is how many stages may run at once (0: number of CPUs).
	Parallelism int
	// TraceFile, when set, receives the run's spans as OTLP JSON.
	TraceFile string
	// Timings, when set, receives the run's timings report: one
	// self-contained HTML page (tracing.WriteTimingsHTML).
	Timings string
	// SelfBinary is the piship binary a release for this platform ships
	// (piship-launch from beside it too); empty ships none. main sets it
	// from os.Executable; the CLI run in-process by tests leaves it empty.
	SelfBinary string
	// SpanProcessors also receive the run's spans (tests attach a
	// tracetest.SpanRecorder).
	SpanProcessors []sdktrace.SpanProcessor
	// ServiceVersion is the service.version of the run's spans (piship's
	// version and commit); empty leaves it out.
	ServiceVersion string
	// Progress is --progress, one of ProgressModes (anything else is
	// auto); empty when the flag was not given: PISHIP_PROGRESS decides,
	// then whether stderr is a terminal.
	Progress string
	// RecordEveryRun records every run for piship explain, also one in
	// which no stage looked up a cache (engine.Options.RecordEveryRun):
	// the developer commands run, build and release set it.
	RecordEveryRun bool
	// ShowFile prints the file a run runs, first on stderr: "release:
	// embedded:pipelines/release.hcl" or the path (engine.PipelineFile,
	// as the root span records it), so which of the built-in and a
	// project's own pipeline ran is never a guess. The developer commands
	// run, build and release set it; the consumer commands print nothing
	// of it.
	ShowFile bool
	// ResultOnly is a consumer command's default (install, update,
	// rollback, doctor): with Progress empty, no stage progress is printed
	// and the stages leave out their lines about what they are doing
	// (engine.Options.QuietProgress), since the command prints its own
	// short result; warnings, diagnostics and the failing verdict still
	// print.
	// --progress (Progress set) shows the progress as for any pipeline.
	ResultOnly bool
	// Kinds resolves the pipelines' stage blocks: stages.Default() for
	// piship, consumer.Registry() for the end-user installer, which links
	// no build kind.
	Kinds *stage.Registry
	// Exporter makes the exporter the OTEL_EXPORTER_OTLP_* variables ask
	// for: tracing/otlp's for piship (http/protobuf, grpc, http/json),
	// tracing.JSONExporter for the installer (http/json, no gRPC linked).
	Exporter tracing.ExporterFunc
	// Remote is the run's remote cache (--remote-cache): the action and
	// runtime caches read through it on a local miss and, when it writes,
	// push new entries in the background; Execute waits for those pushes
	// at the end, at most RemoteWait, and prints how many it pushed. The
	// command builds it (cmd/piship links the OCI client, pipelines does
	// not).
	Remote     *cache.RemoteSession
	RemoteWait time.Duration
}

// resultOnly reports whether a run prints no progress (ResultOnly without
// --progress).
func (c Config) resultOnly() bool { return c.ResultOnly && c.Progress == "" }

// stageEnv is the environment the stages see: the run's, with the shipped
// binary under release.SelfBinaryEnv (never the process's variable).
func (c Config) stageEnv(k string) string {
	if k == release.SelfBinaryEnv {
		return c.SelfBinary
	}
	return c.Getenv(k)
}

// usage prints a usage or configuration error and returns it, reported
// (ExitUsage).
func (c Config) usage(code, format string, a ...any) *Reported {
	err := errcode.Newf(code, format, a...)
	fmt.Fprintf(c.Stderr, "piship: %v\n", err)
	return &Reported{Exit: ExitUsage, Err: err}
}

// printFailure prints a coded failure line, "piship: CODE: message", as
// every command prints one.
func printFailure(w io.Writer, code, format string, a ...any) {
	fmt.Fprintf(w, "piship: %v\n", errcode.Newf(code, format, a...))
}

// usageOf is usage for an error that carries its code.
func (c Config) usageOf(err error) *Reported {
	fmt.Fprintf(c.Stderr, "piship: %v\n", err)
	return &Reported{Exit: ExitUsage, Err: err}
}

// Options are the engine options of a run of g: the action cache (a
// notice on stderr when it is off), the tool digest when anything is
// cacheable, the stages' environment.
func (c Config) Options(g *graph.Graph, values map[string]cty.Value) engine.Options {
	opts := engine.Options{Parallelism: c.Parallelism, Inputs: values, Getenv: c.stageEnv, RecordEveryRun: c.RecordEveryRun, QuietProgress: c.resultOnly()}
	if home, err := cache.Home(c.Getenv); err != nil {
		fmt.Fprintf(c.Stderr, "piship: action cache off: %v\n", err)
	} else {
		opts.Cache = cache.OpenActions(home)
	}
	if hasCacheable(g) {
		opts.ToolDigest = cache.ToolDigest()
	}
	return opts
}

// Outcome is a finished run: the result (nil when it could not start), the
// run span's duration, the exit code and the recorded spans.
type Outcome struct {
	Graph  *graph.Graph
	Result *engine.Result
	Total  time.Duration
	Code   int
	Spans  []sdktrace.ReadOnlySpan
}

// depNames maps each stage and instance of the run to those it waited
// for (the timing summary's critical path): from the instances that have
// spans, as piship timings reads them from a trace file, so both make the
// same page.
func (o Outcome) depNames() map[string][]string {
	deps, _ := o.Graph.DepNamesOf(tracing.StageNames(o.Spans))
	return deps
}

// OK reports whether the run finished without a failing verdict.
func (o Outcome) OK() bool { return o.Result != nil && o.Result.Err() == nil }

// Err is the outcome as an error: nil for ExitOK, else a *Reported (the
// failure is printed) that carries the run's failing verdict when it has
// one.
func (o Outcome) Err() error {
	if o.Code == ExitOK {
		return nil
	}
	var err error
	if o.Result != nil {
		err = o.Result.Err()
	}
	return &Reported{Exit: o.Code, Err: err}
}

// Execute runs g with progress output, spans, the optional trace file and
// the timing summary (PISHIP_DEBUG_TIMING=1). On failure it has already
// printed the failing verdict as the last line on stderr.
func Execute(parent context.Context, g *graph.Graph, values map[string]cty.Value, c Config) Outcome {
	if c.ShowFile {
		fmt.Fprintf(c.Stderr, "%s: %s\n", g.Name, engine.PipelineFile(g))
	}
	opts := c.Options(g, values)
	// The export warning can come while the live view is on screen (the
	// SDK's batch export fails mid-run): it goes through the progress log
	// then, so the view redraws below it instead of leaving a stale copy.
	warn := &switchWriter{w: c.Stderr}
	prov, ctx, err := tracing.Setup(parent, tracing.Options{Exporter: c.Exporter, ServiceName: "piship", ServiceVersion: c.ServiceVersion, Getenv: c.Getenv, SpanProcessors: c.SpanProcessors, Warn: warn})
	if err != nil {
		return Outcome{Graph: g, Code: c.usage(errcode.ConfigInvalid, "%v", err).Exit}
	}
	opts.Tracer = prov.Tracer()
	progress := c.newProgress(g)
	if progress != nil {
		opts.Events = progress.Event
		opts.Log = progress.Log()
	} else {
		// No progress: the stages' messages (whole lines, from several
		// goroutines) go to stderr one at a time.
		opts.Log = &switchWriter{w: c.Stderr}
	}
	warn.set(opts.Log)
	if c.Remote != nil {
		c.Remote.SetLog(warn) // the registry's one warning, through the progress view
	}

	ctx, root := opts.Tracer.Start(ctx, tracing.PipelineSpanName(g.Name),
		trace.WithAttributes(attribute.String(tracing.AttrPipeline, g.Name), attribute.String(tracing.AttrPipelineFile, engine.PipelineFile(g))))
	res, err := engine.Run(cache.WithRemote(ctx, c.Remote), g, opts)
	if progress != nil {
		progress.Close()
	}
	c.waitRemote()
	warn.set(c.Stderr)
	if err != nil {
		root.SetStatus(codes.Error, err.Error())
		root.SetAttributes(attribute.Int(tracing.AttrExitCode, ExitUsage))
		root.End()
		_ = prov.Shutdown(context.WithoutCancel(parent))
		return Outcome{Graph: g, Code: c.usageOf(err).Exit}
	}
	runErr := res.Err()
	code := ExitOK
	if runErr != nil {
		root.SetStatus(codes.Error, runErr.Error())
		code = ExitCode(runErr)
	}
	// The exit code as the run decided it; a --trace-file that cannot be
	// written changes it after the span has ended, and is reported apart.
	root.SetAttributes(append(rootAttrs(g.Name, res), attribute.Int(tracing.AttrExitCode, code))...)
	root.End()

	spans := prov.Recorder().Ended()
	var total time.Duration
	for _, sp := range spans {
		if sp.Name() == tracing.PipelineSpanName(g.Name) {
			total = sp.EndTime().Sub(sp.StartTime())
		}
	}
	if c.TraceFile != "" {
		if err := writeTraceFile(c.TraceFile, spans); err != nil {
			fmt.Fprintf(c.Stderr, "piship: --trace-file: %v\n", err)
			code = ExitFailed
		}
	}
	deps, _ := g.DepNamesOf(tracing.StageNames(spans)) // the critical path's edges, as piship timings reads them
	if c.Timings != "" {
		if err := WriteTimingsFile(c.Timings, spans, deps); err != nil {
			fmt.Fprintf(c.Stderr, "piship: --timings: %v\n", err)
			code = ExitFailed
		}
	}
	if c.Getenv("PISHIP_DEBUG_TIMING") == "1" {
		_ = tracing.Summarize(spans, g.Name, deps).Write(c.Stderr)
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	prov.Warn(prov.Shutdown(flushCtx))
	if runErr != nil {
		// A stage that failed on diagnostics (a distribution.hcl with
		// errors, a smoke test, an expression that failed) gets them
		// printed the way validate prints them; those without a position
		// point at the stage's block. The failing verdict is the last line
		// on stderr.
		if f := res.Failed; f != nil {
			WriteError(c.Stderr, c.Getenv, g.Files, f.Err, diag.Pos(f.Stage.DeclRange))
		}
		fmt.Fprintln(c.Stderr, runErr)
		code = ExitCode(runErr)
	}
	return Outcome{Graph: g, Result: res, Total: total, Code: code, Spans: spans}
}

// ProgressModes are the values of --progress (Config.Progress).
var ProgressModes = []string{"auto", "tty", "plain", "json"}

// progressMode decides the progress form: --progress when given (auto: the
// tty view on a terminal, plain lines otherwise), else PISHIP_PROGRESS=1
// or 0 forces the view or plain lines, else auto.
func (c Config) progressMode() engine.ProgressMode {
	switch c.Progress {
	case "tty":
		return engine.ProgressTTY
	case "plain":
		return engine.ProgressPlain
	case "json":
		return engine.ProgressJSON
	case "":
		switch c.Getenv("PISHIP_PROGRESS") {
		case "1":
			return engine.ProgressTTY
		case "0":
			return engine.ProgressPlain
		}
	}
	if IsTerminal(underlying(c.Stderr)) {
		return engine.ProgressTTY
	}
	return engine.ProgressPlain
}

// underlying is the writer stderr ends in: a --json command's stderr is
// a writer in front of the terminal (the CLI's failure log) that says
// what it writes to.
func underlying(w io.Writer) io.Writer {
	if f, ok := w.(interface{ Underlying() io.Writer }); ok {
		return f.Underlying()
	}
	return w
}

// newProgress is the progress renderer of a run of g on stderr (nil when
// the run prints no progress: Config.ResultOnly): colour in
// the tty view unless NO_COLOR is set, the size asked of the terminal at
// every redraw (so a resize takes effect), else COLUMNS and LINES, else 80
// columns and no height limit.
func (c Config) newProgress(g *graph.Graph) *engine.Progress {
	if c.resultOnly() {
		return nil
	}
	mode := c.progressMode()
	return engine.NewProgressWith(c.Stderr, engine.ProgressOptions{
		Mode:     mode,
		Color:    mode == engine.ProgressTTY && c.Getenv("NO_COLOR") == "",
		Pipeline: g.Name,
		Total:    len(g.Stages),
		Width: func() int {
			if w, _ := terminalSize(underlying(c.Stderr)); w > 0 {
				return w
			}
			n, _ := strconv.Atoi(c.Getenv("COLUMNS"))
			return n
		},
		Height: func() int {
			if _, h := terminalSize(underlying(c.Stderr)); h > 0 {
				return h
			}
			n, _ := strconv.Atoi(c.Getenv("LINES"))
			return n
		},
	})
}

// LogProgress is the progress of a command that runs no pipeline but
// shows what it does with --progress (repair, uninstall, purge): a writer
// for its lines, rendered in c's progress mode (JSON mode: one "log" event
// per line; tty: above the view's header), and the close that ends it.
func LogProgress(c Config, name string) (io.Writer, func()) {
	p := c.newProgress(&graph.Graph{Name: name})
	if p == nil {
		return c.Stderr, func() {}
	}
	return p.Log(), p.Close
}

// switchWriter writes to w, which set changes while other goroutines may
// be writing.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func hasCacheable(g *graph.Graph) bool {
	for _, s := range g.Stages {
		if _, ok := s.Kind.(stage.Cacheable); ok {
			return true
		}
	}
	return false
}

func writeTraceFile(path string, spans []sdktrace.ReadOnlySpan) error {
	f, err := atomicfs.Create(path, 0o600, atomicfs.Options{Pattern: ".trace-*.json"})
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := tracing.WriteOTLPJSON(f, spans); err != nil {
		return err
	}
	return f.Commit()
}

// WriteTimingsFile writes the timings report of spans to path atomically:
// a reader never sees half a page, and a failed write leaves no file.
// Errors are TIMINGS_FAILED naming the file.
func WriteTimingsFile(path string, spans []sdktrace.ReadOnlySpan, deps map[string][]string) error {
	if err := writeTimings(path, spans, deps); err != nil {
		return errcode.Newf(errcode.TimingsFailed, "cannot write the timings page %s: %w; check that its directory exists and is writable", path, err)
	}
	return nil
}

func writeTimings(path string, spans []sdktrace.ReadOnlySpan, deps map[string][]string) error {
	f, err := atomicfs.Create(path, 0o644, atomicfs.Options{Pattern: ".timings-*.html"})
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := tracing.WriteTimingsHTML(f, spans, deps); err != nil {
		return err
	}
	return f.Commit()
}

// waitRemote waits for the remote cache's pushes (never longer than
// RemoteWait, a minute when zero) and says how many entries it pushed.
func (c Config) waitRemote() {
	if c.Remote == nil || !c.Remote.Write {
		return
	}
	limit := c.RemoteWait
	if limit <= 0 {
		limit = time.Minute
	}
	fmt.Fprintln(c.Stderr, c.Remote.Wait(limit).Summary(c.Remote.Remote.String()))
}
