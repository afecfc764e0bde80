package main

// End-to-end test: a real Jaeger v2 (cmd/jaeger of module
// github.com/jaegertracing/jaeger v1.76.0, the tag of Jaeger v2.13.0, pinned
// in testdata/jaeger/go.mod: the OpenTelemetry Collector-based binary a
// developer runs today) receives the spans of a piship run over OTLP, and the
// trace is read back through the HTTP query API of its jaeger_query
// extension (/api/traces, /api/services: the API Jaeger's UI reads).
//
// The binary is built by `make jaeger-bin`; the test never builds it and never
// skips: a missing binary, or one that is not that Jaeger, is a failure
// telling the developer what to run.

import (
	"bytes"
	"context"
	"crypto/rand"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/tracing"
)

const (
	// jaegerVersion is the module version of github.com/jaegertracing/jaeger;
	// its cmd/jaeger is Jaeger v2 (v2.13.0).
	jaegerVersion = "v1.76.0"
	// jaegerMain is the package of Jaeger v2's binary.
	jaegerMain = "github.com/jaegertracing/jaeger/cmd/jaeger"

	// jaegerStartTimeout bounds how long Jaeger may take to open its ports.
	jaegerStartTimeout = 30 * time.Second
	// jaegerTraceTimeout bounds how long spans may take to become queryable
	// after runMain returned (they are stored asynchronously).
	jaegerTraceTimeout = 30 * time.Second
	jaegerPollInterval = 100 * time.Millisecond
)

const jaegerE2EPipeline = `pipeline "e2e" {
  stage "exec" "one" {
    command = ["true"]
  }
  stage "exec" "two" {
    command    = ["sh", "-c", "echo hi"]
    depends_on = [stage.one]
    inputs     = ["p.hcl"]
    cache      = true
  }
  stage "digest" "three" {
    files = ["p.hcl"]
  }
}
`

// jaegerE2EStages are the stages of jaegerE2EPipeline; only two is
// cacheable, and each subtest starts with an empty cache, so it misses.
var jaegerE2EStages = []struct {
	kind, name string
	cacheable  bool
}{
	{"exec", "one", false},
	{"exec", "two", true},
	{"digest", "three", false},
}

func TestJaegerE2E(t *testing.T) {
	j := startJaeger(t, jaegerBinary(t))

	// Each protocol piship exports over; http/json is tracing's own
	// OTLP/JSON encoder (tracing.JSONExporter, what the end-user installer
	// sends), which Jaeger takes on the HTTP port.
	for _, p := range []struct{ protocol, endpoint string }{
		{"http/protobuf", j.otlpHTTP}, {"grpc", j.otlpGRPC}, {"http/json", j.otlpHTTP},
	} {
		t.Run(p.protocol, func(t *testing.T) {
			tr := runPipelineIntoJaeger(t, j, map[string]string{
				"OTEL_EXPORTER_OTLP_PROTOCOL": p.protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + p.endpoint,
			})
			root := checkJaegerPipelineTrace(t, tr)
			if refs := childOfRefs(root); len(refs) != 0 {
				t.Errorf("root span %q has CHILD_OF references %+v, want none (no TRACEPARENT)", root.OperationName, refs)
			}
		})
	}

	t.Run("traceparent", func(t *testing.T) {
		traceID := randomHex(t, 16)
		parentID := randomHex(t, 8)
		tr := runPipelineIntoJaeger(t, j, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpHTTP,
			"TRACEPARENT":                 "00-" + traceID + "-" + parentID + "-01",
		})
		if got := normTraceID(tr.TraceID); got != traceID {
			t.Fatalf("Jaeger trace id = %s, want the TRACEPARENT trace id %s", got, traceID)
		}
		root := checkJaegerPipelineTrace(t, tr)
		refs := childOfRefs(root)
		if len(refs) != 1 {
			t.Fatalf("root span has CHILD_OF references %+v, want exactly one to %s/%s", root.References, traceID, parentID)
		}
		if got := normTraceID(refs[0].TraceID); got != traceID {
			t.Errorf("root span CHILD_OF trace id = %s, want %s", got, traceID)
		}
		if got := normSpanID(refs[0].SpanID); got != parentID {
			t.Errorf("root span CHILD_OF span id = %s, want the TRACEPARENT parent %s", got, parentID)
		}
	})
}

// A nested piship joins the trace under the exec stage that ran it, a
// stage's log lines are span events, and service.name follows
// OTEL_SERVICE_NAME in both runs (issue 15).
func TestJaegerE2ENestedRunEventsServiceName(t *testing.T) {
	j := startJaeger(t, jaegerBinary(t))
	self, err := os.Executable() // piship under PISHIP_TEST_MAIN=1 (TestMain)
	if err != nil {
		t.Fatal(err)
	}
	const service = "piship-e2e-nested"
	tr := runIntoJaeger(t, j, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpHTTP,
		"OTEL_SERVICE_NAME":           service,
	}, func(dir, traceFile string) ([]string, []string) {
		inner, innerTrace, outer := filepath.Join(dir, "inner.hcl"), filepath.Join(dir, "inner.json"), filepath.Join(dir, "outer.hcl")
		writeFile(t, dir, "inner.hcl", "pipeline \"inner\" {\n  stage \"exec\" \"hello\" { command = [\"true\"] }\n}\n")
		writeFile(t, dir, "outer.hcl", fmt.Sprintf(`pipeline "outer" {
  stage "exec" "talk" {
    command = ["sh", "-c", "echo first line; echo second line"]
    echo    = true
  }
  stage "exec" "nested" {
    command = [%q, "run", "--trace-file", %q, %q]
    env     = { PISHIP_TEST_MAIN = "1" }
  }
}
`, self, innerTrace, inner))
		return []string{"run", "--trace-file", traceFile, outer}, []string{innerTrace}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Jaeger trace %s:\n%s", tr.TraceID, describeJaegerTrace(tr))
		}
	})
	for id, p := range tr.Processes {
		if p.ServiceName != service {
			t.Errorf("process %s: service name %q, want OTEL_SERVICE_NAME %q", id, p.ServiceName, service)
		}
	}
	byName := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byName[s.OperationName] = s
	}
	nested, innerRoot := byName["exec nested"], byName["pipeline inner"]
	if refs := childOfRefs(innerRoot); nested.SpanID == "" || len(refs) != 1 || normSpanID(refs[0].SpanID) != normSpanID(nested.SpanID) {
		t.Errorf("inner run's root span references %+v, want the exec stage span %q (%s)", refs, "exec nested", nested.SpanID)
	}
	var lines []string
	for _, l := range byName["exec talk"].Logs {
		for _, f := range l.Fields {
			if f.Key == tracing.AttrLogLine {
				lines = append(lines, fmt.Sprint(f.Value))
			}
		}
	}
	if want := []string{"talk | first line", "talk | second line"}; strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("events of \"exec talk\": %q, want its log lines %q", lines, want)
	}
}

// A hello release: each smoke test is a child span of the smoke stage, the
// runtime and bundle cache lookups are spans, and the root span names what
// was released.
func TestJaegerE2EReleaseSpans(t *testing.T) {
	j := startJaeger(t, jaegerBinary(t))
	tr := runIntoJaeger(t, j, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlpHTTP,
		"PISHIP_PROGRESS":             "0",
	}, func(dir, traceFile string) ([]string, []string) {
		return []string{"release", "--trace-file", traceFile, copyDist(t, "hello")}, nil
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Jaeger trace %s:\n%s", tr.TraceID, describeJaegerTrace(tr))
		}
	})
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[normSpanID(s.SpanID)] = s
	}
	parentOf := func(s jaegerSpan) jaegerSpan {
		if refs := childOfRefs(s); len(refs) == 1 {
			return byID[normSpanID(refs[0].SpanID)]
		}
		return jaegerSpan{}
	}
	smoke, lookups := 0, map[string]bool{}
	for _, s := range tr.Spans {
		switch {
		case strings.HasPrefix(s.OperationName, "smoke ") && len(s.Tags) > 0:
			if _, isStage := tagValue(s, tracing.AttrStageName); isStage {
				continue // the stage span itself
			}
			smoke++
			if kind, _ := tagValue(parentOf(s), tracing.AttrStageKind); kind != "smoke" {
				t.Errorf("smoke test span %q: parent %q, want the smoke stage's span", s.OperationName, parentOf(s).OperationName)
			}
			if v, _ := tagValue(s, tracing.AttrVerdict); v != "passed" {
				t.Errorf("smoke test span %q: %s = %q, want passed", s.OperationName, tracing.AttrVerdict, v)
			}
		case s.OperationName == tracing.CacheLookupSpanName:
			// piship.cache.name is the cache engineer's AttrCacheName.
			if name, ok := tagValue(s, "piship.cache.name"); ok {
				lookups[name] = true
			}
		}
	}
	if smoke != 2 {
		t.Errorf("%d smoke test spans, want 2 (hello's smoke \"version\" and \"help\")", smoke)
	}
	for _, c := range []string{"runtime", "bundle"} {
		if !lookups[c] {
			t.Errorf("no %q span with piship.cache.name %q (caches looked up: %v)", tracing.CacheLookupSpanName, c, lookups)
		}
	}
	var root jaegerSpan
	for _, s := range tr.Spans {
		if s.OperationName == tracing.PipelineSpanName("release") {
			root = s
		}
	}
	checkTags(t, root, map[string]string{tracing.AttrPipeline: "release", tracing.AttrDistribution: "hello", tracing.AttrExitCode: "0"})
	if sum, _ := tagValue(root, tracing.AttrArchiveSHA256); len(sum) != 64 {
		t.Errorf("root span %s = %q, want the archive's sha256", tracing.AttrArchiveSHA256, sum)
	}
	if name, _ := tagValue(root, tracing.AttrReleaseName); !strings.HasPrefix(name, "hello-") {
		t.Errorf("root span %s = %q, want hello-<version>-<target>", tracing.AttrReleaseName, name)
	}
}

// The launcher records a start in its own span model and writes it as
// OTLP/JSON (PISHIP_TRACE_FILE); a real OTLP/HTTP receiver must take that
// file as it is, parent links and all.
func TestJaegerE2ELaunchTraceFile(t *testing.T) {
	j := startJaeger(t, jaegerBinary(t))
	traceID, parentID := randomHex(t, 16), randomHex(t, 8)
	tr := launch.NewTrace("00-" + traceID + "-" + parentID + "-01")
	tr.Phases = []launch.Phase{
		{Name: launch.PhaseGateAcquired, At: time.Millisecond, SpanID: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}},
		{Name: launch.PhaseLeaseHeld, Start: time.Millisecond, At: 2 * time.Millisecond, SpanID: [8]byte{8, 7, 6, 5, 4, 3, 2, 1}},
	}
	tr.End = tr.Start.Add(3 * time.Millisecond)
	path := filepath.Join(t.TempDir(), "launch.json")
	t.Setenv(launch.EnvTraceFile, path)
	if err := tr.Export("hello"); err != nil {
		t.Fatal(err)
	}
	want := readTraceFile(t, path)
	data, _ := os.ReadFile(path)
	resp, err := http.Post("http://"+j.otlpHTTP+"/v1/traces", "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/traces: HTTP %d: %s", resp.StatusCode, body)
	}
	got := j.waitForTrace(t, traceID, want)
	for _, sp := range got.Spans {
		if sp.OperationName == "launch hello" {
			if refs := childOfRefs(sp); len(refs) != 1 || normSpanID(refs[0].SpanID) != parentID {
				t.Fatalf("launch root span references %+v, want the TRACEPARENT parent %s", refs, parentID)
			}
			return
		}
	}
	t.Fatalf("no span \"launch hello\" in %s", describeJaegerTrace(got))
}

// runPipelineIntoJaeger writes jaegerE2EPipeline into a fresh directory, runs
// it through runMain with the given environment (OTLP export settings,
// TRACEPARENT), and returns the trace as Jaeger stores it once every span the
// run wrote to its --trace-file is queryable.
func runPipelineIntoJaeger(t *testing.T, j *jaegerInstance, env map[string]string) jaegerTrace {
	t.Helper()
	return runIntoJaeger(t, j, env, func(dir, traceFile string) ([]string, []string) {
		pipelinePath := filepath.Join(dir, "p.hcl")
		if err := os.WriteFile(pipelinePath, []byte(jaegerE2EPipeline), 0o644); err != nil {
			t.Fatal(err)
		}
		// Flags before the pipeline path, so this parses with the standard
		// flag package as well as with parsers that allow interspersed flags.
		return []string{"run", "--trace-file", traceFile, pipelinePath}, nil
	})
}

// runIntoJaeger runs the command setup writes into a fresh directory (its
// arguments, and the trace files of nested runs to wait for besides the
// run's own --trace-file) and returns the trace once Jaeger has all their
// spans.
func runIntoJaeger(t *testing.T, j *jaegerInstance, env map[string]string, setup func(dir, traceFile string) (args, nested []string)) jaegerTrace {
	t.Helper()
	dir := t.TempDir()
	traceFile := filepath.Join(dir, "trace.json")
	args, nested := setup(dir, traceFile)
	// digest's files are relative; run from the pipeline's directory whether
	// piship resolves them against the pipeline file or the working directory.
	t.Chdir(dir)

	// A fresh cache per run, so no stage is served from an earlier subtest.
	cacheDir := filepath.Join(dir, "cache")
	full := map[string]string{
		"XDG_CACHE_HOME":    cacheDir,
		"PISHIP_CACHE_HOME": cacheDir,
	}
	// Whatever the developer's shell says about OpenTelemetry must not leak
	// into the run: each of these could redirect, disable or rename the export.
	for _, k := range []string{
		"TRACEPARENT", "TRACESTATE",
		"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_PROPAGATORS",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	} {
		if _, set := env[k]; !set {
			t.Setenv(k, "") // registers the restore of the original value
			os.Unsetenv(k)
		}
	}
	for k, v := range env {
		full[k] = v
	}
	// runMain gets the same environment through getenv and, because the
	// OpenTelemetry exporters read the process environment themselves,
	// through os.Setenv.
	for k, v := range full {
		t.Setenv(k, v)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, args, &stdout, &stderr, os.Getenv)
	if code != 0 || t.Failed() {
		t.Logf("piship %s: exit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	if code != 0 {
		t.Fatalf("runMain exited %d, want 0", code)
	}

	fileSpans := readTraceFile(t, traceFile)
	for _, f := range nested {
		fileSpans = append(fileSpans, readTraceFile(t, f)...)
	}
	traceID := ""
	for _, s := range fileSpans {
		if traceID == "" {
			traceID = s.traceID
		} else if s.traceID != traceID {
			t.Fatalf("--trace-file %s holds spans of several traces (%s, %s)", traceFile, traceID, s.traceID)
		}
	}
	if want, ok := env["TRACEPARENT"]; ok {
		if wantID := strings.Split(want, "-")[1]; traceID != wantID {
			t.Fatalf("--trace-file trace id = %s, want the TRACEPARENT trace id %s", traceID, wantID)
		}
	}
	return j.waitForTrace(t, traceID, fileSpans)
}

// checkJaegerPipelineTrace asserts the shape of the e2e pipeline's trace and
// returns its root span.
func checkJaegerPipelineTrace(t *testing.T, tr jaegerTrace) jaegerSpan {
	t.Helper()
	byName := map[string][]jaegerSpan{}
	for _, s := range tr.Spans {
		byName[s.OperationName] = append(byName[s.OperationName], s)
		p, ok := tr.Processes[s.ProcessID]
		if !ok {
			t.Errorf("span %q: process %q not in the trace's processes %v", s.OperationName, s.ProcessID, tr.Processes)
		} else if p.ServiceName != "piship" {
			t.Errorf("span %q: service name %q, want %q", s.OperationName, p.ServiceName, "piship")
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Jaeger trace %s:\n%s", tr.TraceID, describeJaegerTrace(tr))
		}
	})

	roots := byName["pipeline e2e"]
	if len(roots) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(roots), "pipeline e2e")
	}
	root := roots[0]
	checkTags(t, root, map[string]string{tracing.AttrPipeline: "e2e"})

	for _, st := range jaegerE2EStages {
		name := st.kind + " " + st.name
		spans := byName[name]
		if len(spans) != 1 {
			t.Errorf("%d spans named %q, want exactly 1", len(spans), name)
			continue
		}
		s := spans[0]
		refs := childOfRefs(s)
		if len(refs) != 1 || normSpanID(refs[0].SpanID) != normSpanID(root.SpanID) ||
			normTraceID(refs[0].TraceID) != normTraceID(root.TraceID) {
			t.Errorf("span %q: CHILD_OF references %+v, want exactly one to the root span %s", name, refs, root.SpanID)
		}
		checkTags(t, s, map[string]string{
			tracing.AttrPipeline:  "e2e",
			tracing.AttrStageKind: st.kind,
			tracing.AttrStageName: st.name,
			tracing.AttrVerdict:   "passed",
		})
		v, ok := tagValue(s, tracing.AttrCacheHit)
		switch {
		case st.cacheable && (!ok || v != "false"):
			t.Errorf("span %q: piship.cache.hit = %q (present %v), want false on a cold cache", name, v, ok)
		case !st.cacheable && ok:
			t.Errorf("span %q: piship.cache.hit = %q on a stage that is not cacheable", name, v)
		}
		if _, ok := tagValue(s, tracing.AttrCacheKey); ok != st.cacheable {
			t.Errorf("span %q: piship.cache.key present = %v, want %v", name, ok, st.cacheable)
		}
	}
	return root
}

func checkTags(t *testing.T, s jaegerSpan, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := tagValue(s, k)
		if !ok {
			t.Errorf("span %q: no tag %q (want %q)", s.OperationName, k, v)
		} else if got != v {
			t.Errorf("span %q: tag %s = %q, want %q", s.OperationName, k, got, v)
		}
	}
}

func tagValue(s jaegerSpan, key string) (string, bool) {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value), true
		}
	}
	return "", false
}

func childOfRefs(s jaegerSpan) []jaegerRef {
	var out []jaegerRef
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			out = append(out, r)
		}
	}
	return out
}

func describeJaegerTrace(tr jaegerTrace) string {
	var b strings.Builder
	spans := append([]jaegerSpan(nil), tr.Spans...)
	sort.Slice(spans, func(i, k int) bool { return spans[i].OperationName < spans[k].OperationName })
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s span=%s process=%s refs=%+v\n", s.OperationName, s.SpanID, s.ProcessID, s.References)
		for _, kv := range s.Tags {
			fmt.Fprintf(&b, "    %s=%v (%s)\n", kv.Key, kv.Value, kv.Type)
		}
	}
	for id, p := range tr.Processes {
		fmt.Fprintf(&b, "  process %s: service %q\n", id, p.ServiceName)
	}
	return b.String()
}

// --- the --trace-file (OTLP JSON) ---------------------------------------------

type traceFileSpan struct {
	traceID, spanID, parentSpanID, name string
}

// readTraceFile reads the spans of an OTLP JSON file (one ExportTraceServiceRequest
// object, or several concatenated / one per line).
func readTraceFile(t *testing.T, path string) []traceFileSpan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading --trace-file: %v", err)
	}
	type otlpSpan struct {
		TraceID      string `json:"traceId"`
		SpanID       string `json:"spanId"`
		ParentSpanID string `json:"parentSpanId"`
		Name         string `json:"name"`
	}
	type otlpRequest struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	var spans []traceFileSpan
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var req otlpRequest
		if err := dec.Decode(&req); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("--trace-file %s is not OTLP JSON: %v\n%s", path, err, data)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans = append(spans, traceFileSpan{
						traceID:      normTraceID(s.TraceID),
						spanID:       normSpanID(s.SpanID),
						parentSpanID: s.ParentSpanID,
						name:         s.Name,
					})
				}
			}
		}
	}
	if len(spans) == 0 {
		t.Fatalf("--trace-file %s holds no spans:\n%s", path, data)
	}
	return spans
}

// --- Jaeger's HTTP query API --------------------------------------------------

type jaegerTracesResponse struct {
	Data   []jaegerTrace `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	Tags          []jaegerKV  `json:"tags"`
	Logs          []jaegerLog `json:"logs"` // span events
	ProcessID     string      `json:"processID"`
}

type jaegerLog struct {
	Fields []jaegerKV `json:"fields"` // the event's attributes, and "event": its name
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type jaegerProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        []jaegerKV `json:"tags"`
}

// waitForTrace polls GET /api/traces/<id> until every span of want is there.
func (j *jaegerInstance) waitForTrace(t *testing.T, traceID string, want []traceFileSpan) jaegerTrace {
	t.Helper()
	url := "http://" + j.queryHTTP + "/api/traces/" + traceID
	deadline := time.Now().Add(jaegerTraceTimeout)
	var last string
	for {
		tr, status, body, err := getJaegerTrace(t.Context(), url)
		switch {
		case err != nil:
			last = err.Error()
		case status != http.StatusOK:
			last = fmt.Sprintf("HTTP %d: %s", status, body)
		default:
			missing := missingSpans(tr, want)
			if len(missing) == 0 {
				return tr
			}
			last = fmt.Sprintf("still missing spans %v; last HTTP 200: %s", missing, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s (%d spans in --trace-file) not complete in Jaeger after %v: %s", traceID, len(want), jaegerTraceTimeout, last)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("waiting for trace %s: %v", traceID, t.Context().Err())
		case <-j.exited:
			t.Fatalf("Jaeger exited while waiting for trace %s: %v", traceID, j.waitErr)
		case <-time.After(jaegerPollInterval):
		}
	}
}

func getJaegerTrace(ctx context.Context, url string) (tr jaegerTrace, status int, body []byte, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return tr, 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return tr, 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return tr, resp.StatusCode, body, err
	}
	var r jaegerTracesResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return tr, resp.StatusCode, body, fmt.Errorf("decoding %s: %w", body, err)
	}
	if len(r.Data) != 1 {
		return tr, resp.StatusCode, body, fmt.Errorf("%d traces in the response, want 1: %s", len(r.Data), body)
	}
	return r.Data[0], resp.StatusCode, body, nil
}

func missingSpans(tr jaegerTrace, want []traceFileSpan) []string {
	have := map[string]bool{}
	for _, s := range tr.Spans {
		have[normSpanID(s.SpanID)] = true
	}
	var missing []string
	for _, s := range want {
		if !have[s.spanID] {
			missing = append(missing, fmt.Sprintf("%s(%s)", s.name, s.spanID))
		}
	}
	return missing
}

// Jaeger's JSON model prints a 128-bit trace id whose high half is zero as 16
// hex digits, and ids without leading zeros in places; compare padded forms.
func normTraceID(s string) string { return padHex(s, 32) }
func normSpanID(s string) string  { return padHex(s, 16) }

func padHex(s string, n int) string {
	s = strings.ToLower(s)
	if len(s) < n {
		s = strings.Repeat("0", n-len(s)) + s
	}
	return s
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[0] |= 0x10 // never all zero, never a short form
	return hex.EncodeToString(b)
}

// --- running Jaeger -----------------------------------------------------------

// jaegerBinary locates the Jaeger binary built by `make jaeger-bin` and
// checks from its build information that it is Jaeger v2 (cmd/jaeger) of
// module version jaegerVersion: the v1 all-in-one takes no config file and
// would fail later with a less helpful message.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PISHIP_JAEGER_BIN")
	if bin == "" {
		// The same default as the Makefile's PISHIP_DEV_CACHE.
		cache := os.Getenv("PISHIP_DEV_CACHE")
		if cache == "" {
			base := os.Getenv("XDG_CACHE_HOME")
			if base == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					t.Fatalf("locating the Jaeger binary: %v; set PISHIP_JAEGER_BIN or PISHIP_DEV_CACHE", err)
				}
				base = filepath.Join(home, ".cache")
			}
			cache = filepath.Join(base, "piship-dev")
		}
		bin = filepath.Join(cache, "jaeger-"+jaegerVersion, "jaeger")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("Jaeger %s binary not found at %s (%v).\n"+
			"Run `make jaeger-bin` to build it (or set PISHIP_JAEGER_BIN to a Jaeger v2 binary: %s of %s).",
			jaegerVersion, bin, err, jaegerMain, jaegerVersion)
	}
	if main, version, err := jaegerBuild(bin); err != nil || main != jaegerMain || version != jaegerVersion {
		t.Fatalf("%s is not Jaeger v2 (%s of github.com/jaegertracing/jaeger %s): its build information says %s %s (%v).\n"+
			"Run `make jaeger-bin` to build it (PISHIP_JAEGER_BIN unset), or point PISHIP_JAEGER_BIN at that binary.",
			bin, jaegerMain, jaegerVersion, main, version, err)
	}
	return bin
}

// jaegerBuild reads a Go binary's main package and the version of the
// github.com/jaegertracing/jaeger module it was built from.
func jaegerBuild(bin string) (main, version string, err error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", "", err
	}
	if bi.Main.Path == "github.com/jaegertracing/jaeger" {
		return bi.Path, bi.Main.Version, nil
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/jaegertracing/jaeger" {
			return bi.Path, d.Version, nil
		}
	}
	return bi.Path, "", fmt.Errorf("no github.com/jaegertracing/jaeger module in it")
}

type jaegerInstance struct {
	otlpGRPC, otlpHTTP, queryHTTP, queryGRPC string // 127.0.0.1:port
	exited                                   chan struct{}
	waitErr                                  error // set before exited is closed
}

// lockedBuffer collects the Jaeger process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startJaeger runs Jaeger v2 with a configuration of in-memory storage on
// free loopback ports (jaegerConfig) and waits until its query API and OTLP
// receivers accept connections. It is stopped when the test ends; its output
// and configuration are logged if the test failed.
func startJaeger(t *testing.T, bin string) *jaegerInstance {
	t.Helper()
	// A free port found by listening on :0 can be taken by someone else
	// before Jaeger binds it; retry with new ports in that (rare) case.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		j, args, out, err := tryStartJaeger(t, bin)
		if err == nil {
			return j
		}
		if attempt < attempts && strings.Contains(out.String(), "address already in use") {
			t.Logf("Jaeger attempt %d: a port was taken, retrying: %v", attempt, err)
			continue
		}
		var config []byte
		if len(args) == 2 {
			config, _ = os.ReadFile(strings.TrimPrefix(args[1], "file:"))
		}
		t.Fatalf("starting Jaeger: %v\n%s %s\nconfiguration:\n%s\noutput:\n%s", err, bin, strings.Join(args, " "), config, out.String())
	}
}

// jaegerConfig is a Jaeger v2 configuration (an OpenTelemetry Collector
// configuration with Jaeger's extensions) of what the tests need and nothing
// else: OTLP/gRPC and OTLP/HTTP in, memory storage, the query API out (HTTP:
// /api/traces, /api/services; and gRPC), every listener on 127.0.0.1 at the
// given host:port, so nothing collides with a Jaeger already running on the
// standard ports (4317, 4318, 16686, 16685). Nothing that is not listed under
// service.extensions or service.pipelines is started.
func jaegerConfig(otlpGRPC, otlpHTTP, queryHTTP, queryGRPC string) string {
	return fmt.Sprintf(`# Jaeger v2 (cmd/jaeger of github.com/jaegertracing/jaeger %s), written by
# cmd/piship/jaeger_e2e_test.go.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    # The collector's own Prometheus endpoint defaults to :8888; none.
    metrics:
      level: none
    logs:
      level: info

extensions:
  jaeger_storage:
    backends:
      e2e_store:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: e2e_store
    # Otherwise jaeger_query traces itself and exports to whatever
    # OTEL_EXPORTER_OTLP_* says (default localhost:4318).
    enable_tracing: false
    http:
      endpoint: %q
    grpc:
      endpoint: %q

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %q
      http:
        endpoint: %q

exporters:
  jaeger_storage_exporter:
    trace_storage: e2e_store
`, jaegerVersion, queryHTTP, queryGRPC, otlpGRPC, otlpHTTP)
}

func tryStartJaeger(t *testing.T, bin string) (*jaegerInstance, []string, *lockedBuffer, error) {
	ports, err := freeLoopbackPorts(4)
	if err != nil {
		return nil, nil, &lockedBuffer{}, err
	}
	addr := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	j := &jaegerInstance{
		otlpGRPC:  addr(ports[0]),
		otlpHTTP:  addr(ports[1]),
		queryHTTP: addr(ports[2]),
		queryGRPC: addr(ports[3]),
		exited:    make(chan struct{}),
	}

	config := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(config, []byte(jaegerConfig(j.otlpGRPC, j.otlpHTTP, j.queryHTTP, j.queryGRPC)), 0o644); err != nil {
		return nil, nil, &lockedBuffer{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	args := []string{"--config", "file:" + config}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = jaegerEnv()
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second // then SIGKILL
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, args, out, err
	}
	go func() {
		j.waitErr = cmd.Wait()
		close(j.exited)
	}()
	stop := func() {
		cancel()
		<-j.exited
	}

	if err := j.waitReady(t.Context()); err != nil {
		stop()
		return nil, args, out, err
	}
	t.Logf("Jaeger v2 (cmd/jaeger of %s): OTLP gRPC %s, OTLP HTTP %s, UI/query http://%s", jaegerVersion, j.otlpGRPC, j.otlpHTTP, j.queryHTTP)
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			data, _ := os.ReadFile(config)
			t.Logf("Jaeger configuration %s:\n%s\nJaeger output:\n%s", config, data, out.String())
		}
	})
	return j, args, out, nil
}

// jaegerEnv is the test's environment without OTEL_* variables, which would
// otherwise configure Jaeger's own telemetry, and without PISHIP_JAEGER_*.
func jaegerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "PISHIP_JAEGER_") {
			env = append(env, kv)
		}
	}
	return env
}

func (j *jaegerInstance) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, jaegerStartTimeout)
	defer cancel()
	for {
		err := j.ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-j.exited:
			return fmt.Errorf("jaeger exited before it was ready: %v", j.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("jaeger not ready after %v: %v", jaegerStartTimeout, err)
		case <-time.After(jaegerPollInterval):
		}
	}
}

func (j *jaegerInstance) ready(ctx context.Context) error {
	for _, a := range []string{j.otlpGRPC, j.otlpHTTP} {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", a)
		if err != nil {
			return err
		}
		c.Close()
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+j.queryHTTP+"/api/services", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/services: %s", resp.Status)
	}
	return nil
}

// freeLoopbackPorts returns n distinct ports that were free on 127.0.0.1.
func freeLoopbackPorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
