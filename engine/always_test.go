package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/stage"
)

// cleanKind records the configuration it ran with, like a cleanup stage
// that is told what to clean by earlier stages' outputs.
type cleanKind struct {
	mu   *sync.Mutex
	seen map[string]cty.Value
}

func (cleanKind) Name() string    { return "clean" }
func (cleanKind) Version() string { return "1" }
func (cleanKind) Doc() string     { return "records its configuration" }
func (cleanKind) Attrs() []stage.Attr {
	return []stage.Attr{
		{Name: "dir", Type: cty.String},
		{Name: "keep", Type: cty.Number},
		{Name: "label", Type: cty.String},
		{Name: "must", Type: cty.String, Required: false},
	}
}
func (cleanKind) Outputs() []stage.Output { return nil }
func (k cleanKind) Run(_ context.Context, inv *stage.Invocation) (map[string]cty.Value, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seen[inv.Name] = inv.Config
	return nil, nil
}

// strictCleanKind is cleanKind with a required attribute.
type strictCleanKind struct{ cleanKind }

func (strictCleanKind) Name() string { return "strict_clean" }
func (strictCleanKind) Attrs() []stage.Attr {
	return []stage.Attr{{Name: "dir", Type: cty.String, Required: true}}
}

// TestAlwaysStageSeesGoneOutputsAsUndecided is the rule of issue 29 point 1:
// an always stage whose attributes refer to outputs of a stage that failed
// or did not start runs with the attributes that can be decided (the others
// unset, the kind's default) instead of failing with "argument must not be
// null"; it is skipped, with the reason, only when a required attribute or
// its when condition cannot be decided. A stage skipped by its condition
// still reads as nulls.
func TestAlwaysStageSeesGoneOutputsAsUndecided(t *testing.T) {
	rec := newRecorder()
	clean := cleanKind{mu: &sync.Mutex{}, seen: map[string]cty.Value{}}
	reg := stage.NewRegistry(sleepKind{rec}, failKind{rec}, noopKind{}, clean, strictCleanKind{clean})
	g := mustParse(t, `
pipeline "p" {
  stage "fail"  "inputs" {}
  stage "sleep" "after" { in = stage.inputs.value }
  stage "sleep" "off" {
    when = false
  }
  stage "clean" "cleanup" {
    always     = true
    dir        = stage.inputs.value
    keep       = 2 + length(split("/", stage.after.value))
    label      = "fixed"
    must       = stage.off.value == null ? "off was skipped" : "off ran"
    depends_on = [stage.after]
  }
  stage "strict_clean" "strict" {
    always = true
    dir    = "${stage.inputs.value}/staging"
  }
  stage "clean" "guarded" {
    always = true
    when   = stage.inputs.value != ""
  }
  stage "clean" "decided_when" {
    always = true
    when   = stage.off.value == null
  }
  verdicts = [stage.inputs]
}`, reg)
	res, err := Run(context.Background(), g, Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed == nil || res.Failed.Stage.Name != "inputs" {
		t.Fatalf("failed = %v, want inputs", res.Failed)
	}
	byName := map[string]*StageResult{}
	for _, r := range res.Stages {
		byName[r.Stage.Name] = r
	}

	cl := byName["cleanup"]
	if cl.Status != Succeeded {
		t.Fatalf("cleanup: %s: %v (want it to run with what can be decided)", cl.Status, cl.Err)
	}
	cfg := clean.seen["cleanup"]
	if !cfg.GetAttr("dir").IsNull() || !cfg.GetAttr("keep").IsNull() {
		t.Errorf("cleanup ran with dir=%#v keep=%#v, want both unset (they need outputs of stages that did not run)", cfg.GetAttr("dir"), cfg.GetAttr("keep"))
	}
	if got := cfg.GetAttr("label"); got != cty.StringVal("fixed") {
		t.Errorf("label = %#v, want the decidable value", got)
	}
	if got := cfg.GetAttr("must"); got != cty.StringVal("off was skipped") {
		t.Errorf("must = %#v: a stage skipped by its condition must still read as nulls", got)
	}

	st := byName["strict"]
	if st.Status != Skipped || st.Err == nil ||
		st.Err.Error() != "skipped: its required attribute dir needs outputs of stage inputs, which failed" {
		t.Errorf("strict: %s: %v", st.Status, st.Err)
	}
	if _, ran := clean.seen["strict"]; ran {
		t.Error("strict ran without its required attribute")
	}

	gd := byName["guarded"]
	if gd.Status != Skipped || gd.Err == nil || !strings.Contains(gd.Err.Error(), "when condition needs outputs of stage inputs, which failed") {
		t.Errorf("guarded: %s: %v", gd.Status, gd.Err)
	}
	if r := byName["decided_when"]; r.Status != Succeeded {
		t.Errorf("decided_when: %s: %v", r.Status, r.Err)
	}
	want := "p: stage inputs failed: boom from inputs"
	if got := res.Err().Error(); got != want {
		t.Errorf("run error %q, want %q", got, want)
	}
}
