package tracing

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// decoded mirrors the parts of OTLP/JSON the tests check, independently of
// the writer's structs.
type decoded struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []decodedKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Scope struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"scope"`
			Spans []struct {
				TraceID           string      `json:"traceId"`
				SpanID            string      `json:"spanId"`
				ParentSpanID      string      `json:"parentSpanId"`
				Name              string      `json:"name"`
				Kind              int         `json:"kind"`
				StartTimeUnixNano string      `json:"startTimeUnixNano"`
				EndTimeUnixNano   string      `json:"endTimeUnixNano"`
				Attributes        []decodedKV `json:"attributes"`
				Status            struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"status"`
				Events []struct {
					Name         string `json:"name"`
					TimeUnixNano string `json:"timeUnixNano"`
				} `json:"events"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type decodedKV struct {
	Key   string         `json:"key"`
	Value map[string]any `json:"value"`
}

func attrMap(kvs []decodedKV) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		for typ, v := range kv.Value {
			m[kv.Key] = map[string]any{typ: v}
		}
	}
	return m
}

func testSpans() []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", "piship"), attribute.String("service.version", "1.2.3"))
	scope := instrumentation.Scope{Name: InstrumentationName, Version: "1.2.3"}
	root := tracetest.SpanStub{
		Name:                 "pipeline build",
		SpanContext:          spanContext(1),
		SpanKind:             trace.SpanKindInternal,
		StartTime:            base,
		EndTime:              base.Add(ms(100)),
		Attributes:           []attribute.KeyValue{attribute.String(AttrPipeline, "build")},
		Resource:             res,
		InstrumentationScope: scope,
	}
	compile := tracetest.SpanStub{
		Name:        "go compile",
		SpanContext: spanContext(2),
		Parent:      spanContext(1),
		SpanKind:    trace.SpanKindInternal,
		StartTime:   base.Add(ms(10)),
		EndTime:     base.Add(ms(50)),
		Attributes: []attribute.KeyValue{
			attribute.String(AttrStageKind, "go"),
			attribute.String(AttrStageName, "compile"),
			attribute.Bool(AttrCacheHit, false),
			attribute.Int64("files", 42),
			attribute.Float64("ratio", 0.5),
			attribute.StringSlice("tags", []string{"x", "y"}),
		},
		Events:               []sdktrace.Event{{Name: "output", Time: base.Add(ms(20))}},
		Status:               sdktrace.Status{Code: codes.Error, Description: "exit status 2"},
		Resource:             res,
		InstrumentationScope: scope,
	}
	lookup := tracetest.SpanStub{
		Name:                 CacheLookupSpanName,
		SpanContext:          spanContext(3),
		Parent:               spanContext(2),
		SpanKind:             trace.SpanKindClient,
		StartTime:            base.Add(ms(10)),
		EndTime:              base.Add(ms(11)),
		Status:               sdktrace.Status{Code: codes.Ok},
		Resource:             res,
		InstrumentationScope: scope,
	}
	// Recorder order: children end first.
	return []sdktrace.ReadOnlySpan{lookup.Snapshot(), compile.Snapshot(), root.Snapshot()}
}

func TestWriteOTLPJSONRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteOTLPJSON(&buf, testSpans()); err != nil {
		t.Fatal(err)
	}
	var got decoded
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("decode: %v\n%s", err, buf.Bytes())
	}
	if len(got.ResourceSpans) != 1 || len(got.ResourceSpans[0].ScopeSpans) != 1 {
		t.Fatalf("want 1 resource with 1 scope, got\n%s", buf.Bytes())
	}
	rs := got.ResourceSpans[0]
	if ra := attrMap(rs.Resource.Attributes); ra["service.name"].(map[string]any)["stringValue"] != "piship" {
		t.Errorf("resource attributes = %v", ra)
	}
	ss := rs.ScopeSpans[0]
	if ss.Scope.Name != InstrumentationName || ss.Scope.Version != "1.2.3" {
		t.Errorf("scope = %+v", ss.Scope)
	}

	traceHex := hex.EncodeToString(testTraceID[:])
	id := func(n uint64) string { s := spanID(n); return hex.EncodeToString(s[:]) }
	type want struct {
		name, spanID, parent string
		kind, status         int
		start                string
	}
	// Ordered by start time, then span id: the lookup starts with compile
	// but has the larger id.
	wants := []want{
		{"pipeline build", id(1), "", 1, 0, "1748779200000000000"},
		{"go compile", id(2), id(1), 1, 2, "1748779200010000000"},
		{CacheLookupSpanName, id(3), id(2), 3, 1, "1748779200010000000"},
	}
	if len(ss.Spans) != len(wants) {
		t.Fatalf("got %d spans, want %d", len(ss.Spans), len(wants))
	}
	for i, w := range wants {
		s := ss.Spans[i]
		if s.TraceID != traceHex || s.SpanID != w.spanID || s.ParentSpanID != w.parent || s.Name != w.name ||
			s.Kind != w.kind || s.Status.Code != w.status || s.StartTimeUnixNano != w.start {
			t.Errorf("span %d = %+v, want %+v (trace %s)", i, s, w, traceHex)
		}
	}

	compile := ss.Spans[1]
	wantAttrs := map[string]any{
		AttrStageKind: map[string]any{"stringValue": "go"},
		AttrStageName: map[string]any{"stringValue": "compile"},
		AttrCacheHit:  map[string]any{"boolValue": false},
		"files":       map[string]any{"intValue": "42"},
		"ratio":       map[string]any{"doubleValue": 0.5},
		"tags": map[string]any{"arrayValue": map[string]any{"values": []any{
			map[string]any{"stringValue": "x"}, map[string]any{"stringValue": "y"},
		}}},
	}
	gotAttrs := attrMap(compile.Attributes)
	gotJSON, _ := json.Marshal(gotAttrs)
	wantJSON, _ := json.Marshal(wantAttrs)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("attributes =\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if compile.Status.Message != "exit status 2" {
		t.Errorf("status message = %q", compile.Status.Message)
	}
	if len(compile.Events) != 1 || compile.Events[0].Name != "output" || compile.Events[0].TimeUnixNano != "1748779200020000000" {
		t.Errorf("events = %+v", compile.Events)
	}
}

// TestWriteOTLPJSONIsValidProtobufJSON parses the output with the official
// OTLP protobuf types, which rejects misspelt fields and wrong value types.
// (Ids are hex in OTLP/JSON but base64 in plain protobuf JSON, so ids are
// checked by the round-trip test instead.)
func TestWriteOTLPJSONIsValidProtobufJSON(t *testing.T) {
	spans := testSpans()
	spans = append(spans, tracetest.SpanStub{
		Name:        "odd values",
		SpanContext: spanContext(9),
		StartTime:   base,
		EndTime:     base.Add(ms(1)),
		Attributes: []attribute.KeyValue{
			attribute.Float64("nan", math.NaN()),
			attribute.Float64("inf", math.Inf(-1)),
			attribute.BoolSlice("bools", []bool{true}),
			attribute.Int64Slice("ints", []int64{-1, 1 << 60}),
			attribute.Float64Slice("floats", []float64{1.5}),
		},
		Links: []sdktrace.Link{{SpanContext: spanContext(1), Attributes: []attribute.KeyValue{attribute.String("why", "retry")}}},
	}.Snapshot())
	var buf bytes.Buffer
	if err := WriteOTLPJSON(&buf, spans); err != nil {
		t.Fatal(err)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := protojson.Unmarshal(buf.Bytes(), &req); err != nil {
		t.Fatalf("protojson rejects output: %v\n%s", err, buf.Bytes())
	}
	var n int
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				n++
				if s.GetName() == "odd values" {
					attrs := map[string]float64{}
					for _, kv := range s.GetAttributes() {
						attrs[kv.GetKey()] = kv.GetValue().GetDoubleValue()
					}
					if !math.IsNaN(attrs["nan"]) || !math.IsInf(attrs["inf"], -1) {
						t.Errorf("non-finite doubles = %v", attrs)
					}
					if len(s.GetLinks()) != 1 {
						t.Errorf("links = %v", s.GetLinks())
					}
				}
				if s.GetName() == "go compile" && s.GetEndTimeUnixNano() != uint64(base.Add(ms(50)).UnixNano()) {
					t.Errorf("end time = %d", s.GetEndTimeUnixNano())
				}
			}
		}
	}
	if n != len(spans) {
		t.Errorf("protojson sees %d spans, want %d", n, len(spans))
	}
}

func TestWriteOTLPJSONDeterministicGrouping(t *testing.T) {
	resA := resource.NewSchemaless(attribute.String("service.name", "a"))
	resB := resource.NewSchemaless(attribute.String("service.name", "b"))
	mk := func(id uint64, res *resource.Resource, scope string) sdktrace.ReadOnlySpan {
		return tracetest.SpanStub{
			Name:                 "s",
			SpanContext:          spanContext(id),
			StartTime:            base,
			EndTime:              base.Add(ms(1)),
			Resource:             res,
			InstrumentationScope: instrumentation.Scope{Name: scope},
		}.Snapshot()
	}
	spans := []sdktrace.ReadOnlySpan{
		mk(1, resB, "y"), mk(2, resA, "y"), mk(3, resB, "x"), mk(4, resA, "x"), mk(5, resA, "x"),
	}
	var first bytes.Buffer
	if err := WriteOTLPJSON(&first, spans); err != nil {
		t.Fatal(err)
	}
	// Every rotation of the input must give the same bytes.
	for i := range spans {
		rotated := append(slices.Clone(spans[i:]), spans[:i]...)
		var buf bytes.Buffer
		if err := WriteOTLPJSON(&buf, rotated); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), first.Bytes()) {
			t.Fatalf("rotation %d differs:\n%s\nvs\n%s", i, buf.Bytes(), first.Bytes())
		}
	}

	var got decoded
	if err := json.Unmarshal(first.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var layout []string
	for _, rs := range got.ResourceSpans {
		svc := attrMap(rs.Resource.Attributes)["service.name"].(map[string]any)["stringValue"].(string)
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				layout = append(layout, svc+"/"+ss.Scope.Name+"/"+s.SpanID[len(s.SpanID)-1:])
			}
		}
	}
	want := []string{"a/x/4", "a/x/5", "a/y/2", "b/x/3", "b/y/1"}
	if !slices.Equal(layout, want) {
		t.Errorf("layout = %q, want %q", layout, want)
	}
}

func TestWriteOTLPJSONEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteOTLPJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "{\"resourceSpans\":[]}\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
