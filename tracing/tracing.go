// Package tracing turns piship runs into OpenTelemetry traces.
//
// Every stage run is a span, and the spans are the single source of truth for
// time: the timing summary the tool prints (Summarize) is computed from
// recorded spans only, never from separate stopwatches, so what a user reads
// in the terminal and what they see in a trace viewer cannot disagree.
//
// Setup always attaches an in-memory Recorder for that purpose. Export is
// the caller's choice (Options.Exporter: tracing/otlp's, opt-in through the
// standard OTEL_EXPORTER_OTLP_* environment variables), and a W3C TRACEPARENT in the environment makes the run a child of
// the caller's trace (for example a CI job that is itself traced).
package tracing

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"piship.dev/piship/tracing/spankey"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName is the instrumentation scope of every span piship
// creates.
const InstrumentationName = "piship.dev/piship"

// Attribute keys the engine sets on spans. Summarize reads them back, so the
// engine and the summary must agree on these names.
const (
	// AttrPipeline is set on the run's root span to the pipeline name.
	AttrPipeline = "piship.pipeline"
	// AttrPipelineFile is set on the run's root span to the pipeline's
	// file: its absolute path, or embedded:pipelines/NAME.hcl for a
	// built-in one. piship timings reads the dependency edges from it.
	AttrPipelineFile = "piship.pipeline.file"
	// AttrStageKind is the stage's kind, the first word of its span name.
	AttrStageKind = "piship.stage.kind"
	// AttrStageName is the stage's name; its presence marks a stage span.
	AttrStageName = "piship.stage.name"
	// AttrStageAddress is the stage's full address: stage.NAME,
	// module.M.stage.NAME, stage.NAME["KEY"] (graph.Stage.Addr).
	AttrStageAddress = "piship.stage.address"
	// The cache and verdict keys are spankey's (the leaf the kinds use).
	AttrCacheKey        = spankey.CacheKey
	AttrCacheHit        = spankey.CacheHit
	AttrVerdict         = spankey.Verdict // one of the Verdict* values
	AttrCacheName       = spankey.CacheName
	AttrCacheMissReason = spankey.CacheMissReason
	AttrCacheRemote     = spankey.CacheRemote
)

// Values of AttrVerdict.
const (
	VerdictPassed    = "passed"
	VerdictFailed    = "failed"
	VerdictSkipped   = "skipped"
	VerdictCancelled = "cancelled"
	// VerdictNotStarted: blocked by a dependency, or the run was stopping.
	VerdictNotStarted = "not started"
)

// Attribute keys of piship's other spans and events (docs/tracing.md has
// the table). Kept apart from the stage keys above, which Summarize reads.
const (
	// AttrSkipReason says why a skipped or not-started stage did not run:
	// "when is false", "dependency X failed", "run stopping".
	AttrSkipReason = "piship.stage.skip_reason"
	// AttrUndecided lists the attributes an always stage ran without:
	// they refer to outputs of a stage that failed or did not run.
	AttrUndecided = "piship.stage.undecided"
	// AttrEventsDropped counts the log lines of a stage that were not
	// recorded as events (over MaxLogEvents); absent when none were.
	AttrEventsDropped = "piship.events.dropped"
	// AttrLogLine is the text of a log event (name LogEventName).
	AttrLogLine = "piship.log.line"
	// AttrLogTruncated (bool) marks a log event cut to MaxLogLineBytes.
	AttrLogTruncated = "piship.log.truncated"

	// Root span: what the run produced, when it produced it.
	AttrDistribution  = "piship.distribution"
	AttrVersion       = "piship.version"
	AttrReleaseName   = "piship.release.name"
	AttrArchiveSHA256 = "piship.archive.sha256"
	AttrExitCode      = spankey.ExitCode
	AttrSmokeArgs     = spankey.SmokeArgs
)

// Bounds of a stage's log events: a stage printing megabytes (npm) must not
// make its span megabytes. The SDK's own default limit is also 128 events.
const (
	LogEventName    = "log"
	MaxLogEvents    = 128
	MaxLogLineBytes = 1024
)

// CacheLookupSpanName names the child span of a stage that covers its cache
// lookup. Summarize ignores these spans.
const CacheLookupSpanName = spankey.CacheLookupSpanName

// PipelineSpanName is the name of the run's root span for pipeline name.
func PipelineSpanName(pipeline string) string { return "pipeline " + pipeline }

// StageSpanName is the name of a stage span: "<kind> <name>".
func StageSpanName(kind, name string) string { return kind + " " + name }

// ExporterFunc returns the span exporter the environment (getenv) asks
// for and its protocol, or nil when it asks for none. tracing/otlp's
// Exporter is the OTLP one (the OTEL_EXPORTER_OTLP_* variables); it lives
// apart so that what only records spans (the engine) links no gRPC.
type ExporterFunc func(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error)

// Options configures Setup.
type Options struct {
	// Exporter makes the exporter spans are sent to; nil exports nothing
	// (the Recorder still records every span).
	Exporter ExporterFunc
	// ServiceName is the service.name resource attribute when the
	// environment names none (OTEL_SERVICE_NAME, then service.name in
	// OTEL_RESOURCE_ATTRIBUTES, win, as the OpenTelemetry specification
	// orders them); "piship" if empty.
	ServiceName string
	// ServiceVersion is the service.version resource attribute; omitted if
	// empty.
	ServiceVersion string
	// Getenv reads the environment; nil means os.Getenv. It decides whether
	// and where spans are exported (endpoint, protocol, headers) and supplies
	// TRACEPARENT/TRACESTATE. The OTLP exporters still read the remaining
	// OTEL_EXPORTER_OTLP_* settings (certificates, compression, timeout) from
	// the process environment themselves.
	Getenv func(string) string
	// Disabled turns tracing off entirely: Tracer returns a no-op tracer and
	// nothing is recorded or exported. Benchmarks use it to measure the
	// engine without tracing overhead.
	Disabled bool
	// SpanProcessors are attached besides the recorder and the exporter;
	// tests pass a tracetest.SpanRecorder to see exactly what was recorded.
	SpanProcessors []sdktrace.SpanProcessor
	// Warn gets the one warning line of a run whose spans cannot be
	// exported (an unreachable collector): Warn is called for the export
	// errors the SDK reports and for Shutdown's, and writes only the first.
	// nil: os.Stderr.
	Warn io.Writer
}

// Provider owns the tracer provider of one piship process.
type Provider struct {
	tracer   trace.Tracer
	recorder *Recorder
	tp       *sdktrace.TracerProvider // nil when disabled

	// exporter and protocol are set only when OTLP export is configured;
	// tests use them to check which exporter was chosen.
	exporter sdktrace.SpanExporter
	protocol string

	endpoint string // where spans go, for the warning
	warn     io.Writer
	warnOnce sync.Once
}

// Environment variables read by Setup.
const (
	envBSPMaxQueueSize = "OTEL_BSP_MAX_QUEUE_SIZE"
	envTraceParent     = "TRACEPARENT"
	envTraceState      = "TRACESTATE"
	defaultServiceName = "piship"

	defaultMaxQueueSize = 1 << 15
)

// Setup builds the process's tracer provider. The returned context carries
// the remote parent from TRACEPARENT (if set), so spans started from it join
// the caller's trace; start the run's root span from that context.
//
// Call Shutdown before the process exits so batched spans are exported.
func Setup(ctx context.Context, opts Options) (*Provider, context.Context, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ctx = parentFromEnv(ctx, getenv)

	if opts.Disabled {
		return &Provider{
			tracer:   noop.NewTracerProvider().Tracer(InstrumentationName),
			recorder: &Recorder{},
		}, ctx, nil
	}

	// The resource is built before the exporter so that a failure here
	// cannot leak an open exporter.
	name := serviceName(getenv, opts.ServiceName)
	attrs := []attribute.KeyValue{semconv.ServiceName(name)}
	if opts.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(opts.ServiceVersion))
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
	)
	if err != nil {
		return nil, ctx, fmt.Errorf("tracing: build resource: %w", err)
	}

	var exporter sdktrace.SpanExporter
	var protocol string
	if opts.Exporter != nil {
		if exporter, protocol, err = opts.Exporter(ctx, getenv); err != nil {
			return nil, ctx, err
		}
	}

	rec := &Recorder{}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(recordAll{sdktrace.ParentBased(sdktrace.AlwaysSample())}),
		sdktrace.WithSpanProcessor(rec),
	}
	for _, sp := range opts.SpanProcessors {
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(sp))
	}
	if exporter != nil {
		var bspOpts []sdktrace.BatchSpanProcessorOption
		if getenv(envBSPMaxQueueSize) == "" {
			// The SDK default (2048) drops spans of large pipelines: a
			// 10,000-stage run ends up to 20,000 spans (stages and cache
			// lookups), faster than batches of 512 are exported.
			bspOpts = append(bspOpts, sdktrace.WithMaxQueueSize(defaultMaxQueueSize))
		}
		tpOpts = append(tpOpts, sdktrace.WithBatcher(exporter, bspOpts...))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	p := &Provider{
		tracer:   tp.Tracer(InstrumentationName),
		recorder: rec,
		tp:       tp,
		exporter: exporter,
		protocol: protocol,
		endpoint: exportEndpoint(getenv),
		warn:     opts.Warn,
	}
	if p.warn == nil {
		p.warn = os.Stderr
	}
	if exporter != nil {
		// The SDK reports a failed batch through the global handler, which
		// by default logs a raw Go log line per batch; one clear warning
		// replaces them. The run's result does not depend on export.
		otel.SetErrorHandler(otel.ErrorHandlerFunc(p.Warn))
	}
	return p, ctx, nil
}

// exportEndpoint is the OTLP endpoint spans go to ("" when none).
func exportEndpoint(getenv func(string) string) string {
	if e := getenv(envTracesEndpoint); e != "" {
		return e
	}
	return getenv(envEndpoint)
}

// Warn writes the run's one export warning for err; later calls write
// nothing.
func (p *Provider) Warn(err error) {
	if err == nil {
		return
	}
	p.warnOnce.Do(func() {
		fmt.Fprintf(p.warn, "piship: warning: spans not exported to %s (%v); the run's result is unchanged: start the collector, or unset %s and %s\n",
			p.endpoint, err, envEndpoint, envTracesEndpoint)
	})
}

// serviceName is the run's service.name: OTEL_SERVICE_NAME, else
// service.name of OTEL_RESOURCE_ATTRIBUTES (comma-separated key=value,
// values percent-encoded), else def, else "piship". Read through getenv,
// so the run's environment decides, not only the process's.
func serviceName(getenv func(string) string, def string) string {
	if v := strings.TrimSpace(getenv("OTEL_SERVICE_NAME")); v != "" {
		return v
	}
	for _, kv := range strings.Split(getenv("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) != "service.name" {
			continue
		}
		if u, err := url.PathUnescape(strings.TrimSpace(v)); err == nil && u != "" {
			return u
		}
	}
	if def != "" {
		return def
	}
	return defaultServiceName
}

// Protocol is the protocol spans are exported with ("" when none).
func (p *Provider) Protocol() string { return p.protocol }

// Tracer returns the tracer for piship's spans (a no-op tracer when
// disabled).
func (p *Provider) Tracer() trace.Tracer { return p.tracer }

// Recorder returns the in-memory recorder holding every ended span. When
// tracing is disabled it is empty.
func (p *Provider) Recorder() *Recorder { return p.recorder }

// Shutdown flushes batched spans to the exporter and shuts it down. Recorded
// spans stay available from Recorder afterwards. It is safe to call more
// than once; calls after the first do nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.tp == nil {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush spans to the OTLP endpoint (check that the collector is reachable, or unset %s and %s to disable export): %w",
			envEndpoint, envTracesEndpoint, err)
	}
	return nil
}

// parentFromEnv returns ctx carrying the remote span context described by
// TRACEPARENT/TRACESTATE. A malformed TRACEPARENT is ignored, as W3C trace
// context requires, so a broken caller cannot stop a build.
func parentFromEnv(ctx context.Context, getenv func(string) string) context.Context {
	tp := getenv(envTraceParent)
	if tp == "" {
		return ctx
	}
	carrier := propagation.MapCarrier{"traceparent": tp}
	if ts := getenv(envTraceState); ts != "" {
		carrier["tracestate"] = ts
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// recordAll samples for export like the SDK default (ParentBased
// AlwaysSample) but never drops a span: the timing summary is computed from
// recorded spans, so an upstream "not sampled" TRACEPARENT must still leave
// every span recorded (it is just not exported).
type recordAll struct{ sdktrace.Sampler }

func (s recordAll) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	r := s.Sampler.ShouldSample(p)
	if r.Decision == sdktrace.Drop {
		r.Decision = sdktrace.RecordOnly
	}
	return r
}

func (s recordAll) Description() string { return "RecordAll{" + s.Sampler.Description() + "}" }
