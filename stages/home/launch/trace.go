package launch

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trace is a start recorded as spans, in the launcher's own minimal span
// model: the OpenTelemetry SDK would cost the launch path more than the
// launch itself (see cmd/piship-launch). The root span is the whole start;
// every phase is a child span from the previous phase's end to its own, so
// the children tile the root. PISHIP_DEBUG_TIMING prints them, and
// WriteOTLPJSON writes them as an OTLP/JSON ExportTraceServiceRequest that
// any OTLP/HTTP receiver (Jaeger's :4318/v1/traces) accepts as is.
type Trace struct {
	TraceID [16]byte
	Parent  [8]byte // the remote parent from TRACEPARENT; zero when none
	Root    [8]byte
	Sampled bool // from TRACEPARENT's flags; true when the trace starts here
	Start   time.Time
	End     time.Time
	Phases  []Phase
	Attrs   map[string]string
	// Notes are what the start decided (search tools, compile cache,
	// smoke test), Counters what it counted (search_tools_bytes_read):
	// PISHIP_DEBUG_TIMING's JSON line carries both.
	Notes    map[string]string
	Counters map[string]int64

	ids []byte // random bytes for span IDs, read once (one getrandom per start)
}

// NewTrace starts a trace now, as a child of traceparent (W3C
// "00-<trace>-<span>-<flags>") when that is valid, else as a new trace.
func NewTrace(traceparent string) *Trace {
	t := &Trace{Start: time.Now(), Sampled: true, Attrs: map[string]string{}}
	if tid, pid, flags, ok := parseTraceparent(traceparent); ok {
		t.TraceID, t.Parent, t.Sampled = tid, pid, flags&1 == 1
	} else {
		rand.Read(t.TraceID[:])
	}
	t.ids = make([]byte, 8*9)
	rand.Read(t.ids)
	copy(t.Root[:], t.ids)
	t.ids = t.ids[8:]
	return t
}

// Note records a decision of the start.
func (t *Trace) Note(key, value string) {
	if t.Notes == nil {
		t.Notes = map[string]string{}
	}
	t.Notes[key] = value
}

// Count records a counter of the start.
func (t *Trace) Count(key string, n int64) {
	if t.Counters == nil {
		t.Counters = map[string]int64{}
	}
	t.Counters[key] += n
}

// mark ends the current phase (span) at now.
func (t *Trace) mark(name string) {
	p := Phase{Name: name, At: time.Since(t.Start)}
	if n := len(t.Phases); n > 0 {
		p.Start = t.Phases[n-1].At
	}
	if len(t.ids) < len(p.SpanID) {
		t.ids = make([]byte, 8*8)
		rand.Read(t.ids)
	}
	t.ids = t.ids[copy(p.SpanID[:], t.ids):]
	t.Phases = append(t.Phases, p)
}

// Traceparent is the W3C header naming the root span, for node's
// environment, so a traced runtime continues this trace.
func (t *Trace) Traceparent() string {
	flags := "00"
	if t.Sampled {
		flags = "01"
	}
	return "00-" + hex.EncodeToString(t.TraceID[:]) + "-" + hex.EncodeToString(t.Root[:]) + "-" + flags
}

func parseTraceparent(s string) (tid [16]byte, pid [8]byte, flags byte, ok bool) {
	p := strings.Split(strings.TrimSpace(s), "-")
	if len(p) < 4 || len(p[0]) != 2 || p[0] == "ff" || len(p[1]) != 32 || len(p[2]) != 16 || len(p[3]) != 2 {
		return tid, pid, 0, false
	}
	if _, err := hex.Decode(tid[:], []byte(p[1])); err != nil || tid == [16]byte{} {
		return tid, pid, 0, false
	}
	if _, err := hex.Decode(pid[:], []byte(p[2])); err != nil || pid == [8]byte{} {
		return tid, pid, 0, false
	}
	f, err := strconv.ParseUint(p[3], 16, 8)
	if err != nil {
		return tid, pid, 0, false
	}
	return tid, pid, byte(f), true
}

// Format writes one line per span for PISHIP_DEBUG_TIMING: when each phase
// ended and how long it took, then the whole start, one line per note,
// and one piship-timing/v1 JSON line (command "launch": the phases with
// their start offsets, the counters and the notes). The notes it adds
// itself (launcher_build, the first 12 hex of the SHA-256 of the running
// launcher, and piship_version) cost a read of the launcher's file, so
// only a debugging start pays it.
func (t *Trace) Format(w io.Writer) {
	FormatPhases(w, t.Phases)
	total := time.Duration(0)
	if !t.End.IsZero() {
		total = t.End.Sub(t.Start)
		fmt.Fprintf(w, "launch total: %.1f ms\n", ms(total))
	}
	if b := LauncherBuild(); b != "" {
		t.Note("launcher_build", b)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		t.Note("piship_version", bi.Main.Version)
	}
	for _, k := range slices.Sorted(maps.Keys(t.Notes)) {
		fmt.Fprintf(w, "launch note %s: %s\n", k, t.Notes[k])
	}
	type phaseJSON struct {
		Name    string  `json:"name"`
		StartMs float64 `json:"startMs"`
		Ms      float64 `json:"ms"`
	}
	doc := struct {
		Schema   string            `json:"schema"`
		Command  string            `json:"command"`
		TotalMs  float64           `json:"totalMs"`
		Phases   []phaseJSON       `json:"phases"`
		Counters map[string]int64  `json:"counters"`
		Notes    map[string]string `json:"notes"`
	}{Schema: "piship-timing/v1", Command: "launch", TotalMs: ms(total), Phases: []phaseJSON{}, Counters: t.Counters, Notes: t.Notes}
	if doc.Counters == nil {
		doc.Counters = map[string]int64{}
	}
	for _, p := range t.Phases {
		doc.Phases = append(doc.Phases, phaseJSON{p.Name, ms(p.Start), ms(p.At - p.Start)})
	}
	line, _ := json.Marshal(doc)
	fmt.Fprintf(w, "%s\n", line)
}

// LauncherBuild is the running launcher's build stamp: the first 12 hex
// digits of its executable's SHA-256 ("" when it cannot be read). piship
// install keeps the launcher it writes, so the stamp says which build the
// shims run.
func LauncherBuild() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	sum, _, err := hashPath(exe)
	if err != nil {
		return ""
	}
	return sum[:12]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// OTLP/JSON (the protobuf JSON mapping of ExportTraceServiceRequest).
type otlpKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue string `json:"stringValue"`
	} `json:"value"`
}

type otlpSpan struct {
	TraceID      string   `json:"traceId"`
	SpanID       string   `json:"spanId"`
	ParentSpanID string   `json:"parentSpanId,omitempty"`
	Name         string   `json:"name"`
	Kind         int      `json:"kind"`
	Start        string   `json:"startTimeUnixNano"`
	End          string   `json:"endTimeUnixNano"`
	Attributes   []otlpKV `json:"attributes,omitempty"`
}

func kvs(m map[string]string) []otlpKV {
	var out []otlpKV
	for _, k := range slices.Sorted(maps.Keys(m)) {
		var kv otlpKV
		kv.Key, kv.Value.StringValue = k, m[k]
		out = append(out, kv)
	}
	return out
}

func nanos(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }

// WriteOTLPJSON writes the trace: the root span "launch <id>" and one
// child span per phase, service.name piship-launch.
func (t *Trace) WriteOTLPJSON(w io.Writer, id string) error {
	end := t.End
	if end.IsZero() {
		end = time.Now()
	}
	tid := hex.EncodeToString(t.TraceID[:])
	root := otlpSpan{TraceID: tid, SpanID: hex.EncodeToString(t.Root[:]), Name: "launch " + id, Kind: 1,
		Start: nanos(t.Start), End: nanos(end), Attributes: kvs(t.Attrs)}
	if t.Parent != ([8]byte{}) {
		root.ParentSpanID = hex.EncodeToString(t.Parent[:])
	}
	spans := []otlpSpan{root}
	for _, p := range t.Phases {
		spans = append(spans, otlpSpan{TraceID: tid, SpanID: hex.EncodeToString(p.SpanID[:]), ParentSpanID: root.SpanID,
			Name: p.Name, Kind: 1, Start: nanos(t.Start.Add(p.Start)), End: nanos(t.Start.Add(p.At))})
	}
	var svc otlpKV
	svc.Key, svc.Value.StringValue = "service.name", "piship-launch"
	req := map[string]any{"resourceSpans": []any{map[string]any{
		"resource":   map[string]any{"attributes": []otlpKV{svc}},
		"scopeSpans": []any{map[string]any{"scope": map[string]string{"name": "piship.dev/piship/stages/home/launch"}, "spans": spans}},
	}}}
	enc := json.NewEncoder(w)
	return enc.Encode(req)
}

// Export writes the trace to the file PISHIP_TRACE_FILE names, when set
// (replacing it: one start per file).
func (t *Trace) Export(id string) error {
	path := os.Getenv(EnvTraceFile)
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := t.WriteOTLPJSON(f, id); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
