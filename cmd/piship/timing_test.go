package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/tracing"
	"piship.dev/piship/tracing/phase"
)

// The timing the CLI prints must be exactly what the spans recorded: the
// test attaches its own tracetest.SpanRecorder and recomputes every figure.
func TestTimingEqualsRecordedSpans(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "in.txt", "x")
	p := writeFile(t, dir, "p.hcl", `pipeline "timed" {
  stage "exec" "fast" { command = ["true"] }
  stage "exec" "slow" { command = ["sh", "-c", "sleep 0.05"] }
  stage "exec" "join" {
    command = ["echo", stage.slow.stdout, stage.fast.stdout]
    inputs  = ["in.txt"]
    cache   = true
  }
  stage "digest" "hash" {
    files      = ["in.txt"]
    depends_on = [stage.join]
  }
}
`)
	rec := tracetest.NewSpanRecorder()
	code, _, stderr := cliTraced(t, []sdktrace.SpanProcessor{rec}, map[string]string{"PISHIP_DEBUG_TIMING": "1", "PISHIP_PROGRESS": "0"}, "run", p)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}

	var root sdktrace.ReadOnlySpan
	type stage struct {
		label, name, cache string
		start              time.Time
		ms                 int64
	}
	var got []stage
	for _, s := range rec.Ended() {
		if s.Name() == "pipeline timed" {
			root = s
		}
	}
	if root == nil {
		t.Fatal("no root span recorded")
	}
	for _, s := range rec.Ended() {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		name, ok := attrs[tracing.AttrStageName]
		if !ok || s.Name() == "cache lookup" {
			continue
		}
		if s.Parent().SpanID() != root.SpanContext().SpanID() {
			t.Errorf("span %s is not a child of the run span", s.Name())
		}
		c := "none"
		if hit, ok := attrs[tracing.AttrCacheHit]; ok {
			c = map[bool]string{true: "hit", false: "miss"}[hit.AsBool()]
		}
		got = append(got, stage{label: s.Name(), name: name.AsString(), cache: c, start: s.StartTime(),
			ms: s.EndTime().Sub(s.StartTime()).Round(time.Millisecond).Milliseconds()})
	}
	if len(got) != 4 {
		t.Fatalf("%d stage spans, want 4", len(got))
	}

	// Expected lines: longest first, ties by name.
	lines := append([]stage(nil), got...)
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].ms != lines[j].ms {
			return lines[i].ms > lines[j].ms
		}
		return lines[i].name < lines[j].name
	})
	var want []string
	for _, s := range lines {
		want = append(want, fmt.Sprintf("timed %s: %d ms", s.name, s.ms))
	}
	out := strings.Split(strings.TrimSpace(stderr), "\n")
	var printed []string
	var jsonLine string
	for _, l := range out {
		if strings.HasPrefix(l, "timed ") && strings.HasSuffix(l, " ms") {
			printed = append(printed, l)
		}
		if strings.HasPrefix(l, `{"schema":"piship-timing/v1"`) {
			jsonLine = l
		}
	}
	if strings.Join(printed, "\n") != strings.Join(want, "\n") {
		t.Fatalf("timing lines:\n%s\nwant (from recorded spans):\n%s", strings.Join(printed, "\n"), strings.Join(want, "\n"))
	}

	var j struct {
		Schema       string   `json:"schema"`
		Command      string   `json:"command"`
		TotalMs      int64    `json:"totalMs"`
		CriticalPath []string `json:"criticalPath"`
		Stages       []struct {
			Name    string `json:"name"`
			StartMs int64  `json:"startMs"`
			Ms      int64  `json:"ms"`
			Cache   string `json:"cache"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(jsonLine), &j); err != nil {
		t.Fatalf("timing JSON %q: %v", jsonLine, err)
	}
	if j.Command != "timed" || j.TotalMs != root.EndTime().Sub(root.StartTime()).Round(time.Millisecond).Milliseconds() {
		t.Fatalf("JSON header %+v, root span %v", j, root.EndTime().Sub(root.StartTime()))
	}
	byLabel := map[string]stage{}
	for _, s := range got {
		byLabel[s.label] = s
	}
	for _, js := range j.Stages {
		s, ok := byLabel[js.Name]
		if !ok {
			t.Fatalf("JSON names stage %q that has no span", js.Name)
		}
		startMs := s.start.Sub(root.StartTime()).Round(time.Millisecond).Milliseconds()
		if js.Ms != s.ms || js.StartMs != startMs || js.Cache != s.cache {
			t.Errorf("JSON %+v, span says ms=%d startMs=%d cache=%s", js, s.ms, startMs, s.cache)
		}
	}
	if len(j.Stages) != len(got) {
		t.Fatalf("JSON has %d stages, spans %d", len(j.Stages), len(got))
	}
	// slow (>= 50 ms) -> join -> hash is the heaviest path.
	if strings.Join(j.CriticalPath, ",") != "exec slow,exec join,digest hash" {
		t.Fatalf("critical path %v", j.CriticalPath)
	}
}

// An install's timing breaks its one stage into phases, each a child span
// of the stage, and the printed phase lines are those spans' durations.
func TestInstallTimingShowsPhases(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustRelease(t, env, dir)
	root := t.TempDir()
	env["PISHIP_INSTALL_HOME"], env["PISHIP_BIN_HOME"], env["PISHIP_STATE_HOME"] = root+"/i", root+"/b", root+"/s"
	env["PISHIP_DEBUG_TIMING"] = "1"

	rec := tracetest.NewSpanRecorder()
	code, _, stderr := cliTraced(t, []sdktrace.SpanProcessor{rec}, env, "install", dir+"/dist/releases/"+helloRelease+".tar.zst")
	if code != exitOK {
		t.Fatalf("install: exit %d\n%s", code, stderr)
	}
	var stage sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "install install" {
			stage = s
		}
	}
	if stage == nil {
		t.Fatal("no install stage span")
	}
	phases := map[string]int64{}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == phase.Attr && s.Parent().SpanID() == stage.SpanContext().SpanID() {
				phases[s.Name()] = s.EndTime().Sub(s.StartTime()).Round(time.Millisecond).Milliseconds()
			}
		}
	}
	for _, name := range []string{"keep launcher", "identify", "extract", "verify", "commit", "reclaim"} {
		ms, ok := phases[name]
		if !ok {
			t.Errorf("no %q phase under the install stage; phases: %v", name, phases)
			continue
		}
		if line := fmt.Sprintf("install install/%s: %d ms\n", name, ms); !strings.Contains(stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, stderr)
		}
	}
	// The JSON lists the same phases in the order they started.
	var timing struct {
		Stages []struct {
			Phases []struct {
				Name    string
				StartMs int64
			}
		}
	}
	i := strings.Index(stderr, `{"schema":"piship-timing/v1"`)
	if i < 0 {
		t.Fatalf("no timing JSON:\n%s", stderr)
	}
	line, _, _ := strings.Cut(stderr[i:], "\n")
	if err := json.Unmarshal([]byte(line), &timing); err != nil || len(timing.Stages) != 1 {
		t.Fatalf("timing JSON %s: %v", line, err)
	}
	got := timing.Stages[0].Phases
	if len(got) != len(phases) {
		t.Errorf("timing JSON has %d phases, the spans %d: %s", len(got), len(phases), line)
	}
	for j := range got {
		if _, ok := phases[got[j].Name]; !ok {
			t.Errorf("timing JSON phase %q has no span", got[j].Name)
		}
		if j > 0 && got[j].StartMs < got[j-1].StartMs {
			t.Errorf("timing JSON phases are not in start order: %s", line)
		}
	}
}
