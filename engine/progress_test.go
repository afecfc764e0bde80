package engine

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"piship.dev/piship/graph"
)

// chunkRecorder keeps every Write it receives. It has no lock of its own:
// Progress must serialize the calls (the race detector checks it).
type chunkRecorder struct{ chunks []string }

func (c *chunkRecorder) Write(p []byte) (int, error) {
	c.chunks = append(c.chunks, string(p))
	return len(p), nil
}

// Stages writing lines to Progress.Log from many goroutines while events
// arrive: each write that reaches the terminal is whole lines, and no line
// is lost or mixed with another or with the live view; an unfinished last
// line comes out at Close.
func TestProgressLogWritesWholeLines(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprintf("live=%v", live), func(t *testing.T) {
			rec := &chunkRecorder{}
			p := NewProgress(rec, live, false)
			log := p.Log()
			st := &graph.Stage{KindName: "exec", Name: "s"}
			var wg sync.WaitGroup
			const writers, lines = 4, 50
			for w := range writers {
				wg.Go(func() {
					for i := range lines {
						log.Write([]byte(fmt.Sprintf("writer %d line %d\n", w, i)))
					}
				})
			}
			wg.Go(func() {
				for range 20 {
					p.Event(Event{Kind: EventStarted, Pipeline: "p", Stage: st})
					now := time.Now()
					p.Event(Event{Kind: EventFinished, Pipeline: "p", Stage: st,
						Result: &StageResult{Stage: st, Status: Succeeded, Start: now, End: now}})
				}
			})
			wg.Wait()
			log.Write([]byte("no newline "))
			log.Write([]byte("at the end"))
			p.Close()

			var got []string
			for _, c := range rec.chunks {
				for l := range strings.Lines(c) {
					if !strings.HasSuffix(l, "\n") && !strings.HasSuffix(l, "\x1b[2K") {
						t.Fatalf("a write to the terminal ends mid-line: %q", c)
					}
					l = strings.TrimSuffix(l, "\n")
					// The live view's erase sequences and lines.
					l = strings.ReplaceAll(l, "\x1b[1A\x1b[2K", "")
					if l == "" || strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "=> ") || strings.HasPrefix(l, "[+] ") {
						continue
					}
					got = append(got, l)
				}
			}
			var want []string
			for w := range writers {
				for i := range lines {
					want = append(want, fmt.Sprintf("writer %d line %d", w, i))
				}
			}
			want = append(want, "no newline at the end")
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("log lines differ from what was written:\ngot  %q\nwant %q", got, want)
			}
		})
	}
}

// clock is a settable Now for Progress (the tty view's ticker reads it
// from its own goroutine).
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// screen is a tiny terminal: it interprets what the tty view emits
// (printable runes, \n as CR LF, cursor up, erase line, colours) on a
// grid `cols` wide with unlimited rows, wrapping a row that overflows the
// way a terminal does, and fails on any other escape sequence.
type screen struct {
	t       *testing.T
	mu      sync.Mutex
	cols    int
	height  int // rows on screen; 0: unlimited
	rows    [][]rune
	wrapped []bool // row i continues row i-1 (it wrapped)
	r, c    int
}

func newScreen(t *testing.T, cols int) *screen {
	return &screen{t: t, cols: cols, rows: [][]rune{nil}, wrapped: []bool{false}}
}

func (s *screen) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := []rune(string(b))
	for i := 0; i < len(in); i++ {
		switch r := in[i]; {
		case r == '\n':
			s.down(false)
		case r == '\r':
			s.c = 0
		case r == 0x1b:
			j := i + 2
			for j < len(in) && (in[j] == ';' || in[j] >= '0' && in[j] <= '9') {
				j++
			}
			if i+1 >= len(in) || in[i+1] != '[' || j >= len(in) {
				s.t.Fatalf("an unfinished escape sequence in %q", b)
			}
			param := string(in[i+2 : j])
			switch in[j] {
			case 'A':
				if s.r == 0 {
					s.t.Fatalf("cursor up above the first row: the view erased more lines than it drew (%q)", b)
				}
				// A terminal's cursor stops at the top of the screen: the
				// rows above have scrolled off.
				if s.height == 0 || s.r > len(s.rows)-s.height {
					s.r--
				}
			case 'K':
				if param != "2" {
					s.t.Fatalf("erase %q", param)
				}
				s.rows[s.r] = nil
				s.wrapped[s.r] = false
			case 'm':
			default:
				s.t.Fatalf("an escape sequence the view should not use: %q", string(in[i:j+1]))
			}
			i = j
		default:
			w := runeCells(r)
			if s.c+w > s.cols {
				s.down(true)
			}
			row := s.rows[s.r]
			for len(row) < s.c+w {
				row = append(row, ' ')
			}
			row[s.c] = r
			if w == 2 {
				row[s.c+1] = 0 // the right half of a wide rune
			}
			s.rows[s.r] = row
			s.c += w
		}
	}
	return len(b), nil
}

func (s *screen) down(wrap bool) {
	s.r++
	s.c = 0
	if s.r == len(s.rows) {
		s.rows = append(s.rows, nil)
		s.wrapped = append(s.wrapped, false)
	}
	if wrap {
		s.rows[s.r] = nil
		s.wrapped[s.r] = true
	}
}

// lines are the screen's logical lines: wrapped rows joined (as
// tmux capture-pane -J does), trailing empty rows dropped; rowsOf says how
// many rows each took.
func (s *screen) lines() (lines []string, rowsOf []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, row := range s.rows {
		text := strings.ReplaceAll(string(row), "\x00", "")
		if s.wrapped[i] && len(lines) > 0 {
			lines[len(lines)-1] += text
			rowsOf[len(rowsOf)-1]++
			continue
		}
		lines = append(lines, text)
		rowsOf = append(rowsOf, 1)
	}
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines, rowsOf = lines[:len(lines)-1], rowsOf[:len(rowsOf)-1]
	}
	return lines, rowsOf
}

// view checks the screen: the permanent lines exactly (each once, in
// order, none overwritten), then the live view: one header line with
// done/total and then one line per running stage, each on one row and
// within the width; nothing else (no stale line).
func (s *screen) check(step string, permanent []string, header string, running []string) {
	s.t.Helper()
	lines, rowsOf := s.lines()
	want := append(append(slices.Clone(permanent), header), running...)
	if len(lines) != len(want) {
		s.t.Fatalf("%s: the screen has %d lines, want %d (permanent, header, running):\n%s\nwant\n%s", step, len(lines), len(want),
			strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for i, l := range lines {
		if i < len(permanent) {
			if l != permanent[i] {
				s.t.Fatalf("%s: permanent line %d is %q, want %q\nscreen:\n%s", step, i, l, permanent[i], strings.Join(lines, "\n"))
			}
			continue
		}
		if rowsOf[i] != 1 || Cells(l) >= s.cols {
			s.t.Fatalf("%s: live line %q takes %d rows and %d cells of %d: it must be cut to the width", step, l, rowsOf[i], Cells(l), s.cols)
		}
		if w := want[i]; !strings.HasPrefix(w, "~") && l != w || strings.HasPrefix(w, "~") && !strings.Contains(l, w[1:]) {
			s.t.Fatalf("%s: live line %d is %q, want %q\nscreen:\n%s", step, i, l, w, strings.Join(lines, "\n"))
		}
	}
}

func stageEvent(kind EventKind, name string, r *StageResult) Event {
	st := &graph.Stage{KindName: "exec", Name: name}
	if r != nil {
		r.Stage = st
	}
	return Event{Kind: kind, Pipeline: "build", Stage: st, Result: r}
}

// The tty view: a header with the elapsed time and done/total (cached and
// skipped stages count as done), one line per running stage with its time,
// and a permanent line for each finished stage above it: CACHED for a
// cache hit, DONE with the duration and the miss reason, FAILED with the
// first line of the error, SKIPPED with the reason. Log lines that arrive
// in between go above the view too, and nothing is left behind.
func TestProgressTTYHeaderCountsAndPermanentLines(t *testing.T) {
	clk := newClock()
	scr := newScreen(t, 80)
	p := NewProgressWith(scr, ProgressOptions{Mode: ProgressTTY, Pipeline: "build", Total: 5, Width: func() int { return 80 }, Now: clk.Now})
	t0 := clk.Now()
	p.Event(stageEvent(EventStarted, "a", nil))
	clk.advance(500 * time.Millisecond)
	p.Event(stageEvent(EventStarted, "b", nil))
	scr.check("two running", nil, "[+] build 0.5s (0/5)", []string{"    0.5s exec a", "    0.0s exec b"})

	p.Log().Write([]byte("npm: added 3 packages\n"))
	clk.advance(700 * time.Millisecond)
	p.Event(stageEvent(EventFinished, "a", &StageResult{Status: Succeeded, CacheHit: true, Start: t0, End: t0.Add(3 * time.Millisecond)}))
	p.Event(stageEvent(EventSkipped, "c", &StageResult{Status: Skipped, Err: fmt.Errorf("skipped: its when condition is false")}))
	perm := []string{"npm: added 3 packages", "=> exec a: CACHED 3ms", "=> exec c: SKIPPED: its when condition is false"}
	scr.check("a cached, c skipped", perm, "[+] build 1.2s (2/5)", []string{"    0.7s exec b"})

	clk.advance(1300 * time.Millisecond)
	p.Event(stageEvent(EventFinished, "b", &StageResult{Status: Succeeded, Cacheable: true, MissReason: "input a.txt changed", Start: t0, End: t0.Add(2 * time.Second)}))
	p.Event(stageEvent(EventStarted, "d", nil))
	clk.advance(100 * time.Millisecond)
	p.Event(stageEvent(EventFinished, "d", &StageResult{Status: Failed, Err: fmt.Errorf("CONFIG_INVALID: bad\nsecond line"), Start: t0, End: t0.Add(100 * time.Millisecond)}))
	p.Event(stageEvent(EventSkipped, "e", &StageResult{Status: NotStarted, Err: fmt.Errorf("not started: it needs stage d, which failed")}))
	perm = append(perm, "=> exec b: DONE 2.0s (cache miss: input a.txt changed)", "=> exec d: FAILED 100ms: CONFIG_INVALID: bad",
		"=> exec e: NOT STARTED: it needs stage d, which failed")
	scr.check("all settled", perm, "[+] build 2.6s (5/5)", nil)

	// The ticker redraws the same view in between.
	time.Sleep(250 * time.Millisecond)
	scr.check("after a tick", perm, "[+] build 2.6s (5/5)", nil)
	p.Log().Write([]byte("unfinished"))
	p.Close()
	lines, _ := scr.lines()
	want := append(slices.Clone(perm), "[+] build 2.6s (5/5)", "unfinished")
	if !slices.Equal(lines, want) {
		t.Fatalf("after Close the screen is\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// A terminal narrower than the stage names: every line of the live view is
// cut to the width (wide runes count two cells), so none wraps, and the
// redraws, with log lines and finished stages arriving in between, never
// leave a stale line or overwrite a permanent one.
func TestProgressTTYCutsLinesToTheWidth(t *testing.T) {
	const cols = 24
	clk := newClock()
	scr := newScreen(t, cols)
	cur := cols
	p := NewProgressWith(scr, ProgressOptions{Mode: ProgressTTY, Pipeline: "a-pipeline-with-a-long-name", Total: 12,
		Width: func() int { return cur }, Now: clk.Now})
	names := []string{"a_stage_name_longer_than_the_terminal", "构建构建构建构建构建构建构建", "short"}
	for i := range 10 {
		names = append(names, fmt.Sprintf("parallel_stage_number_%02d_of_many", i))
	}
	var perm, running []string
	t0 := clk.Now()
	for i, n := range names[:12] {
		p.Event(stageEvent(EventStarted, n, nil))
		running = append(running, n)
		clk.advance(100 * time.Millisecond)
		if i%3 == 2 {
			p.Log().Write([]byte(fmt.Sprintf("log line %d from a stage that is much wider than the terminal\n", i)))
			perm = append(perm, fmt.Sprintf("log line %d from a stage that is much wider than the terminal", i))
		}
		if i%4 == 3 {
			done := running[0]
			running = running[1:]
			p.Event(stageEvent(EventFinished, done, &StageResult{Status: Succeeded, Start: t0, End: t0.Add(time.Second)}))
			perm = append(perm, "=> exec "+done+": DONE 1.0s")
		}
		view := []string{}
		for j, r := range running {
			if j == 8 && len(running) > 9 {
				view = append(view, fmt.Sprintf("  ... and %d more", len(running)-8))
				break
			}
			view = append(view, "~"+cutCells(r, 8)[:2]) // the start of the name is shown
		}
		scr.check(fmt.Sprintf("after %s", n), perm, "~[+] a-pipeline", view)
	}
	if head := scr.mustViewLines(t)[0]; Cells(head) != cols-1 || !strings.HasSuffix(head, "…") {
		t.Errorf("the cut header is %q (%d cells): want %d cells ending in …", head, Cells(head), cols-1)
	}
	// A narrower terminal from the next redraw on (a resize between two
	// redraws is the terminal's to reflow).
	cur = 10
	p.Log().Write([]byte("x\n"))
	for _, l := range strings.Split(strings.Join(scr.mustViewLines(t), "\n"), "\n") {
		if Cells(l) > 9 {
			t.Errorf("after narrowing to 10 columns a live line has %d cells: %q", Cells(l), l)
		}
	}
	p.Close()
}

// mustViewLines returns the lines from the header on.
func (s *screen) mustViewLines(t *testing.T) []string {
	lines, _ := s.lines()
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "[+] ") {
			return lines[i:]
		}
	}
	t.Fatalf("no header on the screen:\n%s", strings.Join(lines, "\n"))
	return nil
}

// Cells counts terminal cells: wide runes two, combining marks none.
func TestCells(t *testing.T) {
	for s, want := range map[string]int{"abc": 3, "构建": 4, "e\u0301": 1, "…": 1, "ｆｕｌｌ": 8, "": 0} {
		if got := Cells(s); got != want {
			t.Errorf("Cells(%q) = %d, want %d", s, got, want)
		}
	}
	if got := cutCells("构建构建", 5); got != "构建…" {
		t.Errorf("cutCells(构建构建, 5) = %q", got)
	}
}

// Plain progress lines: a step number per stage (the same on its start
// and its end), the time since the run started, the pipeline, the stage,
// and the outcome with its duration.
func TestProgressPlainLines(t *testing.T) {
	var b strings.Builder
	clk := newClock()
	p := NewProgressWith(&b, ProgressOptions{Mode: ProgressPlain, Now: clk.Now})
	st := &graph.Stage{KindName: "npm_install", Name: "runtime"}
	other := &graph.Stage{KindName: "exec", Name: "hello"}
	start := time.Unix(100, 0)
	p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: st})
	clk.advance(412 * time.Millisecond)
	p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: other})
	clk.advance(1100 * time.Millisecond)
	p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: st,
		Result: &StageResult{Stage: st, Status: Succeeded, Cacheable: true, MissReason: "no earlier entry", Start: start, End: start.Add(1500 * time.Millisecond)}})
	p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: other,
		Result: &StageResult{Stage: other, Status: Succeeded, CacheHit: true, Start: start, End: start.Add(2 * time.Millisecond)}})
	p.Log().Write([]byte("a stage's message\n"))
	p.Close()
	want := "#1 0.000s build: npm_install runtime: started\n" +
		"#2 0.412s build: exec hello: started\n" +
		"#1 1.512s build: npm_install runtime: DONE 1.5s (cache miss: no earlier entry)\n" +
		"#2 1.512s build: exec hello: CACHED 2ms\n" +
		"a stage's message\n"
	if b.String() != want {
		t.Fatalf("progress printed\n%s\nwant\n%s", b.String(), want)
	}
}

// JSON progress: one object per line, every key on every line, a log
// line as a "log" event; a tool can follow the run without parsing text.
func TestProgressJSONLines(t *testing.T) {
	var b strings.Builder
	clk := newClock()
	p := NewProgressWith(&b, ProgressOptions{Mode: ProgressJSON, Total: 2, Now: clk.Now})
	st := &graph.Stage{KindName: "bundle", Name: "bundle"}
	start := time.Unix(100, 0)
	p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: st})
	p.Log().Write([]byte("bundled 3 files\n"))
	clk.advance(250 * time.Millisecond)
	p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: st,
		Result: &StageResult{Stage: st, Status: Failed, Err: fmt.Errorf("BUNDLE_FAILED: x\ny"), MissReason: "tool version changed", Start: start, End: start.Add(250 * time.Millisecond)}})
	p.Close()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines:\n%s", b.String())
	}
	want := []string{
		`{"schema":"piship-progress/v1","event":"started","step":1,"total":2,"time":0,"pipeline":"build","stage":"bundle","kind":"bundle","status":"running","duration":0,"cacheHit":false,"missReason":"","error":"","message":""}`,
		`{"schema":"piship-progress/v1","event":"log","step":0,"total":2,"time":0,"pipeline":"build","stage":"","kind":"","status":"","duration":0,"cacheHit":false,"missReason":"","error":"","message":"bundled 3 files"}`,
		`{"schema":"piship-progress/v1","event":"finished","step":1,"total":2,"time":0.25,"pipeline":"build","stage":"bundle","kind":"bundle","status":"failed","duration":0.25,"cacheHit":false,"missReason":"tool version changed","error":"BUNDLE_FAILED: x\ny","message":""}`,
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, lines[i], want[i])
		}
	}
}

// A terminal shorter than the view: the view keeps to its height (the
// header, as many running stages as fit, "... and N more"), because the
// cursor cannot go up into rows that scrolled off, and a taller view would
// leave stale lines there.
func TestProgressTTYKeepsToTheTerminalHeight(t *testing.T) {
	clk := newClock()
	scr := newScreen(t, 80)
	scr.height = 6
	p := NewProgressWith(scr, ProgressOptions{Mode: ProgressTTY, Pipeline: "p", Total: 12, Width: func() int { return 80 },
		Height: func() int { return scr.height }, Now: clk.Now})
	var running, perm []string
	t0 := clk.Now()
	for i := range 12 {
		n := fmt.Sprintf("s%02d", i)
		p.Event(stageEvent(EventStarted, n, nil))
		running = append(running, n)
		if i%3 == 2 {
			p.Event(stageEvent(EventFinished, running[0], &StageResult{Status: Succeeded, Start: t0, End: t0}))
			perm = append(perm, "=> exec "+running[0]+": DONE 0ms")
			running = running[1:]
		}
		view := []string{}
		for j, r := range running {
			if j == 3 && len(running) > 4 {
				view = append(view, fmt.Sprintf("  ... and %d more", len(running)-3))
				break
			}
			view = append(view, "    0.0s exec "+r)
		}
		scr.check(n, perm, fmt.Sprintf("[+] p 0.0s (%d/12)", len(perm)), view)
	}
	p.Close()
}

// BenchmarkProgressEvents is the cost of rendering one stage (its start
// and its end) with 4 others running, for plain lines and the live view.
// It uses only NewProgress, so it runs unchanged on older trees for a
// side-by-side ratio.
func BenchmarkProgressEvents(b *testing.B) {
	for _, live := range []bool{false, true} {
		b.Run(fmt.Sprintf("live=%v", live), func(b *testing.B) {
			p := NewProgress(io.Discard, live, true)
			defer p.Close()
			now := time.Now()
			for i := range 4 {
				p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: &graph.Stage{KindName: "exec", Name: fmt.Sprintf("other%d", i)}})
			}
			st := &graph.Stage{KindName: "npm_install", Name: "runtime"}
			r := &StageResult{Stage: st, Status: Succeeded, Start: now, End: now.Add(time.Second)}
			b.ResetTimer()
			for range b.N {
				p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: st})
				p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: st, Result: r})
			}
		})
	}
}
