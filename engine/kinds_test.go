package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
)

// Test-only kinds: sleep waits, fail fails after a wait, record notes that
// it ran; noop does nothing (for overhead benchmarks).

type sleepKind struct{ rec *recorder }

func (sleepKind) Name() string    { return "sleep" }
func (sleepKind) Version() string { return "1" }
func (sleepKind) Doc() string     { return "waits for ms milliseconds" }
func (sleepKind) Attrs() []stage.Attr {
	return []stage.Attr{{Name: "ms", Type: cty.Number}, {Name: "in", Type: cty.DynamicPseudoType}}
}
func (sleepKind) Outputs() []stage.Output {
	return []stage.Output{{Name: "value", Type: cty.String}}
}
func (k sleepKind) Run(ctx context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	k.rec.add(inv.Name)
	defer k.rec.finish(inv.Name)
	if err := wait(ctx, inv); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"value": cty.StringVal(inv.Name)}, nil
}

type failKind struct{ rec *recorder }

func (failKind) Name() string    { return "fail" }
func (failKind) Version() string { return "1" }
func (failKind) Doc() string     { return "fails after ms milliseconds" }
func (failKind) Attrs() []stage.Attr {
	return []stage.Attr{{Name: "ms", Type: cty.Number}, {Name: "in", Type: cty.DynamicPseudoType}}
}
func (failKind) Outputs() []stage.Output { return []stage.Output{{Name: "value", Type: cty.String}} }
func (k failKind) Run(ctx context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	k.rec.add(inv.Name)
	defer k.rec.finish(inv.Name)
	if err := wait(ctx, inv); err != nil {
		return nil, err
	}
	return nil, errors.New("boom from " + inv.Name)
}

// checkKind fails when fail is true, after ms milliseconds; its value is
// the stage's name (for_each tests).
type checkKind struct{ rec *recorder }

func (checkKind) Name() string    { return "check" }
func (checkKind) Version() string { return "1" }
func (checkKind) Doc() string     { return "fails when fail is true" }
func (checkKind) Attrs() []stage.Attr {
	return []stage.Attr{{Name: "ms", Type: cty.Number}, {Name: "fail", Type: cty.Bool}, {Name: "in", Type: cty.DynamicPseudoType}}
}
func (checkKind) Outputs() []stage.Output {
	return []stage.Output{{Name: "value", Type: cty.String}, {Name: "in", Type: cty.DynamicPseudoType}}
}
func (k checkKind) Run(ctx context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	k.rec.add(inv.Name)
	defer k.rec.finish(inv.Name)
	if err := wait(ctx, inv); err != nil {
		return nil, err
	}
	if f := inv.Config.GetAttr("fail"); !f.IsNull() && f.True() {
		return nil, errors.New("boom from " + inv.Name)
	}
	in := inv.Config.GetAttr("in")
	if in.IsNull() {
		in = cty.StringVal("")
	}
	return map[string]cty.Value{"value": cty.StringVal(inv.Name), "in": in}, nil
}

type noopKind struct{}

func (noopKind) Name() string            { return "noop" }
func (noopKind) Version() string         { return "1" }
func (noopKind) Doc() string             { return "does nothing" }
func (noopKind) Attrs() []stage.Attr     { return nil }
func (noopKind) Outputs() []stage.Output { return nil }
func (noopKind) Run(context.Context, *stage.Invocation) (map[string]cty.Value, error) {
	return nil, nil
}

func wait(ctx context.Context, inv *stage.Invocation) error {
	ms := inv.Config.GetAttr("ms")
	if ms.IsNull() {
		return nil
	}
	f, _ := ms.AsBigFloat().Float64()
	select {
	case <-time.After(time.Duration(f * float64(time.Millisecond))):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recorder notes which stages started and finished, and the highest number
// running at once.
type recorder struct {
	mu       sync.Mutex
	started  []string
	finished map[string]bool
	running  int
	peak     int
}

func newRecorder() *recorder { return &recorder{finished: map[string]bool{}} }

func (r *recorder) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, name)
	r.running++
	r.peak = max(r.peak, r.running)
}

func (r *recorder) finish(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished[name] = true
	r.running--
}

func testRegistry(rec *recorder) *stage.Registry {
	return stage.NewRegistry(sleepKind{rec}, failKind{rec}, checkKind{rec}, noopKind{})
}

func mustParse(t testing.TB, src string, reg *stage.Registry) *graph.Graph {
	t.Helper()
	gs, _, diags := graph.Parse([]byte(src), "test.hcl", t.TempDir(), reg)
	if diags.HasErrors() {
		t.Fatalf("parse: %s", diags.Error())
	}
	return gs[0]
}
