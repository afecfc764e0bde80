package engine

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Progress renders events for people: plain lines (one per event, for logs
// and CI) or a compact live view of the running stages (for terminals).
// Durations come from the stage spans' timestamps carried by the events.
type Progress struct {
	w     io.Writer
	live  bool
	color bool

	mu      sync.Mutex
	logBuf  []byte               // an unfinished line written to Log
	running map[string]time.Time // label -> start, for the live view
	drawn   int                  // lines of the live view currently on screen
	stop    chan struct{}
	stopped chan struct{}
}

// NewProgress returns a renderer writing to w. live selects the terminal
// view; color adds ANSI colours (callers pass false when NO_COLOR is set).
func NewProgress(w io.Writer, live, color bool) *Progress {
	p := &Progress{w: w, live: live, color: color, running: map[string]time.Time{}}
	if live {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// Event handles one engine event; pass it as Options.Events.
func (p *Progress) Event(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	label := e.Stage.Label()
	var line string
	switch e.Kind {
	case EventStarted:
		if p.live {
			p.running[label] = time.Now()
			p.redraw()
			return
		}
		line = fmt.Sprintf("%s: started %s", e.Pipeline, label)
	case EventFinished:
		delete(p.running, label)
		r := e.Result
		ms := r.End.Sub(r.Start).Round(time.Millisecond).Milliseconds()
		switch {
		case r.Status == Succeeded && r.CacheHit:
			line = fmt.Sprintf("%s: cached %s (%d ms)", e.Pipeline, label, ms)
		case r.Status == Succeeded:
			line = fmt.Sprintf("%s: finished %s in %d ms", e.Pipeline, label, ms)
			if r.MissReason != "" {
				line += " (cache miss: " + r.MissReason + ")"
			}
		default:
			line = p.paint("31", fmt.Sprintf("%s: %s %s in %d ms: %s", e.Pipeline, r.Status, label, ms, firstLine(r.Err)))
		}
	case EventSkipped:
		if e.Result.Status == Skipped {
			line = fmt.Sprintf("%s: skipped %s (when is false)", e.Pipeline, label)
		} else {
			line = p.paint("33", fmt.Sprintf("%s: not started %s: %s", e.Pipeline, label, firstLine(e.Result.Err)))
		}
	}
	if p.live {
		p.clear()
		fmt.Fprintln(p.w, line)
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, line)
}

// Log returns the writer for the stages' own messages (Options.Log). It
// shares the progress lines' lock, so stage messages and progress events
// never interleave, and in the live view it writes above the running
// stages. The engine hands it whole lines (see stageLog); an unfinished
// line from anyone else is kept until its newline, or until Close.
func (p *Progress) Log() io.Writer { return progressLog{p} }

type progressLog struct{ p *Progress }

func (l progressLog) Write(b []byte) (int, error) {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	err := writeLines(&p.logBuf, b, func(lines []byte) (int, error) {
		p.clear()
		n, err := p.w.Write(lines)
		if p.live {
			p.redraw()
		}
		return n, err
	})
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close stops the live view and erases it, and writes an unfinished line
// of Log.
func (p *Progress) Close() {
	if p.live {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if len(p.logBuf) > 0 {
		p.w.Write(append(p.logBuf, '\n'))
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
			p.redraw()
			p.mu.Unlock()
		}
	}
}

// redraw replaces the live view with the running stages, longest first.
func (p *Progress) redraw() {
	p.clear()
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
	const maxShown = 8
	now := time.Now()
	for i, l := range labels {
		if i == maxShown {
			fmt.Fprintf(p.w, "  ... and %d more\n", len(labels)-maxShown)
			p.drawn++
			break
		}
		fmt.Fprintf(p.w, "  %s %s\n", p.paint("36", fmt.Sprintf("%5.1fs", now.Sub(p.running[l]).Seconds())), l)
		p.drawn++
	}
}

func (p *Progress) clear() {
	if p.drawn > 0 {
		fmt.Fprint(p.w, strings.Repeat("\x1b[1A\x1b[2K", p.drawn))
		p.drawn = 0
	}
}

func (p *Progress) paint(code, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func firstLine(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
