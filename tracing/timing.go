package tracing

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/tracing/phase"
)

// TimingSchema identifies the layout of Timing.JSON; bump it on any
// incompatible change so scripts that parse it can tell.
const TimingSchema = "piship-timing/v1"

// Values of the "cache" field in Timing.JSON.
const (
	cacheHit  = "hit"
	cacheMiss = "miss"
	cacheNone = "none"
)

// Timing is the per-stage timing summary of one run, computed from its spans.
// All durations are whole milliseconds, rounded to nearest, the same way in
// every field, so the human lines and the JSON always agree.
type Timing struct {
	// Lines are "<command> <stage name>: N ms", longest first, ties by
	// stage name.
	Lines []string
	// JSON is one line (without the trailing newline) of the form
	// {"schema":"piship-timing/v1","command":…,"totalMs":N,
	// "stages":[{"name":"<kind> <name>","startMs":N,"ms":N,"cache":"hit|miss|none"}],
	// "criticalPath":["<kind> <name>",…]}
	// with stages ordered by startMs, then name.
	JSON []byte
	// CriticalPath is the heaviest chain of dependent stages (by summed
	// milliseconds), first stage first, as "<kind> <name>".
	CriticalPath []string

	// stages are the JSON's stages (with their verdicts), kept for the
	// HTML report so it draws exactly the figures the JSON line prints.
	stages []stageJSON
}

// Write prints the lines, then the JSON line.
func (t Timing) Write(w io.Writer) error {
	var b bytes.Buffer
	for _, l := range t.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if len(t.JSON) > 0 {
		b.Write(t.JSON)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}

type timingJSON struct {
	Schema       string      `json:"schema"`
	Command      string      `json:"command"`
	TotalMs      int64       `json:"totalMs"`
	Stages       []stageJSON `json:"stages"`
	CriticalPath []string    `json:"criticalPath"`
}

type stageJSON struct {
	Name    string      `json:"name"`
	StartMs int64       `json:"startMs"`
	Ms      int64       `json:"ms"`
	Cache   string      `json:"cache"`
	Phases  []phaseJSON `json:"phases,omitempty"`
	// Verdict is the span's piship.verdict ("" when unset), for the HTML
	// report only: the JSON line's layout stays as documented.
	Verdict string `json:"-"`
}

// phaseJSON is one phase of a stage (a child span marked by phase.Attr);
// nested phases are named "outer/inner".
type phaseJSON struct {
	Name    string `json:"name"`
	StartMs int64  `json:"startMs"`
	Ms      int64  `json:"ms"`
}

// stageRun is one stage span reduced to what the summary needs.
type stageRun struct {
	span    sdktrace.ReadOnlySpan
	name    string // stage.name
	display string // "<kind> <name>"
	start   time.Time
	end     time.Time
	startMs int64
	ms      int64
	cache   string
	verdict string
	phases  []phaseRun
}

// phaseRun is one phase span of a stage.
type phaseRun struct {
	span    sdktrace.ReadOnlySpan
	name    string // "extract", or "outer/inner" when nested
	startMs int64
	ms      int64
}

// Summarize computes the timing summary of the run of command from its
// recorded spans. Stage spans are those with a stage.name attribute (cache
// lookup spans are ignored). The run's extent is the span named
// "pipeline <command>" or, if there is none, the earliest stage start to the
// latest stage end. deps maps a stage name to the names of the stages it
// depends on and only shapes the critical path.
//
// A stage with several spans (for example a retried stage) gets one line per
// span and weighs the sum of their durations on the critical path.
func Summarize(spans []sdktrace.ReadOnlySpan, command string, deps map[string][]string) Timing {
	rootName := PipelineSpanName(command)
	var root sdktrace.ReadOnlySpan
	var runs []stageRun
	var phases []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s == nil || s.Name() == CacheLookupSpanName {
			continue
		}
		if isPhase(s) {
			phases = append(phases, s)
			continue
		}
		if s.Name() == rootName {
			// Several roots only happen if the caller mixes runs; pick
			// the earliest deterministically.
			if root == nil || compareSpans(s, root) < 0 {
				root = s
			}
			continue
		}
		if r, ok := stageRunOf(s); ok {
			runs = append(runs, r)
		}
	}

	var runStart, runEnd time.Time
	switch {
	case root != nil:
		runStart, runEnd = root.StartTime(), root.EndTime()
	case len(runs) > 0:
		runStart, runEnd = runs[0].start, runs[0].end
		for _, r := range runs[1:] {
			if r.start.Before(runStart) {
				runStart = r.start
			}
			if r.end.After(runEnd) {
				runEnd = r.end
			}
		}
	}
	for i := range runs {
		runs[i].startMs = roundMs(runs[i].start.Sub(runStart))
	}
	attachPhases(runs, phases, runStart)

	t := Timing{Lines: make([]string, 0, len(runs))}

	// Sort pointers: stageRun is large and 10,000-stage runs are expected.
	// Both orders end on compareSpans, so they are total and need no
	// stable sort.
	order := make([]*stageRun, len(runs))
	for i := range runs {
		order[i] = &runs[i]
	}
	slices.SortFunc(order, func(a, b *stageRun) int { return longestFirst(a.ms, b.ms, a.name, b.name, a.span, b.span) })
	for _, r := range order {
		t.Lines = append(t.Lines, command+" "+r.name+": "+strconv.FormatInt(r.ms, 10)+" ms")
		// Its phases follow it, longest first: "<command> <stage>/<phase>".
		ps := slices.Clone(r.phases)
		slices.SortFunc(ps, func(a, b phaseRun) int { return longestFirst(a.ms, b.ms, a.name, b.name, a.span, b.span) })
		for _, p := range ps {
			t.Lines = append(t.Lines, command+" "+r.name+"/"+p.name+": "+strconv.FormatInt(p.ms, 10)+" ms")
		}
	}

	slices.SortFunc(order, func(a, b *stageRun) int {
		if c := cmp.Compare(a.startMs, b.startMs); c != 0 {
			return c
		}
		if c := cmp.Compare(a.display, b.display); c != 0 {
			return c
		}
		return compareSpans(a.span, b.span)
	})
	weights := make(map[string]int64, len(runs))
	display := make(map[string]string, len(runs))
	stages := make([]stageJSON, 0, len(order))
	for _, r := range order {
		weights[r.name] += r.ms
		if _, ok := display[r.name]; !ok {
			display[r.name] = r.display
		}
		sj := stageJSON{Name: r.display, StartMs: r.startMs, Ms: r.ms, Cache: r.cache, Verdict: r.verdict}
		for _, p := range r.phases { // already in start order
			sj.Phases = append(sj.Phases, phaseJSON{Name: p.name, StartMs: p.startMs, Ms: p.ms})
		}
		stages = append(stages, sj)
	}

	t.CriticalPath = criticalPath(weights, display, deps)
	t.stages = stages

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // stage names are shown to people; keep "<", ">" and "&" readable
	err := enc.Encode(timingJSON{
		Schema:       TimingSchema,
		Command:      command,
		TotalMs:      durationMs(runStart, runEnd),
		Stages:       stages,
		CriticalPath: t.CriticalPath,
	})
	if err != nil {
		// Only strings and integers are encoded, which cannot fail.
		panic(fmt.Sprintf("tracing: encode timing JSON: %v", err))
	}
	t.JSON = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return t
}

func stageRunOf(s sdktrace.ReadOnlySpan) (stageRun, bool) {
	var name, kind string
	var hasName, hasKind bool
	cache := cacheNone
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case AttrStageName:
			name, hasName = kv.Value.Emit(), true
		case AttrStageKind:
			kind, hasKind = kv.Value.Emit(), true
		case AttrCacheHit:
			if kv.Value.Type() == attribute.BOOL {
				cache = cacheMiss
				if kv.Value.AsBool() {
					cache = cacheHit
				}
			}
		}
	}
	if !hasName {
		return stageRun{}, false
	}
	display := s.Name()
	if hasKind {
		display = StageSpanName(kind, name)
	}
	return stageRun{
		span:    s,
		name:    name,
		display: display,
		start:   s.StartTime(),
		end:     s.EndTime(),
		ms:      durationMs(s.StartTime(), s.EndTime()),
		cache:   cache,
		verdict: verdictOf(s),
	}, true
}

// longestFirst is the order of the printed lines, for stages and for the
// phases under each: longest first, ties by name, then by span.
func longestFirst(ams, bms int64, aname, bname string, aspan, bspan sdktrace.ReadOnlySpan) int {
	if c := cmp.Compare(bms, ams); c != 0 {
		return c
	}
	if c := cmp.Compare(aname, bname); c != 0 {
		return c
	}
	return compareSpans(aspan, bspan)
}

func isPhase(s sdktrace.ReadOnlySpan) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == phase.Attr {
			return true
		}
	}
	return false
}

// attachPhases gives each stage run the phase spans under it, following
// parent links through enclosing phases (named "outer/inner"). A phase
// whose chain reaches no stage span of this run is left out. Phases come
// out in start order.
func attachPhases(runs []stageRun, phases []sdktrace.ReadOnlySpan, runStart time.Time) {
	if len(phases) == 0 {
		return
	}
	stageOf := make(map[trace.SpanID]int, len(runs))
	for i := range runs {
		stageOf[runs[i].span.SpanContext().SpanID()] = i
	}
	phaseOf := make(map[trace.SpanID]sdktrace.ReadOnlySpan, len(phases))
	for _, p := range phases {
		phaseOf[p.SpanContext().SpanID()] = p
	}
	for _, p := range phases {
		name := p.Name()
		parent := p.Parent().SpanID()
		for depth := 0; depth < len(phases); depth++ {
			if i, ok := stageOf[parent]; ok {
				runs[i].phases = append(runs[i].phases, phaseRun{
					span: p, name: name, startMs: roundMs(p.StartTime().Sub(runStart)), ms: durationMs(p.StartTime(), p.EndTime()),
				})
				break
			}
			outer, ok := phaseOf[parent]
			if !ok {
				break
			}
			name = outer.Name() + "/" + name
			parent = outer.Parent().SpanID()
		}
	}
	// By the exact start: phases often start within the same millisecond
	// (and some run side by side), and the JSON shows them in start order.
	for i := range runs {
		slices.SortFunc(runs[i].phases, func(a, b phaseRun) int { return compareSpans(a.span, b.span) })
	}
}

// roundMs rounds to the nearest millisecond (halves away from zero). Every
// number in the summary goes through it so lines and JSON agree.
func roundMs(d time.Duration) int64 { return d.Round(time.Millisecond).Milliseconds() }

// durationMs is the rounded length of [start, end]; an inverted or unended
// interval counts as 0 rather than a huge negative number.
func durationMs(start, end time.Time) int64 {
	if end.Before(start) {
		return 0
	}
	return roundMs(end.Sub(start))
}

// criticalPath returns the heaviest path along dependency edges, where a
// stage weighs its rounded milliseconds (so the printed numbers explain the
// choice) and stages without spans weigh 0 and are left out of the result.
//
// It is a memoised longest-path over the DAG, O(V+E log E), iterative so a
// 10,000-stage chain cannot exhaust the stack. Ties prefer the
// lexicographically smaller stage name, both for the last stage and for each
// dependency step. Should deps contain a cycle, edges closing it are ignored
// so the result is still deterministic.
func criticalPath(weights map[string]int64, display map[string]string, deps map[string][]string) []string {
	// Nodes are numbered in name order, so comparing numbers compares names.
	ids := make(map[string]int, len(weights)+len(deps))
	for n := range weights {
		ids[n] = 0
	}
	for n, ds := range deps {
		ids[n] = 0
		for _, d := range ds {
			ids[d] = 0
		}
	}
	if len(ids) == 0 {
		return []string{}
	}
	names := make([]string, 0, len(ids))
	for n := range ids {
		names = append(names, n)
	}
	slices.Sort(names)
	for i, n := range names {
		ids[n] = i
	}
	adj := make([][]int, len(names))
	for n, ds := range deps {
		i := ids[n]
		for _, d := range ds {
			adj[i] = append(adj[i], ids[d])
		}
	}
	for i := range adj {
		slices.Sort(adj[i])
		adj[i] = slices.Compact(adj[i])
	}

	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]uint8, len(names))
	best := make([]int64, len(names)) // heaviest path ending at the node
	prev := make([]int, len(names))   // the dependency that path comes through, or -1
	type frame struct{ node, edge int }
	var stack []frame
	for start := range names {
		if state[start] != unvisited {
			continue
		}
		state[start] = visiting
		stack = append(stack, frame{node: start})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.edge < len(adj[f.node]) {
				d := adj[f.node][f.edge]
				f.edge++
				if state[d] == unvisited {
					state[d] = visiting
					stack = append(stack, frame{node: d})
				}
				continue
			}
			n := f.node
			stack = stack[:len(stack)-1]
			from, through := -1, int64(0)
			for _, d := range adj[n] {
				// A dependency still being visited closes a cycle.
				if state[d] == done && (from == -1 || best[d] > through) {
					from, through = d, best[d]
				}
			}
			best[n] = weights[names[n]] + through
			prev[n] = from
			state[n] = done
		}
	}

	last := 0
	for i := range names {
		if best[i] > best[last] {
			last = i
		}
	}
	var path []string
	for n := last; n != -1; n = prev[n] {
		if d, ok := display[names[n]]; ok {
			path = append(path, d)
		}
	}
	slices.Reverse(path)
	if path == nil {
		path = []string{}
	}
	return path
}
