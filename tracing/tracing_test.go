package tracing

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// env returns a Getenv reading only m, so tests never depend on the
// machine's environment.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSetupHonoursTraceparent(t *testing.T) {
	const parentHex = "00f067aa0ba902b7"
	tests := []struct {
		name  string
		flags string
	}{
		{"sampled parent", "01"},
		// An upstream "not sampled" must not cost us the timings.
		{"unsampled parent is still recorded", "00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, ctx, err := Setup(context.Background(), Options{
				ServiceName: "piship",
				Getenv: env(map[string]string{
					"TRACEPARENT": "00-4bf92f3577b34da6a3ce929d0e0e4736-" + parentHex + "-" + tt.flags,
					"TRACESTATE":  "vendor=opaque",
				}),
			})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(context.Background())

			_, root := p.Tracer().Start(ctx, PipelineSpanName("build"),
				trace.WithAttributes(attribute.String(AttrPipeline, "build")))
			root.End()

			ended := p.Recorder().Ended()
			if len(ended) != 1 {
				t.Fatalf("recorded %d spans, want 1", len(ended))
			}
			s := ended[0]
			if got := s.Parent().SpanID().String(); got != parentHex {
				t.Errorf("parent span id = %s, want %s", got, parentHex)
			}
			if !s.Parent().IsRemote() {
				t.Error("parent should be remote")
			}
			if got, want := s.SpanContext().TraceID(), testTraceID; got != want {
				t.Errorf("trace id = %s, want %s", got, want)
			}
			if got := s.SpanContext().TraceState().String(); got != "vendor=opaque" {
				t.Errorf("tracestate = %q, want vendor=opaque", got)
			}
			if got, want := s.SpanContext().IsSampled(), tt.flags == "01"; got != want {
				t.Errorf("sampled = %v, want %v (export follows the parent's decision)", got, want)
			}
		})
	}
}

func TestSetupWithoutTraceparentStartsNewTrace(t *testing.T) {
	p, ctx, err := Setup(context.Background(), Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, root := p.Tracer().Start(ctx, "pipeline build")
	root.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := p.Recorder().Ended()[0]
	if s.Parent().IsValid() {
		t.Errorf("root has parent %v, want none", s.Parent())
	}
	if !s.SpanContext().IsSampled() {
		t.Error("root span should be sampled")
	}
	attrs := map[attribute.Key]string{}
	for _, kv := range s.Resource().Attributes() {
		attrs[kv.Key] = kv.Value.Emit()
	}
	if attrs["service.name"] != "piship" {
		t.Errorf("service.name = %q, want the default piship", attrs["service.name"])
	}
	if _, ok := attrs["service.version"]; ok {
		t.Error("service.version set although ServiceVersion is empty")
	}
	if got := s.InstrumentationScope().Name; got != InstrumentationName {
		t.Errorf("scope = %q, want %q", got, InstrumentationName)
	}
}

func TestSetupResource(t *testing.T) {
	p, ctx, err := Setup(context.Background(), Options{ServiceName: "svc", ServiceVersion: "v9", Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().Start(ctx, "x")
	s.End()
	attrs := map[attribute.Key]string{}
	for _, kv := range p.Recorder().Ended()[0].Resource().Attributes() {
		attrs[kv.Key] = kv.Value.Emit()
	}
	if attrs["service.name"] != "svc" || attrs["service.version"] != "v9" {
		t.Errorf("resource = %v", attrs)
	}
}

func TestSetupNoExporterWithoutEndpoint(t *testing.T) {
	// A protocol alone (even an unknown one) must not trigger export or a
	// connection attempt: only an endpoint opts in.
	for _, e := range []map[string]string{
		nil,
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"},
	} {
		p, _, err := Setup(context.Background(), Options{Getenv: env(e)})
		if err != nil {
			t.Fatalf("env %v: %v", e, err)
		}
		if p.exporter != nil || p.protocol != "" {
			t.Errorf("env %v: exporter %T (%q) created, want none", e, p.exporter, p.protocol)
		}
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("env %v: Shutdown: %v", e, err)
		}
	}
}

type otlpRequest struct {
	method, path, contentType, header string
}

// newCollector starts a fake OTLP/HTTP collector on loopback that reports
// each request it receives.
func newCollector(t *testing.T) (*httptest.Server, <-chan otlpRequest) {
	t.Helper()
	reqs := make(chan otlpRequest, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs <- otlpRequest{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("X-Piship-Test")}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, reqs
}

func TestSetupExportsHTTPProtobuf(t *testing.T) {
	tests := []struct {
		name       string
		processEnv bool // use the real environment (Getenv nil) instead of a map
		env        func(url string) map[string]string
		wantPath   string
		wantHeader string
	}{
		{
			name:       "generic endpoint from the process environment",
			processEnv: true,
			env: func(url string) map[string]string {
				return map[string]string{
					"OTEL_EXPORTER_OTLP_ENDPOINT": url,
					"OTEL_EXPORTER_OTLP_HEADERS":  "x-piship-test=from%20env",
				}
			},
			wantPath:   "/v1/traces",
			wantHeader: "from env",
		},
		{
			name: "generic endpoint with base path and explicit protocol",
			env: func(url string) map[string]string {
				return map[string]string{
					"OTEL_EXPORTER_OTLP_ENDPOINT": url + "/otlp/",
					"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				}
			},
			wantPath: "/otlp/v1/traces",
		},
		{
			name: "traces endpoint is used as is and wins",
			env: func(url string) map[string]string {
				return map[string]string{
					"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1",
					"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/custom",
					"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "x-piship-test=traces",
				}
			},
			wantPath:   "/custom",
			wantHeader: "traces",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, reqs := newCollector(t)
			opts := Options{ServiceName: "piship"}
			if tt.processEnv {
				for k, v := range tt.env(srv.URL) {
					t.Setenv(k, v)
				}
			} else {
				opts.Getenv = env(tt.env(srv.URL))
			}
			p, ctx, err := Setup(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if p.protocol != "http/protobuf" {
				t.Fatalf("protocol = %q, want http/protobuf", p.protocol)
			}
			_, s := p.Tracer().Start(ctx, "pipeline build")
			s.End()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := p.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			select {
			case r := <-reqs:
				want := otlpRequest{http.MethodPost, tt.wantPath, "application/x-protobuf", tt.wantHeader}
				if r != want {
					t.Errorf("collector got %+v, want %+v", r, want)
				}
			default:
				t.Fatal("Shutdown returned before the collector received the spans")
			}
			if n := len(p.Recorder().Ended()); n != 1 {
				t.Errorf("recorder has %d spans after Shutdown, want 1", n)
			}
		})
	}
}

func TestSetupSelectsGRPC(t *testing.T) {
	for _, vars := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
	} {
		p, ctx, err := Setup(context.Background(), Options{Getenv: env(vars)})
		if err != nil {
			t.Fatalf("%v: %v", vars, err)
		}
		if p.protocol != "grpc" || p.exporter == nil {
			t.Errorf("%v: protocol %q exporter %T, want a grpc exporter", vars, p.protocol, p.exporter)
		}
		_, s := p.Tracer().Start(ctx, "pipeline build")
		s.End()
		// Nothing listens there; a timeout is the only acceptable failure.
		sctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = p.Shutdown(sctx)
		cancel()
		if err != nil && !isTimeout(err) {
			t.Errorf("%v: Shutdown: %v", vars, err)
		}
	}
}

func TestSetupRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr []string
	}{
		{
			name:    "unknown protocol",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", `"http/json"`, `"http/protobuf"`, `"grpc"`},
		},
		{
			name:    "unknown traces protocol",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", `"udp"`, `"http/protobuf"`, `"grpc"`},
		},
		{
			name:    "endpoint without scheme",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"},
		},
		{
			name:    "malformed headers",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": "api-key"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "key=value"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Setup(context.Background(), Options{Getenv: env(tt.env)})
			if err == nil {
				t.Fatal("Setup succeeded, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
		})
	}
}

func TestSetupDisabled(t *testing.T) {
	// Disabled ignores export configuration entirely, even a broken one.
	p, ctx, err := Setup(context.Background(), Options{
		Disabled: true,
		Getenv:   env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().Start(ctx, "pipeline build")
	if s.IsRecording() {
		t.Error("span is recording with tracing disabled")
	}
	s.End()
	if n := len(p.Recorder().Ended()); n != 0 {
		t.Errorf("recorded %d spans with tracing disabled", n)
	}
	if p.exporter != nil {
		t.Error("exporter created with tracing disabled")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	p, ctx, err := Setup(context.Background(), Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, s := p.Tracer().Start(ctx, "stage", trace.WithTimestamp(base))
			s.End(trace.WithTimestamp(base.Add(time.Duration(i) * time.Millisecond)))
			_ = p.Recorder().Ended() // readers race with writers
		})
	}
	wg.Wait()
	if got := len(p.Recorder().Ended()); got != n {
		t.Errorf("recorded %d spans, want %d", got, n)
	}
}

func TestRecorderEndOrder(t *testing.T) {
	p, ctx, err := Setup(context.Background(), Options{Getenv: env(nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := p.Tracer().Start(ctx, "pipeline build", trace.WithTimestamp(base))
	_, a := p.Tracer().Start(ctx, "go a", trace.WithTimestamp(base))
	_, b := p.Tracer().Start(ctx, "go b", trace.WithTimestamp(base))
	b.End(trace.WithTimestamp(base.Add(ms(5))))
	a.End(trace.WithTimestamp(base.Add(ms(7))))
	root.End(trace.WithTimestamp(base.Add(ms(9))))
	var names []string
	for _, s := range p.Recorder().Ended() {
		names = append(names, s.Name())
	}
	if got, want := strings.Join(names, ","), "go b,go a,pipeline build"; got != want {
		t.Errorf("end order = %s, want %s", got, want)
	}
}

// traceService is a loopback OTLP/gRPC collector.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	got chan []string
}

func (s *traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	var names []string
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				names = append(names, sp.GetName())
			}
		}
	}
	s.got <- names
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func TestSetupExportsGRPCPlaintextForHTTPEndpoint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer() // no TLS: an http:// endpoint must mean plaintext
	svc := &traceService{got: make(chan []string, 4)}
	coltracepb.RegisterTraceServiceServer(srv, svc)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)

	p, ctx, err := Setup(context.Background(), Options{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
	})})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().Start(ctx, "pipeline build")
	s.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case names := <-svc.got:
		if len(names) != 1 || names[0] != "pipeline build" {
			t.Errorf("collector got spans %q", names)
		}
	default:
		t.Fatal("Shutdown returned before the collector received the spans")
	}
}

// isTimeout reports whether err is a deadline expiry, as a context error or
// as the gRPC status the exporter may wrap it in.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se interface{ GRPCStatus() *status.Status }
	return errors.As(err, &se) && se.GRPCStatus().Code() == codes.DeadlineExceeded
}

// The environment names the service: OTEL_SERVICE_NAME first, then
// service.name in OTEL_RESOURCE_ATTRIBUTES, then the caller's default.
func TestSetupServiceNameFollowsTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "piship"},
		{map[string]string{"OTEL_SERVICE_NAME": "release-ci"}, "release-ci"},
		{map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "team=infra,service.name=my%20svc"}, "my svc"},
		{map[string]string{"OTEL_SERVICE_NAME": "release-ci", "OTEL_RESOURCE_ATTRIBUTES": "service.name=other"}, "release-ci"},
	} {
		p, ctx, err := Setup(context.Background(), Options{ServiceName: "piship", Getenv: env(c.env)})
		if err != nil {
			t.Fatal(err)
		}
		_, s := p.Tracer().Start(ctx, "x")
		s.End()
		got := ""
		for _, kv := range p.Recorder().Ended()[0].Resource().Attributes() {
			if kv.Key == "service.name" {
				got = kv.Value.Emit()
			}
		}
		if got != c.want {
			t.Errorf("env %v: service.name %q, want %q", c.env, got, c.want)
		}
	}
}

// An unreachable collector costs one clear warning line, not a raw Go log
// line per failed batch, and Shutdown's error adds no second line.
func TestUnreachableCollectorWarnsOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	var logged, warned strings.Builder
	log.SetOutput(&logged)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	p, ctx, err := Setup(context.Background(), Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}), Warn: &warned})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().Start(ctx, "pipeline p")
	s.End()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.Warn(p.Shutdown(sctx))
	p.Warn(errors.New("a later failure"))
	if got := warned.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "piship: warning: spans not exported to "+endpoint) ||
		!strings.Contains(got, "the run's result is unchanged") {
		t.Errorf("warnings:\n%s\nwant one line naming %s", got, endpoint)
	}
	if logged.Len() != 0 {
		t.Errorf("raw log lines:\n%s", logged.String())
	}
}
