package engine

import (
	"context"
	"fmt"
	"os"

	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// PlanStep is one stage of a dry run: its position in the start order and
// what the cache would do.
type PlanStep struct {
	Stage *graph.Stage
	// Cache is "hit", "miss", "none" (not cacheable) or "unknown" (the key
	// depends on outputs of stages that have not run).
	Cache string
	Key   string
	Note  string
	// Reason says why a "miss" would miss: what differs from the newest
	// entry the stage used (see StageResult.MissReason).
	Reason string
}

// Plan returns the order in which a run with one slot would start the
// stages (the ready queue's declaration order) and the cache verdict of
// each, without running anything.
func Plan(g *graph.Graph, opts Options) ([]PlanStep, error) {
	scope, err := g.NewScope(opts.Inputs)
	if err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := newScheduler(context.Background(), g, scope, &Options{Parallelism: 1, ToolDigest: opts.ToolDigest, Cache: opts.Cache, Getenv: getenv})
	var steps []PlanStep
	for _, st := range startOrder(g) {
		steps = append(steps, s.planStep(st))
	}
	return steps, nil
}

func (s *scheduler) planStep(st *graph.Stage) PlanStep {
	step := PlanStep{Stage: st, Cache: "none"}
	ck, ok := st.Kind.(stage.Cacheable)
	if !ok || s.opts.Cache == nil {
		return step
	}
	if st.Expands() {
		// Its instances are made in the run (--plan lists those it can).
		if sw, ok := st.Kind.(stage.CacheSwitch); ok && sw.CacheSwitch() != "" && !st.Sets(sw.CacheSwitch()) {
			return step // the switch is off in every instance
		}
		step.Cache, step.Note = "unknown", "one entry per instance of its for_each (piship run --plan lists them)"
		return step
	}
	if len(st.DataDeps) > 0 {
		// Nothing has run: the outputs it reads are unknown, and so is
		// its key, unless its cache switch is off (exec without cache).
		unknown := make(graph.Gone, len(s.g.Stages))
		for _, d := range st.DataDeps {
			unknown[d.Index] = true
		}
		if cfg, undecided, diags := s.scope.EvalStage(st, s.outputs, unknown); !diags.HasErrors() && switchedOff(st, cfg, undecided) {
			return step
		}
		step.Cache, step.Note = "unknown", fmt.Sprintf("depends on outputs of stage %s", st.DataDeps[0].Name)
		return step
	}
	cfg, _, diags := s.scope.EvalStage(st, s.outputs, s.gone)
	if diags.HasErrors() {
		step.Cache, step.Note = "unknown", diag.NewError(errcode.ConfigInvalid, diags).Error()
		return step
	}
	if switchedOff(st, cfg, nil) {
		return step
	}
	inv := &stage.Invocation{Pipeline: s.g.Name, Name: st.Name, Dir: s.g.Dir, Config: cfg, Getenv: s.opts.Getenv}
	spec, cacheable, err := ck.CacheSpec(inv)
	switch {
	case err != nil:
		step.Cache, step.Note = "unknown", err.Error()
	case !cacheable:
	default:
		key, inputs, err := s.cacheKey(st, cfg, spec)
		if err != nil {
			step.Cache, step.Note = "unknown", err.Error()
			break
		}
		step.Key, step.Cache = key, "miss"
		if s.opts.Cache.Has(key) {
			step.Cache = "hit"
		} else {
			step.Reason = s.missReason(s.stageID(st, "action", ""), key, inputs)
		}
	}
	return step
}
