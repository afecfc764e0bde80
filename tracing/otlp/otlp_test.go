package otlp

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"piship.dev/piship/tracing"
)

// env returns a Getenv reading only m, so tests never depend on the
// machine's environment.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestSetupNoExporterWithoutEndpoint(t *testing.T) {
	// A protocol alone (even an unknown one) must not trigger export or a
	// connection attempt: only an endpoint opts in.
	for _, e := range []map[string]string{
		nil,
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"},
	} {
		p, _, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(e), Exporter: Exporter})
		if err != nil {
			t.Fatalf("env %v: %v", e, err)
		}
		if p.Protocol() != "" {
			t.Errorf("env %v: exporter (%q) created, want none", e, p.Protocol())
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
			opts := tracing.Options{ServiceName: "piship", Exporter: Exporter}
			if tt.processEnv {
				for k, v := range tt.env(srv.URL) {
					t.Setenv(k, v)
				}
			} else {
				opts.Getenv = env(tt.env(srv.URL))
			}
			p, ctx, err := tracing.Setup(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if p.Protocol() != "http/protobuf" {
				t.Fatalf("protocol = %q, want http/protobuf", p.Protocol())
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
		p, ctx, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(vars), Exporter: Exporter})
		if err != nil {
			t.Fatalf("%v: %v", vars, err)
		}
		if p.Protocol() != "grpc" {
			t.Errorf("%v: protocol %q, want a grpc exporter", vars, p.Protocol())
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
			env:     map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/xml"},
			wantErr: []string{"OTEL_EXPORTER_OTLP_PROTOCOL", `"http/xml"`, `"http/protobuf"`, `"grpc"`},
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
			_, _, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(tt.env), Exporter: Exporter})
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

// traceService is a loopback OTLP/gRPC collector.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	got chan []string
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

	p, ctx, err := tracing.Setup(context.Background(), tracing.Options{Exporter: Exporter, Getenv: env(map[string]string{
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
	p, ctx, err := tracing.Setup(context.Background(), tracing.Options{Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}), Warn: &warned, Exporter: Exporter})
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
