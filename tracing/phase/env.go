package phase

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ChildEnv returns env (KEY=VALUE entries) for a process a stage starts:
// with TRACEPARENT and TRACESTATE of the span in ctx (the stage's, or the
// phase's it runs in), so an instrumented child (another piship, an
// OpenTelemetry-instrumented script) joins the trace under that span. The
// caller's own TRACEPARENT and TRACESTATE, which name the caller's span,
// not the stage's, are dropped. With no valid span in ctx (tracing off)
// env is returned as it is: the child then sees what the caller saw.
func ChildEnv(ctx context.Context, env []string) []string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return env
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if strings.HasPrefix(kv, "TRACEPARENT=") || strings.HasPrefix(kv, "TRACESTATE=") {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "TRACEPARENT="+carrier["traceparent"])
	if ts := carrier["tracestate"]; ts != "" {
		out = append(out, "TRACESTATE="+ts)
	}
	return out
}
