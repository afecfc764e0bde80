package tracing

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
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
