// Package otlp is piship's OTLP span exporter (tracing.ExporterFunc):
// export is opt-in through the standard OTEL_EXPORTER_OTLP_* variables,
// over http/protobuf (the default), grpc or http/json. It is a package of its own so
// that the engine, which records spans, links no gRPC; the commands pass
// Exporter to tracing.Setup.
package otlp

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/tracing"
)

// Exporter returns the OTLP exporter the environment asks for, or nil when
// no endpoint is set, so that a plain run never attempts a connection:
// http/protobuf (the default) or grpc through the SDK's exporters, and
// http/json through tracing's own encoder (tracing.NewJSONExporter, what the
// end-user installer sends).
//
// The SDK's exporters read OTEL_EXPORTER_OTLP_* from the process environment
// on their own; the endpoint and headers are also passed explicitly
// (explicit options override the environment) so that Options.Getenv is
// honoured and an http:// endpoint means plaintext for grpc as well as for
// http/protobuf.
func Exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error) {
	t, ok, err := tracing.ExportTarget(getenv)
	if err != nil || !ok {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	switch t.Protocol {
	case tracing.ProtocolHTTPProtobuf:
		exp, err = otlptracehttp.New(ctx,
			otlptracehttp.WithEndpointURL(t.TracesURL()),
			otlptracehttp.WithHeaders(t.Headers),
		)
	case tracing.ProtocolHTTPJSON:
		exp = tracing.NewJSONExporter(t)
	case tracing.ProtocolGRPC:
		// WithEndpointURL makes http:// insecure (plaintext), matching
		// what the exporter does for an http:// endpoint from the
		// environment.
		exp, err = otlptracegrpc.New(ctx,
			otlptracegrpc.WithEndpointURL(t.URL.String()),
			otlptracegrpc.WithHeaders(t.Headers),
		)
	default:
		return nil, "", fmt.Errorf("tracing: %s=%q is not supported; set it to %q (the default), %q or %q",
			t.ProtocolVar, t.Protocol, tracing.ProtocolHTTPProtobuf, tracing.ProtocolGRPC, tracing.ProtocolHTTPJSON)
	}
	if err != nil {
		return nil, "", fmt.Errorf("tracing: create %s OTLP exporter for %s: %w", t.Protocol, t.URL.Redacted(), err)
	}
	return exp, t.Protocol, nil
}
