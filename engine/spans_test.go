package engine

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// logKind writes one over-long line, then n numbered lines, the last
// without a newline (flush must still make it an event).
type logKind struct{}

func (logKind) Name() string            { return "log" }
func (logKind) Version() string         { return "1" }
func (logKind) Doc() string             { return "writes n log lines" }
func (logKind) Attrs() []stage.Attr     { return []stage.Attr{{Name: "n", Type: cty.Number}} }
func (logKind) Outputs() []stage.Output { return nil }
func (logKind) Run(_ context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	n, _ := inv.Config.GetAttr("n").AsBigFloat().Int64()
	fmt.Fprintf(inv.Log, "%s\n", strings.Repeat("é", tracing.MaxLogLineBytes)) // 2 bytes a rune
	for i := range n {
		fmt.Fprintf(inv.Log, "line %d", i)
		if i < n-1 {
			fmt.Fprintln(inv.Log)
		}
	}
	return nil, nil
}

func tracedRun(t *testing.T, src string, reg *stage.Registry) (*Result, []sdktrace.ReadOnlySpan, *bytes.Buffer) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	var log bytes.Buffer
	res, err := Run(context.Background(), mustParse(t, src, reg), Options{Parallelism: 1, Tracer: tp.Tracer("t"), Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	return res, sr.Ended(), &log
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	t.Fatalf("no span %q", name)
	return nil
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A stage's log lines are events on its span, at most MaxLogEvents of at
// most MaxLogLineBytes, with the rest counted; the log itself still gets
// every line.
func TestStageLogLinesAreBoundedSpanEvents(t *testing.T) {
	_, spans, log := tracedRun(t, `
pipeline "p" {
  stage "log" "chatty" { n = 200 }
  stage "log" "quiet" { n = 3 }
}`, stage.NewRegistry(logKind{}))

	chatty := spanNamed(t, spans, "log chatty")
	ev := chatty.Events()
	if len(ev) != tracing.MaxLogEvents {
		t.Fatalf("%d events, want %d", len(ev), tracing.MaxLogEvents)
	}
	first := map[attribute.Key]attribute.Value{}
	for _, kv := range ev[0].Attributes {
		first[kv.Key] = kv.Value
	}
	if got := first[tracing.AttrLogLine].AsString(); len(got) != tracing.MaxLogLineBytes || got != strings.Repeat("é", tracing.MaxLogLineBytes/2) {
		t.Errorf("long line recorded as %d bytes, want %d whole characters", len(got), tracing.MaxLogLineBytes)
	}
	if !first[tracing.AttrLogTruncated].AsBool() {
		t.Errorf("long line not marked %s", tracing.AttrLogTruncated)
	}
	if got := ev[1].Attributes[0].Value.AsString(); ev[1].Name != tracing.LogEventName || got != "line 0" {
		t.Errorf("second event %q %q, want %q %q", ev[1].Name, got, tracing.LogEventName, "line 0")
	}
	// 201 lines written, 128 recorded.
	if got := attrs(chatty)[tracing.AttrEventsDropped].AsInt64(); got != 201-tracing.MaxLogEvents {
		t.Errorf("%s = %d, want %d", tracing.AttrEventsDropped, got, 201-tracing.MaxLogEvents)
	}
	if !strings.Contains(log.String(), "line 199\n") || strings.Count(log.String(), "\n") != 201+4 {
		t.Errorf("the log lost lines: %d lines", strings.Count(log.String(), "\n"))
	}

	quiet := spanNamed(t, spans, "log quiet")
	var lines []string
	for _, e := range quiet.Events() {
		lines = append(lines, e.Attributes[0].Value.AsString())
	}
	if len(lines) != 4 || lines[3] != "line 2" {
		t.Errorf("quiet events %q, want the long line then line 0..2 (the last, unterminated, too)", lines)
	}
	if _, ok := attrs(quiet)[tracing.AttrEventsDropped]; ok {
		t.Errorf("%s set with nothing dropped", tracing.AttrEventsDropped)
	}
}

// Stages that do not run still get a zero-length span saying why, and the
// timing summary leaves them out.
func TestSkippedAndNotStartedStagesHaveSpans(t *testing.T) {
	res, spans, _ := tracedRun(t, `
pipeline "p" {
  stage "sleep" "a" {}
  stage "sleep" "b" {
    when = stage.a.value == "nope"
  }
  stage "fail" "c" {}
  stage "sleep" "d" { in = stage.c.value }
  stage "sleep" "e" { in = stage.d.value }
  stage "sleep" "f" {}
  verdicts = [stage.a, stage.b, stage.c, stage.d, stage.e]
}`, testRegistry(newRecorder()))
	if res.Err() == nil {
		t.Fatal("the run passed; c should fail")
	}
	for _, w := range []struct{ name, verdict, reason string }{
		{"sleep b", tracing.VerdictSkipped, "when is false"},
		{"sleep d", tracing.VerdictNotStarted, "dependency c failed"},
		{"sleep e", tracing.VerdictNotStarted, "dependency d did not start"},
		{"sleep f", tracing.VerdictNotStarted, "run stopping"},
	} {
		s := spanNamed(t, spans, w.name)
		a := attrs(s)
		if a[tracing.AttrVerdict].AsString() != w.verdict || a[tracing.AttrSkipReason].AsString() != w.reason {
			t.Errorf("%s: verdict %q reason %q, want %q %q", w.name, a[tracing.AttrVerdict].AsString(), a[tracing.AttrSkipReason].AsString(), w.verdict, w.reason)
		}
		if a[tracing.AttrStageName].AsString() != strings.Fields(w.name)[1] || s.EndTime() != s.StartTime() {
			t.Errorf("%s: stage name %q, length %s; want its name and zero length", w.name, a[tracing.AttrStageName].AsString(), s.EndTime().Sub(s.StartTime()))
		}
		if s.Status().Code == codes.Error {
			t.Errorf("%s: error status on a stage that did not run", w.name)
		}
	}
	tm := tracing.Summarize(spans, "p", nil)
	if len(tm.Lines) != 2 || !strings.HasPrefix(tm.Lines[0], "p a: ") && !strings.HasPrefix(tm.Lines[1], "p a: ") {
		t.Errorf("timing lines %q, want only a and c (the stages that ran)", tm.Lines)
	}
}
