// Package otlp is piship's OTLP span exporter (tracing.ExporterFunc):
// export is opt-in through the standard OTEL_EXPORTER_OTLP_* variables,
// over http/protobuf (the default) or grpc. It is a package of its own so
// that the engine, which records spans, links no gRPC; the commands pass
// Exporter to tracing.Setup.
package otlp

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Environment variables Exporter reads.
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	protocolHTTP      = "http/protobuf"
	protocolGRPC      = "grpc"
)

// Exporter returns the OTLP exporter the environment asks for, or nil when
// no endpoint is set, so that a plain run never attempts a connection.
//
// Both exporters read OTEL_EXPORTER_OTLP_* from the process environment on
// their own; the endpoint and headers are also passed explicitly (explicit
// options override the environment) so that Options.Getenv is honoured and
// an http:// endpoint means plaintext for grpc as well as for http/protobuf.
func Exporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error) {
	endpointVar := envTracesEndpoint
	endpoint := getenv(envTracesEndpoint)
	if endpoint == "" {
		endpointVar = envEndpoint
		endpoint = getenv(envEndpoint)
	}
	if endpoint == "" {
		return nil, "", nil
	}

	protocolVar := envTracesProtocol
	protocol := getenv(envTracesProtocol)
	if protocol == "" {
		protocolVar = envProtocol
		protocol = getenv(envProtocol)
	}
	if protocol == "" {
		protocol = protocolHTTP
	}

	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", fmt.Errorf("tracing: %s=%q is not an http:// or https:// URL; set it to the collector's URL, e.g. http://localhost:4318 for http/protobuf or http://localhost:4317 for grpc, or unset it to disable export",
			endpointVar, endpoint)
	}

	headersVar := envTracesHeaders
	rawHeaders := getenv(envTracesHeaders)
	if rawHeaders == "" {
		headersVar = envHeaders
		rawHeaders = getenv(envHeaders)
	}
	headers, err := parseHeaders(rawHeaders)
	if err != nil {
		return nil, "", fmt.Errorf("tracing: %s: %w", headersVar, err)
	}

	var exp sdktrace.SpanExporter
	switch protocol {
	case protocolHTTP:
		if endpointVar == envEndpoint {
			// The generic endpoint is a base URL: the spec appends the
			// signal path. The traces-specific one is used as is.
			u.Path = path.Join("/", u.Path, "v1/traces")
		}
		exp, err = otlptracehttp.New(ctx,
			otlptracehttp.WithEndpointURL(u.String()),
			otlptracehttp.WithHeaders(headers),
		)
	case protocolGRPC:
		// WithEndpointURL makes http:// insecure (plaintext), matching
		// what the exporter does for an http:// endpoint from the
		// environment.
		exp, err = otlptracegrpc.New(ctx,
			otlptracegrpc.WithEndpointURL(u.String()),
			otlptracegrpc.WithHeaders(headers),
		)
	default:
		return nil, "", fmt.Errorf("tracing: %s=%q is not supported; set it to %q (the default) or %q",
			protocolVar, protocol, protocolHTTP, protocolGRPC)
	}
	if err != nil {
		return nil, "", fmt.Errorf("tracing: create %s OTLP exporter for %s: %w", protocol, u.Redacted(), err)
	}
	return exp, protocol, nil
}

// parseHeaders parses the OTEL_EXPORTER_OTLP_HEADERS format: comma-separated
// key=value pairs with URL-encoded values. Unlike the exporters, which skip
// bad entries silently, it fails: a dropped auth header would otherwise
// surface only as rejected exports.
func parseHeaders(s string) (map[string]string, error) {
	headers := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return headers, nil
	}
	for entry := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(entry, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %q is not key=value; use comma-separated key=value pairs, e.g. api-key=secret,x-team=ci", entry)
		}
		val, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("value of %q is not URL-encoded (%w); percent-encode special characters", k, err)
		}
		headers[k] = strings.TrimSpace(val)
	}
	return headers, nil
}
