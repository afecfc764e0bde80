package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// chattyKind writes its lines to the log in fragments, from two goroutines
// (as exec's copy of a child's stdout and stderr would), ending without a
// newline.
type chattyKind struct{}

func (chattyKind) Name() string            { return "chatty" }
func (chattyKind) Version() string         { return "1" }
func (chattyKind) Doc() string             { return "writes fragments of lines to its log" }
func (chattyKind) Attrs() []stage.Attr     { return nil }
func (chattyKind) Outputs() []stage.Output { return nil }
func (chattyKind) Run(_ context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	var mu sync.Mutex // one line at a time within the stage, like linePrefixer
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := range 30 {
				line := fmt.Sprintf("%s g%d line %d\n", inv.Name, g, i)
				mu.Lock()
				for j := 0; j < len(line); j += 3 {
					inv.Log.Write([]byte(line[j:min(j+3, len(line))]))
					time.Sleep(time.Microsecond)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(inv.Log, "%s done", inv.Name)
	return nil, nil
}

// Stages running at once, each writing fragments of lines: Options.Log
// receives whole lines only, none mixed with another stage's, and a last
// line without a newline is written when its stage ends.
func TestStageLogsReachTheLogAsWholeLines(t *testing.T) {
	reg := stage.NewRegistry(chattyKind{})
	g := mustParse(t, `
pipeline "p" {
  stage "chatty" "a" {}
  stage "chatty" "b" {}
  stage "chatty" "c" {}
}`, reg)
	rec := &lockedChunks{}
	res, err := Run(context.Background(), g, Options{Parallelism: 3, Log: rec})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	var got, want []string
	for _, c := range rec.chunks {
		if !strings.HasSuffix(c, "\n") {
			t.Fatalf("Options.Log got a write ending mid-line: %q", c)
		}
		for l := range strings.Lines(c) {
			got = append(got, strings.TrimSuffix(l, "\n"))
		}
	}
	for _, s := range []string{"a", "b", "c"} {
		for g := range 2 {
			for i := range 30 {
				want = append(want, fmt.Sprintf("%s g%d line %d", s, g, i))
			}
		}
		want = append(want, s+" done")
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("lines differ:\ngot  %q\nwant %q", got, want)
	}
}

type lockedChunks struct {
	mu     sync.Mutex
	chunks []string
}

func (l *lockedChunks) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.chunks = append(l.chunks, string(p))
	return len(p), nil
}
