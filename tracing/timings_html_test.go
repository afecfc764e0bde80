package tracing

import (
	"bytes"
	"errors"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// reportRun is a small build: fetch (cache hit) and compile run side by
// side, link needs both, test failed after link. compile -> link -> test is
// the heaviest chain.
func reportRun() ([]sdktrace.ReadOnlySpan, map[string][]string) {
	failed := stage(5, "exec", "test", ms(70), ms(5), "miss")
	stub := tracetest.SpanStubFromReadOnlySpan(failed)
	stub.Attributes = slices.DeleteFunc(stub.Attributes, func(kv attribute.KeyValue) bool { return kv.Key == AttrVerdict })
	stub.Attributes = append(stub.Attributes, attribute.String(AttrVerdict, VerdictFailed))
	stub.Status = sdktrace.Status{Code: codes.Error, Description: "boom"}
	root := tracetest.SpanStubFromReadOnlySpan(span(1, "pipeline build", 0, ms(80), attribute.String(AttrPipeline, "build")))
	root.Status = sdktrace.Status{Code: codes.Error}
	spans := []sdktrace.ReadOnlySpan{
		root.Snapshot(),
		stage(2, "go", "compile", ms(1), ms(40), "miss"),
		stage(3, "npm", "fetch <deps> & co", ms(1), ms(3), "hit"),
		stage(4, "go", "link", ms(42), ms(27), ""),
		stub.Snapshot(),
	}
	deps := map[string][]string{"compile": nil, "fetch <deps> & co": nil, "link": {"compile", "fetch <deps> & co"}, "test": {"link"},
		"publish": {"test"}, "notify": {"publish"}} // not started: test failed
	return spans, deps
}

func renderReport(t *testing.T, spans []sdktrace.ReadOnlySpan, deps map[string][]string) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTimingsHTML(&b, spans, deps); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var barRE = regexp.MustCompile(`<rect class="bar (\w+)" x="(\d+)" y="(\d+)" width="(\d+)" height="14" data-stage="([^"]*)" data-cache="(\w*)" data-verdict="(\w*)" data-critical="(\w+)">`)

// The page draws one bar per stage run in start order, colours hits and
// failures, and marks exactly the stages Summarize puts on the critical
// path.
func TestTimingsHTMLBarsAndCriticalPath(t *testing.T) {
	spans, deps := reportRun()
	page := renderReport(t, spans, deps)
	bars := barRE.FindAllStringSubmatch(page, -1)
	var got []string
	for _, b := range bars {
		got = append(got, b[5]+" "+b[1]+" critical="+b[8])
	}
	want := []string{
		"go compile ran critical=true",
		"npm fetch &lt;deps&gt; &amp; co cached critical=false",
		"go link ran critical=true",
		"exec test failed critical=true",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("bars:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sum := Summarize(spans, "build", deps)
	if !slices.Equal(sum.CriticalPath, []string{"go compile", "go link", "exec test"}) {
		t.Fatalf("Summarize's critical path changed: %v", sum.CriticalPath)
	}
	for _, s := range []string{"<b class=\"outcome-failed\">failed</b> in <b>80 ms</b>", "4 stage runs, 1 served from cache",
		"1 failed", "Critical path (72 ms of 80 ms)", "<code>go compile</code> &rarr; <code>go link</code> &rarr; <code>exec test</code>",
		"build link: 27 ms", "started 2025-06-01 12:00:00 UTC", "2 of the pipeline's stages did not run (not started, or skipped): notify, publish"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// The table has the timing lines' rows, figures and order.
	var rows []string
	for _, m := range regexp.MustCompile(`<tr class="[^"]*"><td>([^<]*)</td><td class="num">\d+</td><td class="num">(\d+)</td>`).FindAllStringSubmatch(page, -1) {
		_, name, _ := strings.Cut(html.UnescapeString(m[1]), " ")
		rows = append(rows, "build "+name+": "+m[2]+" ms")
	}
	if !slices.Equal(rows, sum.Lines) {
		t.Errorf("table rows\n  %s\nwant the timing lines\n  %s", strings.Join(rows, "\n  "), strings.Join(sum.Lines, "\n  "))
	}
	// The exact figures are in the bar's hover title.
	if !strings.Contains(page, "<title>go link\nstart 42 ms, took 27 ms, ended 69 ms\nverdict: passed\non the critical path</title>") {
		t.Errorf("no exact title for link:\n%s", page)
	}
}

// Without the graph's edges the page marks no critical path and says why,
// rather than presenting the single longest stage as a path.
func TestTimingsHTMLWithoutDeps(t *testing.T) {
	spans, _ := reportRun()
	page := renderReport(t, spans, nil)
	bars := barRE.FindAllStringSubmatch(page, -1)
	if len(bars) != 4 || !strings.Contains(page, "Critical path not marked") {
		t.Fatalf("%d bars, or no note that the critical path is unknown", len(bars))
	}
	for _, b := range bars {
		if b[8] != "false" {
			t.Errorf("%s marked critical without dependency edges", b[5])
		}
	}
}

// The page is self-contained: nothing to fetch, no script needed.
func TestTimingsHTMLSelfContained(t *testing.T) {
	spans, deps := reportRun()
	page := renderReport(t, spans, deps)
	for _, re := range []string{`(?i)(src|href|xlink:href|action)\s*=`, `(?i)url\(`, `(?i)@import`, `(?i)https?://`, `(?i)<script`, `(?i)<link`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("page has an external reference %q", m)
		}
	}
}

func TestTimingsHTMLNoPipelineRoot(t *testing.T) {
	spans := []sdktrace.ReadOnlySpan{stage(2, "go", "compile", 0, ms(4), "")}
	err := WriteTimingsHTML(&bytes.Buffer{}, spans, nil)
	if !errors.Is(err, ErrNoPipeline) || !strings.Contains(err.Error(), `"pipeline NAME"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestLayoutChart(t *testing.T) {
	stages := []stageJSON{
		{Name: "a x", StartMs: 0, Ms: 500},
		{Name: "b y", StartMs: 500, Ms: 0, Cache: cacheHit},
		{Name: "c z", StartMs: 250, Ms: 750, Verdict: VerdictFailed},
	}
	c := layoutChart(stages, 1000, map[string]bool{"c z": true})
	if len(c.Bars) != 3 {
		t.Fatalf("%d bars", len(c.Bars))
	}
	a, b, z := c.Bars[0], c.Bars[1], c.Bars[2]
	if a.X != chartLabelW || a.W != chartBarsW/2 {
		t.Errorf("a: x %d w %d, want %d %d", a.X, a.W, chartLabelW, chartBarsW/2)
	}
	if b.W != chartMinBar || b.X != chartLabelW+chartBarsW/2 {
		t.Errorf("a 0 ms stage: x %d w %d", b.X, b.W)
	}
	if z.X+z.W != chartLabelW+chartBarsW || !z.Critical || z.Class != "failed" || b.Class != "cached" || a.Class != "ran" {
		t.Errorf("c: %+v", z)
	}
	if c.EndX != chartLabelW+chartBarsW || z.CritY <= z.Y || a.Kind != "a" || a.Label != "x" {
		t.Errorf("end line at %d, critical strip at %d under %d, label %q %q", c.EndX, z.CritY, z.Y, a.Kind, a.Label)
	}
	if a.Y >= b.Y || b.Y >= z.Y {
		t.Errorf("rows out of order: %d %d %d", a.Y, b.Y, z.Y)
	}
	var labels []string
	for _, tk := range c.Ticks {
		labels = append(labels, tk.Label)
	}
	if want := []string{"0", "100 ms", "200 ms", "300 ms", "400 ms", "500 ms", "600 ms", "700 ms", "800 ms", "900 ms", "1.0 s"}; !slices.Equal(labels, want) {
		t.Errorf("ticks %v, want %v", labels, want)
	}
	// A stage ending after the root still fits on the axis, and the axis
	// ends with the run, not at the next round tick.
	c = layoutChart([]stageJSON{{Name: "late", StartMs: 900, Ms: 300}}, 1000, nil)
	if end := c.Bars[0].X + c.Bars[0].W; end != chartLabelW+chartBarsW || c.EndX >= end {
		t.Errorf("the late bar ends at %d, the run at %d; the axis is %d..%d", end, c.EndX, chartLabelW, chartLabelW+chartBarsW)
	}
	c = layoutChart([]stageJSON{{Name: "a", StartMs: 0, Ms: 2010}}, 2010, nil)
	if last := c.Ticks[len(c.Ticks)-1]; last.Label != "2.0 s" || c.Bars[0].W != chartBarsW {
		t.Errorf("a 2.01 s run: last tick %q, bar %d wide of %d", last.Label, c.Bars[0].W, chartBarsW)
	}
}

func TestTickStepAndLabels(t *testing.T) {
	for _, tc := range []struct {
		span, step int64
	}{{0, 1}, {1, 1}, {7, 1}, {11, 2}, {37, 5}, {80, 10}, {1000, 100}, {12_345, 2000}, {95_000, 10_000}} {
		if got := tickStep(tc.span, chartTicks); got != tc.step {
			t.Errorf("tickStep(%d) = %d, want %d", tc.span, got, tc.step)
		}
	}
	for _, tc := range []struct {
		ms, step int64
		want     string
	}{{0, 5, "0"}, {35, 5, "35 ms"}, {1500, 500, "1.5 s"}, {2000, 2000, "2 s"}, {1250, 250, "1.25 s"}} {
		if got := formatTick(tc.ms, tc.step); got != tc.want {
			t.Errorf("formatTick(%d, %d) = %q, want %q", tc.ms, tc.step, got, tc.want)
		}
	}
	if got := formatMs(125_400); got != "2 min 5.4 s" {
		t.Errorf("formatMs = %q", got)
	}
}

// A trace file read back gives the same timing line and the same page as
// the spans it was written from.
func TestReadOTLPJSONRoundTrip(t *testing.T) {
	spans, deps := reportRun()
	var file bytes.Buffer
	if err := WriteOTLPJSON(&file, spans); err != nil {
		t.Fatal(err)
	}
	read, err := ReadOTLPJSON(&file)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := Summarize(spans, "build", deps).JSON, Summarize(read, "build", deps).JSON; !bytes.Equal(a, b) {
		t.Fatalf("timing line differs after the round trip:\n%s\n%s", a, b)
	}
	if a, b := renderReport(t, spans, deps), renderReport(t, read, deps); a != b {
		t.Fatal("page differs after the round trip")
	}
}

func TestReadOTLPJSONRefusesOtherFiles(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<html></html>", "not JSON"},
		{`{"traces": []}`, `no "resourceSpans"`},
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"0000000000000001","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`, "traceId"},
		{`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"0000000000000001","startTimeUnixNano":"soon","endTimeUnixNano":"2"}]}]}]}`, "startTimeUnixNano"},
	} {
		if _, err := ReadOTLPJSON(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.in, err, tc.want)
		}
	}
	// Numbers where the writer puts strings are accepted (other writers do).
	in := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"0000000000000001","name":"pipeline x",
		"startTimeUnixNano":1000000,"endTimeUnixNano":3000000,"attributes":[{"key":"pipeline","value":{"stringValue":"x"}},{"key":"n","value":{"intValue":7}}]}]}]}]}`
	spans, err := ReadOTLPJSON(strings.NewReader(in))
	if err != nil || len(spans) != 1 || spans[0].EndTime().Sub(spans[0].StartTime()) != ms(2) || spans[0].Attributes()[1].Value.AsInt64() != 7 {
		t.Fatalf("spans %v, err %v", spans, err)
	}
}

// A stage's phases are lighter bands inside its bar, with their figures in
// the title, and rows under the stage in the table.
func TestTimingsHTMLPhases(t *testing.T) {
	spans := []sdktrace.ReadOnlySpan{
		span(1, "pipeline build", 0, ms(100), attribute.String(AttrPipeline, "build")),
		stage(2, "archive", "extract", ms(10), ms(80), ""),
		phaseSpan(3, 2, "inflate", ms(12), ms(50)),
		phaseSpan(4, 2, "write", ms(62), ms(20)),
	}
	page := renderReport(t, spans, map[string][]string{"extract": nil})
	for _, s := range []string{
		`<title>archive extract / inflate: 50 ms, from 12 ms</title>`,
		`<tr class="phase"><td>inflate</td><td class="num">12</td><td class="num">50</td>`,
		"lighter bands inside a bar are its phases",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if n := strings.Count(page, `<rect class="phase`); n != 2 {
		t.Errorf("%d phase bands, want 2", n)
	}
}
