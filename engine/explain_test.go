package engine

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// ownCacheKind keeps a cache of its own, like npm_install's i- entries:
// it reports one lookup of key with a node version as its named input.
type ownCacheKind struct{}

func (ownCacheKind) Name() string    { return "own_cache" }
func (ownCacheKind) Version() string { return "1" }
func (ownCacheKind) Doc() string     { return "reports a lookup in a cache of its own" }
func (ownCacheKind) Attrs() []stage.Attr {
	return []stage.Attr{{Name: "key", Type: cty.String}, {Name: "hit", Type: cty.Bool}, {Name: "node", Type: cty.String}}
}
func (ownCacheKind) Outputs() []stage.Output { return nil }
func (ownCacheKind) Run(_ context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	c := inv.Config
	inv.CacheLookup(stage.CacheLookup{Cache: "runtime", Key: c.GetAttr("key").AsString(), Hit: c.GetAttr("hit").True(),
		Inputs: map[string]string{"node version": c.GetAttr("node").AsString()}, Scope: "/dists/hello"})
	return nil, nil
}

// A kind's own cache hit is the stage's cache hit (progress says cached),
// its lookup is a "cache lookup" child span with the agreed attributes,
// and its miss names what changed since the stage's last run.
func TestKindCacheLookups(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	reg := stage.NewRegistry(ownCacheKind{})
	run := func(key, hit, node string) (*StageResult, string, []sdktrace.ReadOnlySpan) {
		t.Helper()
		src := `pipeline "p" {
  stage "own_cache" "runtime" {
    key  = "` + key + `"
    hit  = ` + hit + `
    node = "` + node + `"
  }
}`
		gs, _, diags := graph.Parse([]byte(src), "p.hcl", dir, reg)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		var out bytes.Buffer
		p := NewProgress(&out, false, false)
		res, err := Run(context.Background(), gs[0], Options{Parallelism: 1, Cache: cache.OpenActions(home),
			Tracer: tp.Tracer("t"), Events: p.Event})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		return res.Stages[0], out.String(), rec.Ended()
	}
	lookupSpan := func(spans []sdktrace.ReadOnlySpan) map[string]string {
		t.Helper()
		var stageSpan, lookup sdktrace.ReadOnlySpan
		for _, s := range spans {
			switch s.Name() {
			case "own_cache runtime":
				stageSpan = s
			case "cache lookup":
				lookup = s
			}
		}
		if stageSpan == nil || lookup == nil || lookup.Parent().SpanID() != stageSpan.SpanContext().SpanID() {
			t.Fatalf("want a cache lookup span under the stage span, got %v", spans)
		}
		attrs := map[string]string{}
		for _, kv := range lookup.Attributes() {
			attrs[string(kv.Key)] = kv.Value.Emit()
		}
		return attrs
	}

	r, progress, spans := run("i-1", "false", "22.1")
	if r.CacheHit || r.MissReason != cache.ReasonNoEarlier || !strings.Contains(progress, "(cache miss: no earlier entry)") {
		t.Errorf("first run: hit %v, reason %q, progress %q", r.CacheHit, r.MissReason, progress)
	}
	if a := lookupSpan(spans); a[tracing.AttrCacheName] != "runtime" || a[tracing.AttrCacheKey] != "i-1" ||
		a[tracing.AttrCacheHit] != "false" || a[tracing.AttrCacheMissReason] != cache.ReasonNoEarlier {
		t.Errorf("miss span attributes: %v", a)
	}

	r, progress, spans = run("i-1", "true", "22.1")
	if !r.CacheHit || r.MissReason != "" || !strings.Contains(progress, "own_cache runtime: CACHED") {
		t.Errorf("a kind's hit: hit %v, reason %q, progress %q; want cached", r.CacheHit, r.MissReason, progress)
	}
	if a := lookupSpan(spans); a[tracing.AttrCacheHit] != "true" || a[tracing.AttrCacheMissReason] != "" {
		t.Errorf("hit span attributes: %v", a)
	}

	r, progress, _ = run("i-2", "false", "22.2")
	if want := "node version changed (22.1 -> 22.2)"; r.MissReason != want || !strings.Contains(progress, "(cache miss: "+want+")") {
		t.Errorf("changed input: reason %q, progress %q; want %q", r.MissReason, progress, want)
	}
	runs, err := cache.OpenExplain(home).Runs("p", "")
	if err != nil || len(runs) != 1 || len(runs[0].Stages) != 1 || runs[0].Stages[0].Cache != "miss" ||
		runs[0].Stages[0].Lookups[0].Inputs["node version"] != "22.2" {
		t.Errorf("run record: %+v, %v", runs, err)
	}
}

// plainKind looks up no cache, like doctor or status.
type plainKind struct{}

func (plainKind) Name() string            { return "plain" }
func (plainKind) Version() string         { return "1" }
func (plainKind) Doc() string             { return "looks up no cache" }
func (plainKind) Attrs() []stage.Attr     { return nil }
func (plainKind) Outputs() []stage.Output { return nil }
func (plainKind) Run(context.Context, *stage.Invocation) (map[string]cty.Value, error) {
	return nil, nil
}

// A run in which no stage looked up a cache leaves no record behind for
// piship explain, so the record of the last build stays what explain shows.
func TestRunWithoutLookupsWritesNoRecord(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	reg := stage.NewRegistry(plainKind{}, ownCacheKind{})
	run := func(name, body string) {
		t.Helper()
		gs, _, diags := graph.Parse([]byte(`pipeline "`+name+`" {
`+body+`
}`), name+".hcl", dir, reg)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		if _, err := Run(context.Background(), gs[0], Options{Parallelism: 1, Cache: cache.OpenActions(home)}); err != nil {
			t.Fatal(err)
		}
	}
	run("quiet", `stage "plain" "look" {}`)
	if runs, err := cache.OpenExplain(home).Runs("", ""); err != nil || len(runs) != 0 {
		t.Fatalf("a run without lookups recorded %d runs (%v); want none", len(runs), err)
	}
	run("cached", `stage "own_cache" "runtime" {
    key  = "i-1"
    hit  = false
    node = "22.1"
  }`)
	if runs, err := cache.OpenExplain(home).Runs("", ""); err != nil || len(runs) != 1 || runs[0].Pipeline != "cached" {
		t.Fatalf("a run with a lookup: %+v, %v; want its record", runs, err)
	}
}
