package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
	ProtocolGRPC         = "grpc"
)

// Environment variables ExportTarget reads.
const (
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	envTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
)

// Target is where the OTEL_EXPORTER_OTLP_* variables send spans: one
// reading of them for every exporter piship has (tracing/otlp's and
// JSONExporter).
type Target struct {
	// URL is the collector's URL: the traces endpoint as set, or the
	// generic endpoint as set (Traces appends the signal path for HTTP).
	URL *url.URL
	// Generic is true when URL came from OTEL_EXPORTER_OTLP_ENDPOINT, a
	// base URL the HTTP protocols append v1/traces to.
	Generic bool
	// Protocol is the protocol asked for, http/protobuf by default.
	Protocol, ProtocolVar string
	Headers               map[string]string
}

// TracesURL is the URL an HTTP exporter posts to.
func (t Target) TracesURL() string {
	u := *t.URL
	if t.Generic {
		// The generic endpoint is a base URL: the spec appends the signal
		// path. The traces-specific one is used as is.
		u.Path = path.Join("/", u.Path, "v1/traces")
	}
	return u.String()
}

// ExportTarget reads the OTEL_EXPORTER_OTLP_* variables: ok is false when
// no endpoint is set (a plain run never attempts a connection).
func ExportTarget(getenv func(string) string) (t Target, ok bool, err error) {
	endpointVar := envTracesEndpoint
	endpoint := getenv(envTracesEndpoint)
	if endpoint == "" {
		endpointVar = envEndpoint
		endpoint = getenv(envEndpoint)
	}
	if endpoint == "" {
		return Target{}, false, nil
	}
	t.Generic = endpointVar == envEndpoint
	t.ProtocolVar = envTracesProtocol
	t.Protocol = getenv(envTracesProtocol)
	if t.Protocol == "" {
		t.ProtocolVar = envProtocol
		t.Protocol = getenv(envProtocol)
	}
	if t.Protocol == "" {
		t.Protocol = ProtocolHTTPProtobuf
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, false, fmt.Errorf("tracing: %s=%q is not an http:// or https:// URL; set it to the collector's URL, e.g. http://localhost:4318 for http/protobuf or http://localhost:4317 for grpc, or unset it to disable export",
			endpointVar, endpoint)
	}
	t.URL = u
	headersVar := envTracesHeaders
	rawHeaders := getenv(envTracesHeaders)
	if rawHeaders == "" {
		headersVar = envHeaders
		rawHeaders = getenv(envHeaders)
	}
	if t.Headers, err = parseHeaders(rawHeaders); err != nil {
		return Target{}, false, fmt.Errorf("tracing: %s: %w", headersVar, err)
	}
	return t, true, nil
}

// parseHeaders parses the OTEL_EXPORTER_OTLP_HEADERS format: comma-separated
// key=value pairs with URL-encoded values. Unlike the SDK's exporters, which
// skip bad entries silently, it fails: a dropped auth header would otherwise
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

// JSONExporter is the exporter of the end-user installer: OTLP/JSON posted
// over HTTP with this package's encoder (WriteOTLPJSON), so the installer
// links neither the protobuf exporter nor gRPC. It speaks http/json only:
// a run asking for http/protobuf or grpc gets an error saying so (a
// warning; the run goes on untraced), and an unset protocol means
// http/json here.
func JSONExporter(ctx context.Context, getenv func(string) string) (sdktrace.SpanExporter, string, error) {
	t, ok, err := ExportTarget(getenv)
	if err != nil || !ok {
		return nil, "", err
	}
	if getenv(envTracesProtocol) == "" && getenv(envProtocol) == "" {
		t.Protocol = ProtocolHTTPJSON
	}
	if t.Protocol != ProtocolHTTPJSON {
		return nil, "", fmt.Errorf("tracing: %s=%q: this installer exports OTLP over %s only; set it to %q (collectors take it on the HTTP port, 4318) or unset it",
			t.ProtocolVar, t.Protocol, ProtocolHTTPJSON, ProtocolHTTPJSON)
	}
	return NewJSONExporter(t), ProtocolHTTPJSON, nil
}

// NewJSONExporter returns an OTLP/JSON over HTTP exporter to t.
func NewJSONExporter(t Target) sdktrace.SpanExporter {
	return &jsonExporter{url: t.TracesURL(), headers: t.Headers, client: &http.Client{Timeout: 10 * time.Second}}
}

type jsonExporter struct {
	url     string
	headers map[string]string
	client  *http.Client
	stopped atomic.Bool
}

// ExportSpans posts one ExportTraceServiceRequest (OTLP/HTTP, JSON
// encoding); a non-2xx answer is an error with its status and the start of
// its body.
func (x *jsonExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if x.stopped.Load() || len(spans) == 0 {
		return nil
	}
	var body bytes.Buffer
	if err := WriteOTLPJSON(&body, spans); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.url, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range x.headers {
		req.Header.Set(k, v)
	}
	resp, err := x.client.Do(req)
	if err != nil {
		return fmt.Errorf("tracing: post OTLP/JSON to %s: %w", redacted(x.url), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("tracing: post OTLP/JSON to %s: %s: %s", redacted(x.url), resp.Status, bytes.TrimSpace(msg))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return nil
}

// Shutdown stops exporting; spans exported after it are dropped.
func (x *jsonExporter) Shutdown(ctx context.Context) error {
	x.stopped.Store(true)
	return nil
}

func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}
