package tracing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// The read side of the OTLP/JSON mapping. It has its own structs because
// readers must be lenient where WriteOTLPJSON is strict: the protobuf JSON
// mapping lets int64 and fixed64 be numbers or strings, and other writers
// (piship-launch, collectors' file exporters) use both.

type readTraces struct {
	ResourceSpans *[]readResourceSpans `json:"resourceSpans"`
}

type readResourceSpans struct {
	Resource struct {
		Attributes []readKeyValue `json:"attributes"`
	} `json:"resource"`
	ScopeSpans []struct {
		Scope struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"scope"`
		Spans []readSpan `json:"spans"`
	} `json:"scopeSpans"`
	SchemaURL string `json:"schemaUrl"`
}

type readSpan struct {
	TraceID           string          `json:"traceId"`
	SpanID            string          `json:"spanId"`
	ParentSpanID      string          `json:"parentSpanId"`
	Name              string          `json:"name"`
	Kind              int             `json:"kind"`
	StartTimeUnixNano json.RawMessage `json:"startTimeUnixNano"`
	EndTimeUnixNano   json.RawMessage `json:"endTimeUnixNano"`
	Attributes        []readKeyValue  `json:"attributes"`
	Status            struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"status"`
}

type readKeyValue struct {
	Key   string       `json:"key"`
	Value readAnyValue `json:"value"`
}

type readAnyValue struct {
	StringValue *string          `json:"stringValue"`
	BoolValue   *bool            `json:"boolValue"`
	IntValue    *json.Number     `json:"intValue"`
	DoubleValue *json.RawMessage `json:"doubleValue"`
	ArrayValue  *struct {
		Values []readAnyValue `json:"values"`
	} `json:"arrayValue"`
}

// ReadOTLPJSON reads a trace written by WriteOTLPJSON (or any OTLP/JSON
// ExportTraceServiceRequest) back into spans, so a trace file can be
// summarised by the same code as a live run. It keeps what the summaries
// use: names, ids and parents, times, attributes (strings, bools, numbers
// and arrays of them; other values become their JSON text), status and the
// resource. Events and links are not read.
func ReadOTLPJSON(r io.Reader) ([]sdktrace.ReadOnlySpan, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var doc readTraces
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON of an OTLP trace: %w", err)
	}
	if doc.ResourceSpans == nil {
		return nil, errors.New(`no "resourceSpans": not an OTLP/JSON trace (an ExportTraceServiceRequest)`)
	}
	var stubs tracetest.SpanStubs
	for _, rs := range *doc.ResourceSpans {
		var rattrs []attribute.KeyValue
		for _, kv := range rs.Resource.Attributes {
			rattrs = append(rattrs, kv.attribute())
		}
		res := resource.NewWithAttributes(rs.SchemaURL, rattrs...)
		for _, ss := range rs.ScopeSpans {
			scope := instrumentation.Scope{Name: ss.Scope.Name, Version: ss.Scope.Version}
			for i, s := range ss.Spans {
				stub, err := s.stub(res, scope)
				if err != nil {
					return nil, fmt.Errorf("span %d (%q): %w", i, s.Name, err)
				}
				stubs = append(stubs, stub)
			}
		}
	}
	return stubs.Snapshots(), nil
}

func (s readSpan) stub(res *resource.Resource, scope instrumentation.Scope) (tracetest.SpanStub, error) {
	tid, err := trace.TraceIDFromHex(s.TraceID)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("traceId %q is not 32 hex digits", s.TraceID)
	}
	sid, err := trace.SpanIDFromHex(s.SpanID)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("spanId %q is not 16 hex digits", s.SpanID)
	}
	var parent trace.SpanContext
	if s.ParentSpanID != "" {
		pid, err := trace.SpanIDFromHex(s.ParentSpanID)
		if err != nil {
			return tracetest.SpanStub{}, fmt.Errorf("parentSpanId %q is not 16 hex digits", s.ParentSpanID)
		}
		parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: pid})
	}
	start, err := unixNanoTime(s.StartTimeUnixNano)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("startTimeUnixNano: %w", err)
	}
	end, err := unixNanoTime(s.EndTimeUnixNano)
	if err != nil {
		return tracetest.SpanStub{}, fmt.Errorf("endTimeUnixNano: %w", err)
	}
	attrs := make([]attribute.KeyValue, 0, len(s.Attributes))
	for _, kv := range s.Attributes {
		attrs = append(attrs, kv.attribute())
	}
	var status sdktrace.Status
	switch s.Status.Code { // OTLP numbers: 1 OK, 2 ERROR (see otlpStatusOf)
	case 1:
		status.Code = codes.Ok
	case 2:
		status = sdktrace.Status{Code: codes.Error, Description: s.Status.Message}
	}
	return tracetest.SpanStub{
		Name:                 s.Name,
		SpanContext:          trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		Parent:               parent,
		SpanKind:             apiKind(s.Kind),
		StartTime:            start,
		EndTime:              end,
		Attributes:           attrs,
		Status:               status,
		Resource:             res,
		InstrumentationScope: scope,
	}, nil
}

// apiKind is otlpKind's inverse.
func apiKind(k int) trace.SpanKind {
	switch k {
	case 1:
		return trace.SpanKindInternal
	case 2:
		return trace.SpanKindServer
	case 3:
		return trace.SpanKindClient
	case 4:
		return trace.SpanKindProducer
	case 5:
		return trace.SpanKindConsumer
	}
	return trace.SpanKindUnspecified
}

// unixNanoTime reads a fixed64 timestamp, a JSON string or number.
func unixNanoTime(raw json.RawMessage) (time.Time, error) {
	if len(raw) == 0 {
		return time.Time{}, errors.New("missing")
	}
	n := strings.Trim(string(raw), `"`)
	ns, err := strconv.ParseInt(n, 10, 64)
	if err != nil || ns < 0 {
		return time.Time{}, fmt.Errorf("%s is not a count of nanoseconds since 1970", raw)
	}
	if ns == 0 {
		return time.Time{}, nil // unixNano's encoding of a zero time
	}
	return time.Unix(0, ns), nil
}

func (kv readKeyValue) attribute() attribute.KeyValue {
	k := attribute.Key(kv.Key)
	v := kv.Value
	switch {
	case v.StringValue != nil:
		return k.String(*v.StringValue)
	case v.BoolValue != nil:
		return k.Bool(*v.BoolValue)
	case v.IntValue != nil:
		if n, err := strconv.ParseInt(string(*v.IntValue), 10, 64); err == nil {
			return k.Int64(n)
		}
		return k.String(string(*v.IntValue))
	case v.DoubleValue != nil:
		return k.Float64(readDouble(*v.DoubleValue))
	case v.ArrayValue != nil:
		return arrayAttribute(k, v.ArrayValue.Values)
	}
	return k.String("")
}

// readDouble accepts a JSON number or the mapping's "NaN" and "Infinity"
// strings (what otlpDouble writes).
func readDouble(raw json.RawMessage) float64 {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "NaN":
			return math.NaN()
		case "Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	var f float64
	_ = json.Unmarshal(raw, &f)
	return f
}

// arrayAttribute keeps a homogeneous array of strings or bools typed, the
// only arrays piship writes; anything else becomes a string slice of the
// values' text.
func arrayAttribute(k attribute.Key, vals []readAnyValue) attribute.KeyValue {
	bools := make([]bool, 0, len(vals))
	strs := make([]string, 0, len(vals))
	for _, v := range vals {
		switch {
		case v.BoolValue != nil:
			bools = append(bools, *v.BoolValue)
			strs = append(strs, strconv.FormatBool(*v.BoolValue))
		case v.StringValue != nil:
			strs = append(strs, *v.StringValue)
		default:
			strs = append(strs, readKeyValue{Value: v}.attribute().Value.Emit())
		}
	}
	if len(bools) == len(vals) && len(vals) > 0 {
		return k.BoolSlice(bools)
	}
	return k.StringSlice(strs)
}
