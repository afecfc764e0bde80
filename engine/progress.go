package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/text/width"
)

// ProgressMode is how Progress renders events: the --progress forms.
type ProgressMode int

const (
	// ProgressPlain prints one line per event with a step number and the
	// time since the run started, for logs and CI.
	ProgressPlain ProgressMode = iota
	// ProgressTTY keeps a live view at the bottom of a terminal: a header
	// with the elapsed time and done/total, one line per running stage;
	// finished stages print a permanent line above it.
	ProgressTTY
	// ProgressJSON prints one JSON object per line (schema
	// piship-progress/v1, docs/json.md), for tools.
	ProgressJSON
)

// ProgressSchema names the JSON event lines of ProgressJSON.
const ProgressSchema = "piship-progress/v1"

// ProgressOptions configure NewProgressWith.
type ProgressOptions struct {
	Mode ProgressMode
	// Color adds ANSI colours to the tty view (callers pass false when
	// NO_COLOR is set).
	Color bool
	// Pipeline names the run in the tty header before its first event.
	Pipeline string
	// Total is the number of stages of the run: the header's done/total.
	Total int
	// Width returns the terminal's width in columns. It is asked at every
	// redraw, so a resized terminal gets lines of its new width; nil or a
	// result below 1 means 80.
	Width func() int
	// Height returns the terminal's height in rows, asked at every redraw:
	// the view never takes more rows than fit (cursor up cannot reach a
	// row scrolled off the screen, so a taller view would leave stale
	// lines); nil or a result below 1 means no limit but the view's own.
	Height func() int
	// Now is the clock (tests pass their own); nil means time.Now.
	Now func() time.Time
}

// Progress renders events for people (plain lines, or a live view for
// terminals) or for tools (JSON lines). Durations come from the stage
// spans' timestamps carried by the events; offsets from Now.
type Progress struct {
	w    io.Writer
	opts ProgressOptions

	mu       sync.Mutex
	start    time.Time
	logBuf   []byte               // an unfinished line written to Log
	steps    map[string]int       // label -> step number, in order of first event
	running  map[string]time.Time // label -> start, for the live view
	done     int                  // stages finished or skipped
	drawn    int                  // lines of the live view currently on screen
	out      bytes.Buffer         // one update, written to w in one Write
	stop     chan struct{}
	stopped  chan struct{}
	closed   bool
	pipeline string
}

// NewProgress returns a renderer writing to w: the live tty view when
// live is set, plain lines otherwise. color adds ANSI colours to the view.
func NewProgress(w io.Writer, live, color bool) *Progress {
	mode := ProgressPlain
	if live {
		mode = ProgressTTY
	}
	return NewProgressWith(w, ProgressOptions{Mode: mode, Color: color})
}

// NewProgressWith returns a renderer writing to w as o says.
func NewProgressWith(w io.Writer, o ProgressOptions) *Progress {
	if o.Now == nil {
		o.Now = time.Now
	}
	p := &Progress{w: w, opts: o, start: o.Now(), steps: map[string]int{}, running: map[string]time.Time{}, pipeline: o.Pipeline}
	if o.Mode == ProgressTTY {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// Event handles one engine event; pass it as Options.Events.
func (p *Progress) Event(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pipeline == "" {
		p.pipeline = e.Pipeline
	}
	if e.Kind == EventExpanded {
		// Its instances take its place in done/total; their events follow.
		p.opts.Total += e.Instances - 1
		return
	}
	if p.opts.Mode != ProgressJSON && notApplicable(e) {
		// A stage whose condition is false is not part of this run: it
		// counts towards done/total, and the JSON stream, the trace and
		// explain still have it, but people see no line.
		p.done++
		if p.opts.Mode == ProgressTTY {
			p.clear()
			p.redraw()
			p.flush()
		}
		return
	}
	label := e.Stage.Title()
	step, ok := p.steps[label]
	if !ok {
		step = len(p.steps) + 1
		p.steps[label] = step
	}
	now := p.opts.Now()
	if e.Kind == EventStarted {
		p.running[label] = now
	} else {
		delete(p.running, label)
		p.done++
	}
	switch p.opts.Mode {
	case ProgressJSON:
		p.writeJSON(p.jsonEvent(e, step, now))
	case ProgressTTY:
		p.clear()
		if e.Kind != EventStarted {
			line := label + ": " + p.outcome(e)
			switch color := outcomeColor(e); {
			case color != "":
				line = p.paint(color, "=> "+line)
			default:
				line = "=> " + line
			}
			p.out.WriteString(line + "\n")
		}
		p.redraw()
		p.flush()
	default:
		prefix := fmt.Sprintf("#%d %.3fs %s: %s: ", step, now.Sub(p.start).Seconds(), e.Pipeline, label)
		if e.Kind == EventStarted {
			p.out.WriteString(prefix + "started\n")
		} else {
			p.out.WriteString(prefix + p.outcome(e) + "\n")
		}
		p.flush()
	}
}

// notApplicable reports whether e skips a stage whose when condition is
// false.
func notApplicable(e Event) bool {
	return e.Kind == EventSkipped && e.Result != nil && e.Result.Status == Skipped && (errors.Is(e.Result.Err, ErrWhenFalse) || errors.Is(e.Result.Err, ErrNoInstances))
}

// outcome words a finished or skipped stage: CACHED, DONE with the
// duration (and why a cacheable stage missed), FAILED with the first line
// of the error, SKIPPED or NOT STARTED with the reason.
func (p *Progress) outcome(e Event) string {
	r := e.Result
	d := fmtDuration(r.End.Sub(r.Start))
	if e.Kind == EventSkipped {
		if r.Status == Skipped {
			return "SKIPPED: " + strings.TrimPrefix(firstLine(r.Err), "skipped: ")
		}
		return "NOT STARTED: " + strings.TrimPrefix(firstLine(r.Err), "not started: ")
	}
	switch {
	case r.Status == Succeeded && r.CacheHit:
		return "CACHED " + d
	case r.Status == Succeeded:
		if r.MissReason != "" {
			return "DONE " + d + " (cache miss: " + r.MissReason + ")"
		}
		return "DONE " + d
	}
	s := strings.ToUpper(r.Status.String()) + " " + d
	if msg := firstLine(r.Err); msg != "" {
		s += ": " + msg
	}
	return s
}

// outcomeColor is the ANSI colour of a permanent line: red for a failure,
// yellow for a stage that did not start, none otherwise.
func outcomeColor(e Event) string {
	switch e.Result.Status {
	case Failed, Cancelled:
		return "31"
	case NotStarted:
		return "33"
	}
	return ""
}

// fmtDuration words a stage's duration: milliseconds below a second,
// tenths of seconds above.
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// progressEvent is one line of ProgressJSON (docs/json.md, piship-progress/v1).
type progressEvent struct {
	Schema     string  `json:"schema"`
	Event      string  `json:"event"` // started, finished, skipped, log
	Step       int     `json:"step"`  // 0 for log lines
	Total      int     `json:"total"`
	Time       float64 `json:"time"` // seconds since the run started
	Pipeline   string  `json:"pipeline"`
	Stage      string  `json:"stage"`
	Kind       string  `json:"kind"`
	Status     string  `json:"status"`
	Duration   float64 `json:"duration"`
	CacheHit   bool    `json:"cacheHit"`
	MissReason string  `json:"missReason"`
	Error      string  `json:"error"`
	Message    string  `json:"message"`
}

func (p *Progress) jsonEvent(e Event, step int, now time.Time) progressEvent {
	ev := progressEvent{Schema: ProgressSchema, Step: step, Total: p.opts.Total, Time: seconds(now.Sub(p.start)),
		Pipeline: e.Pipeline, Stage: e.Stage.Name, Kind: e.Stage.KindName}
	switch e.Kind {
	case EventStarted:
		ev.Event, ev.Status = "started", "running"
		return ev
	case EventFinished:
		ev.Event = "finished"
	default:
		ev.Event = "skipped"
	}
	r := e.Result
	ev.Status = r.Status.String()
	ev.Duration = seconds(r.End.Sub(r.Start))
	ev.CacheHit = r.CacheHit
	if !r.CacheHit {
		ev.MissReason = r.MissReason
	}
	if r.Err != nil {
		ev.Error = r.Err.Error()
	}
	return ev
}

// seconds is d in seconds, rounded to the millisecond.
func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond).Milliseconds()) / 1000
}

func (p *Progress) writeJSON(ev progressEvent) {
	enc := json.NewEncoder(&p.out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ev) // a struct of strings and numbers always encodes
	p.flush()
}

// flush writes the pending update in one Write, so a terminal never shows
// half an update and a log line is never cut by the view.
func (p *Progress) flush() {
	if p.out.Len() > 0 {
		_, _ = p.w.Write(p.out.Bytes())
		p.out.Reset()
	}
}

// Log returns the writer for the stages' own messages (Options.Log). It
// shares the progress lines' lock, so stage messages and progress events
// never interleave, and in the live view it writes above the running
// stages. In JSON mode each line becomes a "log" event. The engine hands
// it whole lines (see stageLog); an unfinished line from anyone else is
// kept until its newline, or until Close.
func (p *Progress) Log() io.Writer { return progressLog{p} }

type progressLog struct{ p *Progress }

func (l progressLog) Write(b []byte) (int, error) {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	err := writeLines(&p.logBuf, b, func(lines []byte) (int, error) {
		p.logLines(lines)
		return len(lines), nil
	})
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// logLines writes whole lines of the stages' messages.
func (p *Progress) logLines(lines []byte) {
	switch p.opts.Mode {
	case ProgressJSON:
		now := p.opts.Now()
		for l := range strings.Lines(string(lines)) {
			p.writeJSON(progressEvent{Schema: ProgressSchema, Event: "log", Total: p.opts.Total, Time: seconds(now.Sub(p.start)),
				Pipeline: p.pipeline, Message: strings.TrimSuffix(l, "\n")})
		}
		return
	case ProgressTTY:
		p.clear()
		p.out.Write(lines)
		if !p.closed {
			p.redraw()
		}
	default:
		p.out.Write(lines)
	}
	p.flush()
}

// Close stops the live view, replaces it with a last header line (the
// time and done/total of the run), and writes an unfinished line of Log.
func (p *Progress) Close() {
	if p.opts.Mode == ProgressTTY {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.opts.Mode == ProgressTTY {
		p.clear()
		p.out.WriteString(p.header() + "\n")
		p.flush()
	}
	if len(p.logBuf) > 0 {
		p.logLines(append(p.logBuf, '\n'))
		p.logBuf = nil
	}
}

func (p *Progress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.clear()
			p.redraw()
			p.flush()
			p.mu.Unlock()
		}
	}
}

// header is the view's first line, BuildKit's `[+] Building 1.8s (12/20)`:
// the pipeline, the time since the run started, the stages done (finished,
// cached or skipped) of the run's total.
func (p *Progress) header() string {
	count := fmt.Sprint(p.done)
	if p.opts.Total > 0 {
		count = fmt.Sprintf("%d/%d", p.done, p.opts.Total)
	}
	name := p.pipeline
	if name == "" {
		name = "run"
	}
	return fmt.Sprintf("[+] %s %.1fs (%s)", name, p.opts.Now().Sub(p.start).Seconds(), count)
}

// redraw draws the live view below what is on screen: the header, then
// the running stages, longest first, each cut to the terminal's width so
// none wraps (a wrapped line would leave a row the next clear misses).
// The caller has cleared the old view.
func (p *Progress) redraw() {
	labels := make([]string, 0, len(p.running))
	for l := range p.running {
		labels = append(labels, l)
	}
	sort.Slice(labels, func(i, j int) bool {
		a, b := p.running[labels[i]], p.running[labels[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return labels[i] < labels[j]
	})
	// One column stays free: some terminals wrap as soon as the last
	// column is written.
	cols := 80
	if p.opts.Width != nil {
		if w := p.opts.Width(); w > 0 {
			cols = w
		}
	}
	cols = max(cols-1, 1)
	line := func(s, color string) {
		s = cutCells(s, cols)
		if color != "" {
			s = p.paint(color, s)
		}
		p.out.WriteString(s + "\n")
		p.drawn++
	}
	line(p.header(), "1")
	// Below the header at most 9 lines, and fewer than the terminal's
	// height minus the header and the cursor's row: the running stages,
	// the last line "... and N more" when they do not all fit.
	rows := 9
	if p.opts.Height != nil {
		if h := p.opts.Height(); h > 0 {
			rows = max(min(rows, h-2), 0)
		}
	}
	shown := len(labels)
	if shown > rows {
		shown = max(rows-1, 0)
	}
	now := p.opts.Now()
	for i, l := range labels {
		if i == shown {
			if rows > 0 {
				line(fmt.Sprintf("  ... and %d more", len(labels)-shown), "")
			}
			break
		}
		line(fmt.Sprintf("  %5.1fs %s", now.Sub(p.running[l]).Seconds(), l), "36")
	}
}

// clear erases the live view: one row up and erased per line drawn (no
// line of the view wraps, so each is one row), leaving the cursor where
// the view began.
func (p *Progress) clear() {
	if p.drawn > 0 {
		p.out.WriteString(strings.Repeat("\x1b[1A\x1b[2K", p.drawn))
		p.drawn = 0
	}
}

func (p *Progress) paint(code, s string) string {
	if !p.opts.Color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// cutCells cuts s to at most n terminal cells, ending a cut line with "…".
func cutCells(s string, n int) string {
	if Cells(s) <= n {
		return s
	}
	used := 0
	for i, r := range s {
		w := runeCells(r)
		if used+w > n-1 {
			return s[:i] + "…"
		}
		used += w
	}
	return s
}

// Cells is the number of terminal cells s takes: two for East Asian wide
// and fullwidth runes, none for combining marks and format characters, one
// for the rest.
func Cells(s string) int {
	n := 0
	for _, r := range s {
		n += runeCells(r)
	}
	return n
}

func runeCells(r rune) int {
	switch {
	case r < 0xAD: // ASCII and Latin-1 before the soft hyphen: no table lookups
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case r < 0x1100:
		return 1
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
