package tracing

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The structs below mirror the OTLP/JSON encoding of
// ExportTraceServiceRequest (the protobuf JSON mapping, with trace and span
// ids as hex as OTLP/JSON requires). They are written by hand so that writing
// a trace file needs no protobuf dependency.

type otlpTraces struct {
	ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   otlpResource     `json:"resource"`
	ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	SchemaURL  string           `json:"schemaUrl,omitempty"`
}

type otlpResource struct {
	Attributes []otlpKeyValue `json:"attributes"`
}

type otlpScopeSpans struct {
	Scope     otlpScope  `json:"scope"`
	Spans     []otlpSpan `json:"spans"`
	SchemaURL string     `json:"schemaUrl,omitempty"`
}

type otlpScope struct {
	Name       string         `json:"name"`
	Version    string         `json:"version,omitempty"`
	Attributes []otlpKeyValue `json:"attributes,omitempty"`
}

type otlpSpan struct {
	TraceID                string         `json:"traceId"`
	SpanID                 string         `json:"spanId"`
	TraceState             string         `json:"traceState,omitempty"`
	ParentSpanID           string         `json:"parentSpanId,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
	Name                   string         `json:"name"`
	Kind                   int            `json:"kind"`
	StartTimeUnixNano      string         `json:"startTimeUnixNano"`
	EndTimeUnixNano        string         `json:"endTimeUnixNano"`
	Attributes             []otlpKeyValue `json:"attributes"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Events                 []otlpEvent    `json:"events"`
	DroppedEventsCount     uint32         `json:"droppedEventsCount,omitempty"`
	Links                  []otlpLink     `json:"links,omitempty"`
	DroppedLinksCount      uint32         `json:"droppedLinksCount,omitempty"`
	Status                 otlpStatus     `json:"status"`
}

type otlpEvent struct {
	TimeUnixNano           string         `json:"timeUnixNano"`
	Name                   string         `json:"name"`
	Attributes             []otlpKeyValue `json:"attributes"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
}

type otlpLink struct {
	TraceID                string         `json:"traceId"`
	SpanID                 string         `json:"spanId"`
	TraceState             string         `json:"traceState,omitempty"`
	Attributes             []otlpKeyValue `json:"attributes"`
	DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	Flags                  uint32         `json:"flags,omitempty"`
}

type otlpStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

type otlpKeyValue struct {
	Key   string       `json:"key"`
	Value otlpAnyValue `json:"value"`
}

// otlpAnyValue is a oneof: exactly one field is set (none for an empty
// value).
type otlpAnyValue struct {
	StringValue *string         `json:"stringValue,omitempty"`
	BoolValue   *bool           `json:"boolValue,omitempty"`
	IntValue    *string         `json:"intValue,omitempty"` // int64 is a JSON string in the protobuf mapping
	DoubleValue *otlpDouble     `json:"doubleValue,omitempty"`
	ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
	KvlistValue *otlpKvlist     `json:"kvlistValue,omitempty"`
	BytesValue  *[]byte         `json:"bytesValue,omitempty"` // base64, as the protobuf mapping requires
}

type otlpArrayValue struct {
	Values []otlpAnyValue `json:"values"`
}

type otlpKvlist struct {
	Values []otlpKeyValue `json:"values"`
}

// otlpDouble encodes non-finite values the way the protobuf JSON mapping
// does; encoding/json would refuse them and lose the whole file.
type otlpDouble float64

func (d otlpDouble) MarshalJSON() ([]byte, error) {
	f := float64(d)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(f)
}

// OTLP span flag bits (SpanFlags in trace.proto): the low byte holds the W3C
// trace flags; these say whether the parent is known to be remote.
const (
	spanFlagsHasIsRemote = 0x100
	spanFlagsIsRemote    = 0x200
)

// WriteOTLPJSON writes spans as one OTLP/JSON ExportTraceServiceRequest, the
// format collectors accept on /v1/traces with Content-Type application/json
// and that trace viewers import. Spans are grouped by resource, then by
// instrumentation scope, both in a deterministic order, and each group's
// spans are ordered by start time, then span id, so equal inputs give
// byte-identical output.
func WriteOTLPJSON(w io.Writer, spans []sdktrace.ReadOnlySpan) error {
	type resKey struct {
		attrs     attribute.Distinct
		schemaURL string
	}
	type scopeKey struct {
		res                      resKey
		name, version, schemaURL string
		attrs                    attribute.Distinct
	}
	type resGroup struct {
		key    resKey
		res    *resource.Resource
		scopes []scopeKey
	}
	resources := map[resKey]*resGroup{}
	scopes := map[scopeKey][]sdktrace.ReadOnlySpan{}
	scopeInfo := map[scopeKey]instrumentation.Scope{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := resKey{attrs: res.Equivalent(), schemaURL: res.SchemaURL()}
		rg, ok := resources[rk]
		if !ok {
			rg = &resGroup{key: rk, res: res}
			resources[rk] = rg
		}
		is := s.InstrumentationScope()
		sk := scopeKey{res: rk, name: is.Name, version: is.Version, schemaURL: is.SchemaURL, attrs: is.Attributes.Equivalent()}
		if _, ok := scopes[sk]; !ok {
			rg.scopes = append(rg.scopes, sk)
			scopeInfo[sk] = is
		}
		scopes[sk] = append(scopes[sk], s)
	}

	groups := make([]*resGroup, 0, len(resources))
	for _, rg := range resources {
		groups = append(groups, rg)
	}
	slices.SortFunc(groups, func(a, b *resGroup) int {
		return cmp.Or(cmp.Compare(a.res.String(), b.res.String()), cmp.Compare(a.key.schemaURL, b.key.schemaURL))
	})

	out := otlpTraces{ResourceSpans: make([]otlpResourceSpans, 0, len(groups))}
	for _, rg := range groups {
		slices.SortFunc(rg.scopes, func(a, b scopeKey) int {
			return cmp.Or(
				cmp.Compare(a.name, b.name),
				cmp.Compare(a.version, b.version),
				cmp.Compare(a.schemaURL, b.schemaURL),
				cmp.Compare(encodeSet(scopeInfo[a].Attributes), encodeSet(scopeInfo[b].Attributes)),
			)
		})
		rs := otlpResourceSpans{
			Resource:   otlpResource{Attributes: otlpAttributes(rg.res.Attributes())},
			ScopeSpans: make([]otlpScopeSpans, 0, len(rg.scopes)),
			SchemaURL:  rg.key.schemaURL,
		}
		for _, sk := range rg.scopes {
			group := scopes[sk]
			slices.SortFunc(group, compareSpans)
			is := scopeInfo[sk]
			ss := otlpScopeSpans{
				Scope: otlpScope{
					Name:       is.Name,
					Version:    is.Version,
					Attributes: otlpAttributesOmitEmpty(is.Attributes.ToSlice()),
				},
				Spans:     make([]otlpSpan, 0, len(group)),
				SchemaURL: is.SchemaURL,
			}
			for _, s := range group {
				ss.Spans = append(ss.Spans, otlpSpanOf(s))
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		out.ResourceSpans = append(out.ResourceSpans, rs)
	}

	// Encode to a buffer first so a failure never leaves half a document.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func encodeSet(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// compareSpans orders by start time, then span id, then trace id (span ids
// are only unique within a trace).
func compareSpans(a, b sdktrace.ReadOnlySpan) int {
	if c := a.StartTime().Compare(b.StartTime()); c != 0 {
		return c
	}
	as, bs := a.SpanContext().SpanID(), b.SpanContext().SpanID()
	if c := bytes.Compare(as[:], bs[:]); c != 0 {
		return c
	}
	at, bt := a.SpanContext().TraceID(), b.SpanContext().TraceID()
	return bytes.Compare(at[:], bt[:])
}

func otlpSpanOf(s sdktrace.ReadOnlySpan) otlpSpan {
	sc := s.SpanContext()
	span := otlpSpan{
		TraceID:                hexTraceID(sc.TraceID()),
		SpanID:                 hexSpanID(sc.SpanID()),
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc.TraceFlags(), s.Parent()),
		Name:                   s.Name(),
		Kind:                   otlpKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             otlpAttributes(s.Attributes()),
		DroppedAttributesCount: clampUint32(s.DroppedAttributes()),
		Events:                 make([]otlpEvent, 0, len(s.Events())),
		DroppedEventsCount:     clampUint32(s.DroppedEvents()),
		DroppedLinksCount:      clampUint32(s.DroppedLinks()),
		Status:                 otlpStatusOf(s.Status()),
	}
	if p := s.Parent().SpanID(); p.IsValid() {
		span.ParentSpanID = hexSpanID(p)
	}
	for _, e := range s.Events() {
		span.Events = append(span.Events, otlpEvent{
			TimeUnixNano:           unixNano(e.Time),
			Name:                   e.Name,
			Attributes:             otlpAttributes(e.Attributes),
			DroppedAttributesCount: clampUint32(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		span.Links = append(span.Links, otlpLink{
			TraceID:                hexTraceID(l.SpanContext.TraceID()),
			SpanID:                 hexSpanID(l.SpanContext.SpanID()),
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             otlpAttributes(l.Attributes),
			DroppedAttributesCount: clampUint32(l.DroppedAttributeCount),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		})
	}
	return span
}

// hexTraceID and hexSpanID encode ids as hex, as OTLP/JSON requires; an
// invalid (all-zero) id is written as "" like an unset protobuf bytes field.
func hexTraceID(id trace.TraceID) string {
	if !id.IsValid() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func hexSpanID(id trace.SpanID) string {
	if !id.IsValid() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	f := uint32(tf) | spanFlagsHasIsRemote
	if parent.IsRemote() {
		f |= spanFlagsIsRemote
	}
	return f
}

// otlpKind maps the API's span kind to OTLP's enum. The numbers coincide
// today; the switch keeps that an explicit decision rather than an accident.
func otlpKind(k trace.SpanKind) int {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	default:
		return 0
	}
}

// otlpStatusOf maps status codes; the API and OTLP number Ok and Error
// differently (API: Error=1, Ok=2; OTLP: OK=1, ERROR=2).
func otlpStatusOf(s sdktrace.Status) otlpStatus {
	switch s.Code {
	case codes.Ok:
		return otlpStatus{Code: 1}
	case codes.Error:
		return otlpStatus{Code: 2, Message: s.Description}
	default:
		return otlpStatus{}
	}
}

// unixNano writes a timestamp as the decimal string the protobuf mapping uses
// for fixed64; a zero or pre-epoch time becomes "0".
func unixNano(t time.Time) string {
	if t.IsZero() || t.Before(time.Unix(0, 0)) {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func clampUint32(n int) uint32 {
	switch {
	case n < 0:
		return 0
	case int64(n) > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(n)
}

// otlpAttributes returns a non-nil slice so consumers always find an array.
func otlpAttributes(kvs []attribute.KeyValue) []otlpKeyValue {
	out := make([]otlpKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, otlpKeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

func otlpAttributesOmitEmpty(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	return otlpAttributes(kvs)
}

func otlpValue(v attribute.Value) otlpAnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpAnyValue{BoolValue: &b}
	case attribute.INT64:
		return intValue(v.AsInt64())
	case attribute.FLOAT64:
		return doubleValue(v.AsFloat64())
	case attribute.STRING:
		s := v.AsString()
		return otlpAnyValue{StringValue: &s}
	case attribute.BOOLSLICE:
		return arrayOf(v.AsBoolSlice(), func(b bool) otlpAnyValue { return otlpAnyValue{BoolValue: &b} })
	case attribute.INT64SLICE:
		return arrayOf(v.AsInt64Slice(), intValue)
	case attribute.FLOAT64SLICE:
		return arrayOf(v.AsFloat64Slice(), doubleValue)
	case attribute.STRINGSLICE:
		return arrayOf(v.AsStringSlice(), func(s string) otlpAnyValue { return otlpAnyValue{StringValue: &s} })
	case attribute.SLICE:
		return arrayOf(v.AsSlice(), otlpValue)
	case attribute.BYTESLICE:
		b := v.AsByteSlice()
		if b == nil {
			b = []byte{} // encoding/json writes a nil slice as null
		}
		return otlpAnyValue{BytesValue: &b}
	case attribute.MAP:
		return otlpAnyValue{KvlistValue: &otlpKvlist{Values: otlpAttributes(v.AsMap())}}
	case attribute.EMPTY:
		return otlpAnyValue{}
	default:
		// A type newer than this code: keep the information as text rather
		// than dropping the attribute.
		s := v.Emit()
		return otlpAnyValue{StringValue: &s}
	}
}

func intValue(n int64) otlpAnyValue {
	s := strconv.FormatInt(n, 10)
	return otlpAnyValue{IntValue: &s}
}

func doubleValue(f float64) otlpAnyValue {
	d := otlpDouble(f)
	return otlpAnyValue{DoubleValue: &d}
}

func arrayOf[T any](vals []T, conv func(T) otlpAnyValue) otlpAnyValue {
	arr := &otlpArrayValue{Values: make([]otlpAnyValue, 0, len(vals))}
	for _, v := range vals {
		arr.Values = append(arr.Values, conv(v))
	}
	return otlpAnyValue{ArrayValue: arr}
}
