package tracing

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"piship.dev/piship/cache/canon"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ErrNoPipeline is returned (wrapped) when spans hold no pipeline root span.
var ErrNoPipeline = errors.New("no pipeline root span")

// PipelineRoot finds the run's root span: a span named "pipeline NAME"
// carrying AttrPipeline=NAME whose parent is not among spans (a remote
// parent from TRACEPARENT is fine). Of several, the earliest wins, as in
// Summarize.
func PipelineRoot(spans []sdktrace.ReadOnlySpan) (string, sdktrace.ReadOnlySpan, error) {
	ids := make(map[trace.SpanID]bool, len(spans))
	for _, s := range spans {
		if s != nil {
			ids[s.SpanContext().SpanID()] = true
		}
	}
	var root sdktrace.ReadOnlySpan
	var name string
	for _, s := range spans {
		if s == nil || ids[s.Parent().SpanID()] {
			continue
		}
		for _, kv := range s.Attributes() {
			if kv.Key == AttrPipeline && s.Name() == PipelineSpanName(kv.Value.Emit()) {
				if root == nil || compareSpans(s, root) < 0 {
					root, name = s, kv.Value.Emit()
				}
			}
		}
	}
	if root == nil {
		return "", nil, fmt.Errorf("%w among %s (a span named \"pipeline NAME\" with %s=NAME, which piship run, build and release write)", ErrNoPipeline, canon.Count(len(spans), "span"), AttrPipeline)
	}
	return name, root, nil
}

// PipelineFileOf is the root span's AttrPipelineFile, "" when it has none
// (a trace of an older piship).
func PipelineFileOf(root sdktrace.ReadOnlySpan) string {
	for _, kv := range root.Attributes() {
		if kv.Key == AttrPipelineFile {
			return kv.Value.Emit()
		}
	}
	return ""
}

// verdictOf is the span's AttrVerdict, "" when it has none.
func verdictOf(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == AttrVerdict {
			return kv.Value.Emit()
		}
	}
	return ""
}

// StageNames are the names (AttrStageName) of the stages that have spans,
// sorted, each once.
func StageNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		if s == nil || s.Name() == CacheLookupSpanName {
			continue
		}
		if r, ok := stageRunOf(s); ok {
			names = append(names, r.name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// WriteTimingsHTML writes the timings report of the run in spans: one
// self-contained HTML page (inline CSS and SVG, no script, no external
// reference) with the run's header, a Gantt chart of its stages, the
// critical path, cache hits and failures marked, and the timing lines
// PISHIP_DEBUG_TIMING=1 prints. Every figure comes from Summarize, so the
// page and the timing line agree. deps are the graph's dependency edges
// (graph.Graph.DepNamesOf); nil means unknown, and the page then marks no critical
// path and says why.
func WriteTimingsHTML(w io.Writer, spans []sdktrace.ReadOnlySpan, deps map[string][]string) error {
	page, err := timingsPageOf(spans, deps)
	if err != nil {
		return err
	}
	var buf pageWriter
	writeTimingsPage(&buf, page)
	_, err = w.Write(buf.Bytes())
	return err
}

// The chart's geometry, in SVG user units (the SVG scales to the window).
const (
	chartLabelW = 300 // labels, right-aligned left of the bars
	chartBarsW  = 940 // the time axis
	chartPadR   = 60  // room for the last tick's label and bar figures
	chartAxisH  = 28  // the axis above the rows
	chartRowH   = 24
	chartBarH   = 14
	chartMinBar = 3  // a 0 ms stage still shows
	chartTicks  = 10 // at most this many whole intervals on the axis
	labelMax    = 44
)

type timingsPage struct {
	Pipeline     string
	Outcome      string // "ok" or "failed"
	Failed       bool
	Started      string
	Total        string
	Service      string
	TraceID      string
	Stages       int
	Cached       int
	FailedN      int
	CriticalPath []string
	CriticalMs   int64
	NoDeps       bool
	NoSpan       []string // stages of the graph without a timing line: not started, or skipped
	HasPhases    bool
	Chart        chart
	Rows         []tableRow
	TimingText   string
}

type chart struct {
	Width, Height int
	AxisY         int
	LabelX        int
	EndX          int // where the run (the root span) ended
	RowH          int
	Ticks         []tick
	Bars          []bar
}

type tick struct {
	X     int
	Label string
}

type bar struct {
	RowY           int
	Y, TextY, X, W int
	CritY          int // the critical path's strip, under the bar
	FigureX        int
	Kind           string // greyed before the name: "<kind> <name>" is the stage
	Label          string
	Figure         string
	Title          string
	Class          string
	Stage          string
	Cache          string
	Verdict        string
	Critical       bool
	Phases         []phaseBar
}

type phaseBar struct {
	X, W  int
	Alt   bool // every other phase shaded apart, as phases often abut
	Title string
}

type tableRow struct {
	Name     string
	Phase    bool
	Start    string
	Ms       int64
	Cache    string
	Verdict  string
	Critical bool
}

func timingsPageOf(spans []sdktrace.ReadOnlySpan, deps map[string][]string) (timingsPage, error) {
	name, root, err := PipelineRoot(spans)
	if err != nil {
		return timingsPage{}, err
	}
	t := Summarize(spans, name, deps)
	crit := map[string]bool{}
	var critMs int64
	if deps != nil {
		for _, n := range t.CriticalPath {
			crit[n] = true
		}
	}
	total := int64(0)
	if root.EndTime().After(root.StartTime()) {
		total = roundMs(root.EndTime().Sub(root.StartTime()))
	}
	p := timingsPage{
		Pipeline: name,
		Outcome:  "ok",
		Started:  root.StartTime().UTC().Format("2006-01-02 15:04:05 UTC"),
		Total:    formatMs(total),
		Service:  serviceOf(root),
		TraceID:  root.SpanContext().TraceID().String(),
		Stages:   len(t.stages),
		NoDeps:   deps == nil,
	}
	if root.Status().Code == codes.Error {
		p.Outcome, p.Failed = "failed", true
	}
	if deps != nil {
		p.CriticalPath = t.CriticalPath
	}
	for _, s := range t.stages {
		if s.Cache == cacheHit {
			p.Cached++
		}
		if s.Verdict == VerdictFailed {
			p.FailedN++
		}
		if crit[s.Name] {
			critMs += s.Ms
		}
		p.HasPhases = p.HasPhases || len(s.Phases) > 0
	}
	p.CriticalMs = critMs
	if deps != nil {
		ran := StageNames(spans)
		for n := range deps {
			if _, found := slices.BinarySearch(ran, n); !found {
				p.NoSpan = append(p.NoSpan, n)
			}
		}
		slices.Sort(p.NoSpan)
	}
	p.Chart = layoutChart(t.stages, total, crit)
	p.Rows = tableRows(t.stages, crit)
	var text bytes.Buffer
	_ = t.Write(&text) // a bytes.Buffer does not fail
	p.TimingText = text.String()
	return p, nil
}

// serviceOf is "service.name service.version" from the root's resource.
func serviceOf(root sdktrace.ReadOnlySpan) string {
	var name, version string
	if res := root.Resource(); res != nil {
		for _, kv := range res.Attributes() {
			switch kv.Key {
			case semconv.ServiceNameKey:
				name = kv.Value.Emit()
			case semconv.ServiceVersionKey:
				version = kv.Value.Emit()
			}
		}
	}
	return strings.TrimSpace(name + " " + version)
}

// layoutChart places one bar per stage run, in the order of the JSON line
// (by start, then name), on an axis from 0 to totalMs.
func layoutChart(stages []stageJSON, totalMs int64, crit map[string]bool) chart {
	span := totalMs
	for _, s := range stages { // a stage outliving the root still fits
		span = max(span, s.StartMs+s.Ms)
	}
	// The axis ends where the run does, not at the next round tick: the
	// width goes to the bars.
	axisEnd := max(span, 1)
	step := tickStep(axisEnd, chartTicks)
	x := func(ms int64) int { return chartLabelW + int(math.Round(float64(ms)*chartBarsW/float64(axisEnd))) }

	c := chart{
		Width:  chartLabelW + chartBarsW + chartPadR,
		Height: chartAxisH + len(stages)*chartRowH + 20, // the last row, then the end label
		RowH:   chartRowH,
		AxisY:  chartAxisH - 6,
		LabelX: chartLabelW - 8,
		EndX:   x(totalMs),
	}
	for ms := int64(0); ms <= axisEnd; ms += step {
		c.Ticks = append(c.Ticks, tick{X: x(ms), Label: formatTick(ms, step)})
	}
	for i, s := range stages {
		y := chartAxisH + i*chartRowH
		kind, name, ok := strings.Cut(s.Name, " ")
		if !ok {
			kind, name = "", s.Name
		}
		b := bar{
			RowY:     y,
			Y:        y + (chartRowH-chartBarH)/2 - 1,
			TextY:    y + chartRowH/2 + 3,
			X:        x(s.StartMs),
			W:        max(x(s.StartMs+s.Ms)-x(s.StartMs), chartMinBar),
			Kind:     kind,
			Label:    shorten(name, labelMax-len([]rune(kind))),
			Figure:   formatMs(s.Ms),
			Stage:    s.Name,
			Cache:    s.Cache,
			Verdict:  s.Verdict,
			Critical: crit[s.Name],
		}
		b.FigureX = b.X + b.W + 4
		b.CritY = b.Y + chartBarH + 1
		b.Class = barClass(s)
		b.Title = barTitle(s, b.Critical)
		for j, ph := range s.Phases {
			b.Phases = append(b.Phases, phaseBar{
				Alt:   j%2 == 1,
				X:     x(ph.StartMs),
				W:     max(x(ph.StartMs+ph.Ms)-x(ph.StartMs), 1),
				Title: fmt.Sprintf("%s / %s: %d ms, from %d ms", s.Name, ph.Name, ph.Ms, ph.StartMs),
			})
		}
		c.Bars = append(c.Bars, b)
	}
	return c
}

// barClass is the bar's colour class: failures first, then cache hits.
func barClass(s stageJSON) string {
	switch {
	case s.Verdict == VerdictFailed:
		return "failed"
	case s.Verdict == VerdictSkipped || s.Verdict == VerdictCancelled:
		return "skipped"
	case s.Cache == cacheHit:
		return "cached"
	}
	return "ran"
}

func barTitle(s stageJSON, critical bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nstart %d ms, took %d ms, ended %d ms", s.Name, s.StartMs, s.Ms, s.StartMs+s.Ms)
	switch s.Cache {
	case cacheHit:
		b.WriteString("\ncache: hit")
	case cacheMiss:
		b.WriteString("\ncache: miss")
	}
	if s.Verdict != "" {
		b.WriteString("\nverdict: " + s.Verdict)
	}
	if critical {
		b.WriteString("\non the critical path")
	}
	for _, ph := range s.Phases {
		fmt.Fprintf(&b, "\n  %s: %d ms", ph.Name, ph.Ms)
	}
	return b.String()
}

// tableRows are the timing lines' rows: stages longest first, each followed
// by its phases longest first, as PISHIP_DEBUG_TIMING=1 prints them.
func tableRows(stages []stageJSON, crit map[string]bool) []tableRow {
	// Ties by the stage's name (after the kind), as the lines break them;
	// the stable sort keeps start order among runs of one stage.
	stageName := func(display string) string { _, n, _ := strings.Cut(display, " "); return n }
	order := slices.Clone(stages)
	slices.SortStableFunc(order, func(a, b stageJSON) int {
		if a.Ms != b.Ms {
			return cmp.Compare(b.Ms, a.Ms)
		}
		return strings.Compare(stageName(a.Name), stageName(b.Name))
	})
	var rows []tableRow
	for _, s := range order {
		rows = append(rows, tableRow{Name: s.Name, Start: strconv.FormatInt(s.StartMs, 10), Ms: s.Ms, Cache: s.Cache, Verdict: s.Verdict, Critical: crit[s.Name]})
		ps := slices.Clone(s.Phases)
		slices.SortStableFunc(ps, func(a, b phaseJSON) int {
			if a.Ms != b.Ms {
				return cmp.Compare(b.Ms, a.Ms)
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, ph := range ps {
			rows = append(rows, tableRow{Name: ph.Name, Phase: true, Start: strconv.FormatInt(ph.StartMs, 10), Ms: ph.Ms})
		}
	}
	return rows
}

// tickStep is the smallest 1, 2 or 5 times a power of ten, in ms, that
// cuts spanMs into at most n intervals.
func tickStep(spanMs int64, n int) int64 {
	if spanMs <= 0 || n <= 0 {
		return 1
	}
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if step := m * p; step*int64(n) >= spanMs {
				return step
			}
		}
	}
}

// formatTick labels an axis tick: ms below a second, else seconds with as
// many decimals as the step needs.
func formatTick(ms, step int64) string {
	if ms == 0 {
		return "0"
	}
	if step < 1000 && ms < 1000 {
		return strconv.FormatInt(ms, 10) + " ms"
	}
	decimals := 0
	for s := step; s%1000 != 0 && decimals < 3; s *= 10 {
		decimals++
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', decimals, 64) + " s"
}

// formatMs is a duration for people: "840 ms", "2.31 s", "2 min 5.0 s".
func formatMs(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case ms < 1000:
		return strconv.FormatInt(ms, 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + " s"
	}
	m := int64(d / time.Minute)
	return fmt.Sprintf("%d min %.1f s", m, (d - time.Duration(m)*time.Minute).Seconds())
}

// shorten cuts a label to n runes with an ellipsis; the bar's title keeps
// the whole name.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
