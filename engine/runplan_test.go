package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
)

// copyKind copies one file to another: with cache = true it is served
// from the action cache while its source and configuration are unchanged,
// as exec is (its cache switch included).
type copyKind struct{}

type copyConfig struct {
	From  string `cty:"from" required:"true"`
	To    string `cty:"to" required:"true"`
	Note  string `cty:"note"`
	Cache bool   `cty:"cache"`
}

type copyOutputs struct {
	SHA256 string `cty:"sha256"`
}

func (copyKind) Name() string        { return "copy" }
func (copyKind) Version() string     { return "1" }
func (copyKind) Doc() string         { return "copies from to to" }
func (copyKind) CacheSwitch() string { return "cache" }

func (copyKind) CacheSpec(inv *stage.Invocation, c copyConfig) (stage.CacheSpec, bool, error) {
	return stage.CacheSpec{Inputs: []string{c.From}, Outputs: []string{c.To}, Dir: inv.Dir}, c.Cache, nil
}

func (copyKind) Run(_ context.Context, inv *stage.Invocation, c copyConfig) (copyOutputs, error) {
	b, err := os.ReadFile(filepath.Join(inv.Dir, c.From))
	if err != nil {
		return copyOutputs{}, err
	}
	if err := os.WriteFile(filepath.Join(inv.Dir, c.To), b, 0o644); err != nil {
		return copyOutputs{}, err
	}
	sum, err := cache.HashFile(filepath.Join(inv.Dir, c.To))
	return copyOutputs{SHA256: sum}, err
}

// planPipeline: a and b copy source files; c reads a's output file and its
// outputs, d only b's file (after b), e c's outputs; n is not cacheable
// although it reads e's outputs, s is skipped by an input, w waits on a's
// outputs in its condition.
const planPipeline = `pipeline "p" {
  input "extra" {
    type    = bool
    default = false
  }
  stage "copy" "a" {
    from  = "a.txt"
    to    = "a.out"
    cache = true
  }
  stage "copy" "b" {
    from  = "b.txt"
    to    = "b.out"
    cache = true
  }
  stage "copy" "c" {
    from  = "a.out"
    to    = "c.out"
    note  = stage.a.sha256
    cache = true
  }
  stage "copy" "d" {
    from       = "b.out"
    to         = "d.out"
    cache      = true
    depends_on = [stage.b]
  }
  stage "copy" "e" {
    from  = "c.out"
    to    = "e.out"
    note  = stage.c.sha256
    cache = true
  }
  stage "copy" "n" {
    from = "a.txt"
    to   = "n.out"
    note = stage.e.sha256
  }
  stage "copy" "s" {
    when  = input.extra
    from  = "a.txt"
    to    = "s.out"
    cache = true
  }
  stage "copy" "w" {
    when  = stage.a.sha256 != ""
    from  = "a.txt"
    to    = "w.out"
    cache = true
  }
}`

// The plan on a warm cache states exactly which stages would run (the
// changed one, and those after it that read what it makes), the rest
// cached with the keys the run then uses; on a cold cache it names for
// each stage whether it runs or what it waits on. Nothing is written.
func TestPlanRun(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"a.txt": "a\n", "b.txt": "b\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gs, _, diags := graph.Parse([]byte(planPipeline), "p.hcl", dir, stage.NewRegistry(stage.Define[copyConfig, copyOutputs](copyKind{})))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g := gs[0]
	opts := Options{Parallelism: 2, Cache: cache.OpenActions(home), ToolDigest: "test"}
	plan := func() map[string]*StagePlan {
		t.Helper()
		rp, err := PlanRun(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*StagePlan{}
		for _, sp := range rp.Stages {
			m[sp.Address] = sp
		}
		return m
	}
	type want struct {
		action Action
		reason string // a substring
		after  []string
	}
	check := func(what string, got map[string]*StagePlan, wants map[string]want) {
		t.Helper()
		for name, w := range wants {
			sp := got[name]
			if sp.Action != w.action || !strings.Contains(sp.Reason, w.reason) || !reflect.DeepEqual(sp.After, w.after) {
				t.Errorf("%s: stage %s: %s %q after %v, want %s %q after %v", what, name, sp.Action, sp.Reason, sp.After, w.action, w.reason, w.after)
			}
		}
	}

	cold := plan()
	check("cold", cold, map[string]want{
		"a": {ActionRuns, "no earlier entry", nil},
		"b": {ActionRuns, "no earlier entry", nil},
		"c": {ActionDecidedAfter, "its attribute note", []string{"a"}},
		"d": {ActionDecidedAfter, "its input b.out", []string{"b"}},
		"e": {ActionDecidedAfter, "its attribute note", []string{"c"}},
		"n": {ActionNotCacheable, "", nil},
		"s": {ActionSkipped, "when condition is false", nil},
		"w": {ActionDecidedAfter, "its when condition", []string{"a"}},
	})
	for name, wave := range map[string]int{"a": 1, "b": 1, "s": 1, "c": 2, "d": 2, "w": 2, "e": 3, "n": 4} {
		if cold[name].Wave != wave {
			t.Errorf("cold: stage %s in wave %d, want %d", name, cold[name].Wave, wave)
		}
	}
	if w := cold["a"].Writes; len(w) != 1 || w[0] != filepath.Join(dir, "a.out") || cold["n"].Writes != nil || !reflect.DeepEqual(cold["d"].Needs, []string{"b"}) {
		t.Errorf("cold: a writes %v, n writes %v, d needs %v", w, cold["n"].Writes, cold["d"].Needs)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.out")); err == nil {
		t.Error("the plan wrote a.out")
	}
	if _, err := os.Stat(filepath.Join(home, "actions")); err == nil {
		t.Error("the plan wrote into the action cache")
	}

	runKeys := func() map[string]*StageResult {
		t.Helper()
		res, err := Run(context.Background(), g, opts)
		if err != nil || res.Err() != nil {
			t.Fatalf("run: %v %v", err, res.Err())
		}
		m := map[string]*StageResult{}
		for _, r := range res.Stages {
			m[r.Stage.Name] = r
		}
		return m
	}
	first := runKeys()

	warm := plan()
	for _, name := range []string{"a", "b", "c", "d", "e", "w"} {
		if sp := warm[name]; sp.Action != ActionCached || sp.Key != first[name].CacheKey {
			t.Errorf("warm: stage %s: %s key %s, want cached with the run's key %s", name, sp.Action, sp.Key, first[name].CacheKey)
		}
	}
	check("warm", warm, map[string]want{"n": {ActionNotCacheable, "", nil}, "s": {ActionSkipped, "", nil}})

	// One source changed: b runs and d, which reads b's file, waits on it;
	// the rest stay cached with the keys the next run uses.
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := plan()
	check("b.txt changed", changed, map[string]want{
		"b": {ActionRuns, "input b.txt changed", nil},
		"d": {ActionDecidedAfter, "its input b.out", []string{"b"}},
		"n": {ActionNotCacheable, "", nil},
		"s": {ActionSkipped, "", nil},
	})
	second := runKeys()
	for name, sp := range changed {
		r := second[name]
		switch sp.Action {
		case ActionCached:
			if !r.CacheHit || r.CacheKey != sp.Key {
				t.Errorf("b.txt changed: stage %s planned cached (%s) but the run: hit %v key %s", name, sp.Key, r.CacheHit, r.CacheKey)
			}
		case ActionRuns:
			if r.CacheHit || r.CacheKey != sp.Key || r.MissReason != sp.Reason {
				t.Errorf("b.txt changed: stage %s planned to run (%s, %q) but the run: hit %v key %s %q", name, sp.Key, sp.Reason, r.CacheHit, r.CacheKey, r.MissReason)
			}
		}
		if sp.Action == ActionCached && name != "a" && name != "c" && name != "e" && name != "w" {
			t.Errorf("b.txt changed: stage %s planned cached", name)
		}
	}
}

// An exec-like stage without its cache switch is not cacheable, also
// while its other attributes wait on another stage: the dry run says
// "none", never "unknown", for it.
func TestDryRunSaysNoneForAStageWithoutCache(t *testing.T) {
	src := `pipeline "p" {
  stage "copy" "a" {
    from  = "a.txt"
    to    = "a.out"
  }
  stage "copy" "b" {
    from = "a.out"
    to   = "b.out"
    note = stage.a.sha256
  }
  stage "copy" "c" {
    from  = "a.out"
    to    = "c.out"
    note  = stage.a.sha256
    cache = true
  }
}`
	gs, _, diags := graph.Parse([]byte(src), "p.hcl", t.TempDir(), stage.NewRegistry(stage.Define[copyConfig, copyOutputs](copyKind{})))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	steps, err := Plan(gs[0], Options{Cache: cache.OpenActions(t.TempDir()), Inputs: map[string]cty.Value{}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.Stage.Name+" "+s.Cache)
	}
	if want := []string{"a none", "b none", "c unknown"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dry run: %v, want %v", got, want)
	}
}

// A stage whose key cannot be computed and that needs no stage that could
// change that is one the run would fail; after a stage, it waits on it.
func TestPlanSaysFailsOnlyWhenNothingBeforeCanHelp(t *testing.T) {
	src := `pipeline "p" {
  stage "copy" "lost" {
    from  = "missing.txt"
    to    = "lost.out"
    cache = true
  }
  stage "copy" "later" {
    from  = "lost.out"
    to    = "later.out"
    cache = true
    depends_on = [stage.lost]
  }
}`
	gs, _, diags := graph.Parse([]byte(src), "p.hcl", t.TempDir(), stage.NewRegistry(stage.Define[copyConfig, copyOutputs](copyKind{})))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	rp, err := PlanRun(gs[0], Options{Cache: cache.OpenActions(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	lost, later := rp.Stages[0], rp.Stages[1]
	if lost.Action != ActionFails || !strings.HasPrefix(lost.Reason, "its cache key: cache input missing.txt:") {
		t.Errorf("lost: %s %q", lost.Action, lost.Reason)
	}
	if later.Action != ActionDecidedAfter || !reflect.DeepEqual(later.After, []string{"lost"}) || !strings.HasPrefix(later.Reason, "its cache key: cache input lost.out:") {
		t.Errorf("later: %s %q after %v", later.Action, later.Reason, later.After)
	}
}

// A plan expands what it can: a for_each over an input is listed instance
// by instance; one over a stage's output is decided after that stage on a
// cold cache, and expanded (every instance cached) on a warm one.
func TestPlanExpandsInstances(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gs, _, diags := graph.Parse([]byte(`pipeline "p" {
  input "names" { default = ["x", "y"] }
  stage "copy" "a" {
    from  = "a.txt"
    to    = "a.out"
    cache = true
  }
  stage "copy" "k" {
    for_each = input.names
    from     = "a.txt"
    to       = "k-${each.key}.out"
    cache    = true
  }
  stage "copy" "m" {
    for_each = { (stage.a.sha256) = "m" }
    from     = "a.txt"
    to       = "m-${each.value}.out"
    cache    = true
  }
}`), "p.hcl", dir, stage.NewRegistry(stage.Define[copyConfig, copyOutputs](copyKind{})))
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	opts := Options{Parallelism: 2, Cache: cache.OpenActions(home), ToolDigest: "test"}
	plan := func() []string {
		rp, err := PlanRun(gs[0], opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sp := range rp.Stages {
			out = append(out, fmt.Sprintf("%s %s %s %v", sp.Address, sp.Action, sp.Reason, sp.After))
		}
		return out
	}
	cold := strings.Join(plan(), "\n")
	for _, want := range []string{`k["x"] runs`, `k["y"] runs`, "m decided after its for_each [a]"} {
		if !strings.Contains(cold, want) {
			t.Errorf("cold plan lacks %q:\n%s", want, cold)
		}
	}
	res, err := Run(context.Background(), gs[0], opts)
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	warm := plan()
	if len(warm) != 4 {
		t.Fatalf("warm plan: %q", warm)
	}
	for _, line := range warm {
		if !strings.Contains(line, " cached ") {
			t.Errorf("warm plan: %q is not cached", line)
		}
	}
	if !strings.HasPrefix(warm[3], `m["`) {
		t.Errorf("warm plan does not expand m: %q", warm)
	}
}
