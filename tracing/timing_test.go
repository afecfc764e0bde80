package tracing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func TestSummarizeLines(t *testing.T) {
	tests := []struct {
		name  string
		spans []sdktrace.ReadOnlySpan
		want  []string
	}{
		{
			name: "longest first",
			spans: []sdktrace.ReadOnlySpan{
				stage(1, "go", "short", 0, ms(3), ""),
				stage(2, "go", "long", 0, ms(30), ""),
				stage(3, "go", "mid", 0, ms(10), ""),
			},
			want: []string{"build long: 30 ms", "build mid: 10 ms", "build short: 3 ms"},
		},
		{
			name: "rounding to nearest millisecond",
			spans: []sdktrace.ReadOnlySpan{
				stage(1, "go", "a", 0, 1499999*time.Nanosecond, ""),
				stage(2, "go", "b", 0, 1500000*time.Nanosecond, ""),
				stage(3, "go", "c", 0, 499999*time.Nanosecond, ""),
				stage(4, "go", "d", 0, 2500*time.Microsecond, ""),
			},
			want: []string{"build d: 3 ms", "build b: 2 ms", "build a: 1 ms", "build c: 0 ms"},
		},
		{
			name: "ties broken by stage name after rounding",
			spans: []sdktrace.ReadOnlySpan{
				stage(1, "go", "zeta", 0, ms(5.2), ""),
				stage(2, "docker", "alpha", 0, ms(4.9), ""),
				stage(3, "go", "mu", 0, ms(5), ""),
			},
			want: []string{"build alpha: 5 ms", "build mu: 5 ms", "build zeta: 5 ms"},
		},
		{
			name: "root and cache lookups are not stages",
			spans: []sdktrace.ReadOnlySpan{
				span(1, "pipeline build", 0, ms(100), attribute.String(AttrPipeline, "build")),
				stage(2, "go", "compile", ms(1), ms(50), "miss"),
				span(3, CacheLookupSpanName, ms(1), ms(2), attribute.String(AttrCacheKey, "k")),
				span(4, "unrelated", 0, ms(500)),
			},
			want: []string{"build compile: 50 ms"},
		},
		{
			name:  "no spans",
			spans: nil,
			want:  []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.spans, "build", nil).Lines
			if !slices.Equal(got, tt.want) {
				t.Errorf("Lines =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestSummarizeJSONExact(t *testing.T) {
	spans := []sdktrace.ReadOnlySpan{
		// Recorded in end order, as the Recorder returns them.
		stage(3, "go", "vet", ms(10), ms(20), ""),
		span(4, CacheLookupSpanName, ms(10), ms(1)),
		stage(2, "go", "compile", ms(10), ms(40.4), "miss"),
		stage(5, "docker", "image", ms(50.6), ms(29.5), "hit"),
		span(1, "pipeline build", 0, ms(100.2), attribute.String(AttrPipeline, "build")),
	}
	deps := map[string][]string{"image": {"compile"}}
	got := Summarize(spans, "build", deps)

	want := `{"schema":"piship-timing/v1","command":"build","totalMs":100,"stages":[` +
		`{"name":"go compile","startMs":10,"ms":40,"cache":"miss"},` +
		`{"name":"go vet","startMs":10,"ms":20,"cache":"none"},` +
		`{"name":"docker image","startMs":51,"ms":30,"cache":"hit"}],` +
		`"criticalPath":["go compile","docker image"]}`
	if string(got.JSON) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got.JSON, want)
	}
	if bytes.ContainsRune(got.JSON, '\n') {
		t.Error("JSON must be a single line without newline")
	}
	if !json.Valid(got.JSON) {
		t.Error("JSON is not valid JSON")
	}
	wantLines := []string{"build compile: 40 ms", "build image: 30 ms", "build vet: 20 ms"}
	if !slices.Equal(got.Lines, wantLines) {
		t.Errorf("Lines = %q, want %q", got.Lines, wantLines)
	}

	var out bytes.Buffer
	if err := got.Write(&out); err != nil {
		t.Fatal(err)
	}
	wantOut := "build compile: 40 ms\nbuild image: 30 ms\nbuild vet: 20 ms\n" + want + "\n"
	if out.String() != wantOut {
		t.Errorf("Write =\n%s\nwant\n%s", out.String(), wantOut)
	}
}

func TestSummarizeWithoutRoot(t *testing.T) {
	// Without a root span the run spans the earliest stage start to the
	// latest stage end, and startMs is relative to that start.
	spans := []sdktrace.ReadOnlySpan{
		stage(1, "go", "b", ms(30), ms(20), ""),
		stage(2, "go", "a", ms(10), ms(5), ""),
	}
	got := Summarize(spans, "ci", nil)
	want := `{"schema":"piship-timing/v1","command":"ci","totalMs":40,"stages":[` +
		`{"name":"go a","startMs":0,"ms":5,"cache":"none"},` +
		`{"name":"go b","startMs":20,"ms":20,"cache":"none"}],"criticalPath":["go b"]}`
	if string(got.JSON) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", got.JSON, want)
	}
}

func TestSummarizeEmpty(t *testing.T) {
	got := Summarize(nil, "build", nil)
	want := `{"schema":"piship-timing/v1","command":"build","totalMs":0,"stages":[],"criticalPath":[]}`
	if string(got.JSON) != want {
		t.Errorf("JSON = %s, want %s", got.JSON, want)
	}
}

func TestCriticalPath(t *testing.T) {
	type st struct {
		name string
		ms   float64
	}
	tests := []struct {
		name   string
		stages []st
		deps   map[string][]string
		want   []string
	}{
		{
			name:   "diamond takes the heavier branch",
			stages: []st{{"a", 10}, {"b", 5}, {"c", 30}, {"d", 1}},
			deps:   map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"b", "c"}},
			want:   []string{"k a", "k c", "k d"},
		},
		{
			name:   "diamond tie prefers the smaller name",
			stages: []st{{"a", 10}, {"c", 7}, {"b", 7}, {"d", 1}},
			deps:   map[string][]string{"b": {"a"}, "c": {"a"}, "d": {"c", "b"}},
			want:   []string{"k a", "k b", "k d"},
		},
		{
			name:   "chain",
			stages: []st{{"one", 1}, {"two", 2}, {"three", 3}, {"four", 4}},
			deps:   map[string][]string{"two": {"one"}, "three": {"two"}, "four": {"three"}},
			want:   []string{"k one", "k two", "k three", "k four"},
		},
		{
			name:   "a single heavy stage beats a light chain",
			stages: []st{{"x", 2}, {"y", 2}, {"heavy", 10}},
			deps:   map[string][]string{"y": {"x"}},
			want:   []string{"k heavy"},
		},
		{
			name:   "independent stages tie on the smaller name",
			stages: []st{{"q", 4}, {"p", 4}},
			want:   []string{"k p"},
		},
		{
			name:   "stage without span weighs zero and is not listed",
			stages: []st{{"a", 5}, {"c", 5}},
			deps:   map[string][]string{"b": {"a"}, "c": {"b"}},
			want:   []string{"k a", "k c"},
		},
		{
			name:   "cycle terminates deterministically",
			stages: []st{{"a", 1}, {"b", 2}},
			deps:   map[string][]string{"a": {"b"}, "b": {"a"}},
			want:   []string{"k b", "k a"},
		},
		{
			name: "weights are rounded milliseconds",
			// b1 is heavier in nanoseconds but both round to 5 ms, so the
			// smaller name wins: the printed numbers explain the choice.
			stages: []st{{"b1", 5.4}, {"a1", 4.6}},
			want:   []string{"k a1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spans []sdktrace.ReadOnlySpan
			for i, s := range tt.stages {
				spans = append(spans, stage(uint64(i+1), "k", s.name, 0, ms(s.ms), ""))
			}
			got := Summarize(spans, "build", tt.deps).CriticalPath
			if !slices.Equal(got, tt.want) {
				t.Errorf("CriticalPath = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCriticalPathLongChain(t *testing.T) {
	// A 10,000-deep chain must neither recurse nor search exponentially.
	const n = 10000
	spans := make([]sdktrace.ReadOnlySpan, 0, n)
	deps := make(map[string][]string, n)
	for i := range n {
		name := fmt.Sprintf("s%05d", i)
		spans = append(spans, stage(uint64(i+1), "k", name, time.Duration(i)*time.Millisecond, time.Millisecond, ""))
		if i > 0 {
			deps[name] = []string{fmt.Sprintf("s%05d", i-1)}
		}
	}
	got := Summarize(spans, "build", deps).CriticalPath
	if len(got) != n || got[0] != "k s00000" || got[n-1] != fmt.Sprintf("k s%05d", n-1) {
		t.Errorf("CriticalPath has %d stages from %q to %q, want the whole chain", len(got), got[0], got[len(got)-1])
	}
}

// A stage's phases (child spans marked by phase.Attr, nested ones named
// "outer/inner") follow its line longest first and sit in its JSON object
// in start order; a phase of no stage and stages without phases are as before.
func TestSummarizePhases(t *testing.T) {
	spans := []sdktrace.ReadOnlySpan{
		// Children end first, so they come first, as a recorder has them.
		phaseSpan(11, 10, "extract", ms(2), ms(60)),
		phaseSpan(13, 12, "fsync", ms(70), ms(4)),
		phaseSpan(12, 10, "commit", ms(66), ms(9)),
		phaseSpan(14, 10, "verify", ms(62), ms(4)),
		phaseSpan(15, 99, "orphan", 0, ms(1)),
		span(1, "pipeline install", 0, ms(100), attribute.String(AttrPipeline, "install")),
		stage(10, "install", "install", ms(1), ms(80), ""),
		stage(20, "download", "download", 0, ms(1), ""),
	}
	got := Summarize(spans, "install", nil)
	want := []string{
		"install install: 80 ms",
		"install install/extract: 60 ms",
		"install install/commit: 9 ms",
		"install install/commit/fsync: 4 ms", // ties by name
		"install install/verify: 4 ms",
		"install download: 1 ms",
	}
	if !slices.Equal(got.Lines, want) {
		t.Errorf("Lines =\n%q\nwant\n%q", got.Lines, want)
	}
	wantJSON := `{"schema":"piship-timing/v1","command":"install","totalMs":100,"stages":[` +
		`{"name":"download download","startMs":0,"ms":1,"cache":"none"},` +
		`{"name":"install install","startMs":1,"ms":80,"cache":"none","phases":[` +
		`{"name":"extract","startMs":2,"ms":60},{"name":"verify","startMs":62,"ms":4},` +
		`{"name":"commit","startMs":66,"ms":9},{"name":"commit/fsync","startMs":70,"ms":4}]}],` +
		`"criticalPath":["install install"]}`
	if string(got.JSON) != wantJSON {
		t.Errorf("JSON =\n%s\nwant\n%s", got.JSON, wantJSON)
	}
}
