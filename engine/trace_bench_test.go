package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
	"piship.dev/piship/tracing/phase"
)

// childKind does what a real stage does for tracing besides its work: it
// writes one log line (a span event when traced) and builds the
// environment of a child process (the stage span's TRACEPARENT).
type childKind struct{ env []string }

func (childKind) Name() string            { return "child" }
func (childKind) Version() string         { return "1" }
func (childKind) Doc() string             { return "logs a line and builds a child environment" }
func (childKind) Attrs() []stage.Attr     { return nil }
func (childKind) Outputs() []stage.Output { return nil }
func (k childKind) Run(ctx context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	fmt.Fprintf(inv.Log, "%s: started child\n", inv.Name)
	if env := phase.ChildEnv(ctx, k.env); len(env) < len(k.env) {
		return nil, fmt.Errorf("child environment lost variables")
	}
	return nil, nil
}

// BenchmarkSchedulerTracedChild is the per-stage cost of tracing as a run
// pays it (issue 15): on a 10,000-stage wide graph of child stages, each a
// recording span with its attributes, one log event and a TRACEPARENT for
// its child, against the same graph untraced. The difference is what
// tracing adds per stage; the target is under 20 µs/stage traced.
func BenchmarkSchedulerTracedChild(b *testing.B) {
	env := []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "LANG=C.UTF-8", "TERM=xterm"}
	src := strings.ReplaceAll(wideSource(10000), `"noop"`, `"child"`)
	g := mustParse(b, src, stage.NewRegistry(childKind{env: env}))
	for _, traced := range []bool{false, true} {
		name := map[bool]string{false: "untraced", true: "traced"}[traced]
		b.Run(name, func(b *testing.B) {
			prov, ctx, err := tracing.Setup(context.Background(), tracing.Options{Disabled: !traced, Getenv: func(string) string { return "" }})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(ctx, g, Options{Parallelism: 2, Tracer: prov.Tracer()})
				if err != nil || res.Err() != nil {
					b.Fatal(err, res.Err())
				}
				if traced {
					if n := len(prov.Recorder().Ended()); n != len(g.Stages) {
						b.Fatalf("%d spans recorded, want %d", n, len(g.Stages))
					}
					if ev := prov.Recorder().Ended()[0].Events(); len(ev) != 1 {
						b.Fatalf("%d events on a stage span, want its log line", len(ev))
					}
				}
				prov.Recorder().Reset()
			}
			perStage(b, len(g.Stages))
		})
	}
}
