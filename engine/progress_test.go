package engine

import (
	"fmt"
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
					if l == "" || strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "p: ") {
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

// Plain progress lines name the pipeline, the stage and its time.
func TestProgressPlainLines(t *testing.T) {
	var b strings.Builder
	p := NewProgress(&b, false, false)
	st := &graph.Stage{KindName: "npm_install", Name: "runtime"}
	start := time.Unix(100, 0)
	p.Event(Event{Kind: EventStarted, Pipeline: "build", Stage: st})
	p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: st,
		Result: &StageResult{Stage: st, Status: Succeeded, Start: start, End: start.Add(1500 * time.Millisecond)}})
	p.Event(Event{Kind: EventFinished, Pipeline: "build", Stage: st,
		Result: &StageResult{Stage: st, Status: Succeeded, CacheHit: true, Start: start, End: start.Add(2 * time.Millisecond)}})
	p.Close()
	want := "build: started npm_install runtime\n" +
		"build: finished npm_install runtime in 1500 ms\n" +
		"build: cached npm_install runtime (2 ms)\n"
	if b.String() != want {
		t.Fatalf("progress printed\n%s\nwant\n%s", b.String(), want)
	}
}
