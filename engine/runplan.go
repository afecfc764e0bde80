package engine

import (
	"container/heap"
	"context"
	"errors"
	"io"
	"os"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

// A run's plan (`piship run --plan`, `build --plan`, `release --plan`):
// what each stage would do, decided from what is known before anything
// runs. Inputs and locals are known; a stage's outputs are known when the
// action cache holds its entry (read, never restored) or its `when` is
// false (nulls); the outputs of every stage that would run are not.

// Action is what a plan says a stage would do.
type Action string

const (
	// ActionCached: its key is known and the action cache holds its entry.
	ActionCached Action = "cached"
	// ActionRuns: its key is known and the cache has no entry for it.
	ActionRuns Action = "runs"
	// ActionSkipped: its `when` condition is known to be false.
	ActionSkipped Action = "skipped"
	// ActionNotCacheable: the action cache does not serve it (the kind has
	// no cache key, or its configuration turns caching off): it runs.
	ActionNotCacheable Action = "not cacheable"
	// ActionDecidedAfter: its when, configuration or an input file waits
	// on outputs of stages that have not run (StagePlan.After).
	ActionDecidedAfter Action = "decided after"
	// ActionFails: its configuration or cache key cannot be computed and
	// no stage before it can change that: the run would fail it.
	ActionFails Action = "fails"
)

// StagePlan is what one stage would do.
type StagePlan struct {
	// Address names the entry: the stage's name (graph.Stage.Name), which
	// for a module's stage or an instance is its address
	// (module.m.stage.x, x["k"]).
	Address string
	Stage   *graph.Stage
	Action  Action
	// Key is the action cache key when it is known (cached, runs).
	Key string
	// Reason says why: the cache miss reason for runs (what `piship
	// explain` would say), why it is skipped, what waits for After
	// (its when condition, its attributes, its inputs), or the error.
	Reason string
	// After are the addresses of the stages a decided-after entry waits
	// on, in declaration order.
	After []string
	// Needs are the addresses of the stages it starts after.
	Needs []string
	// Wave is 1 for a stage that needs none, else one more than the
	// highest wave of its Needs: stages of one wave do not depend on each
	// other and can run at the same time.
	Wave int
	// Writes are the files the stage declares it writes (its cache spec's
	// outputs, resolved), nil when not known.
	Writes []string
}

// RunPlan is the plan of a whole run.
type RunPlan struct {
	Pipeline string
	// File is the pipeline file (PipelineFile); Dir is the directory its
	// relative paths resolve against.
	File, Dir string
	// Stages are the entries in declaration order.
	Stages []*StagePlan
	// Waves is the number of waves.
	Waves int
}

// PlanRun computes the plan of a run of g with opts (Inputs, Cache,
// ToolDigest, Getenv) without running a stage: it evaluates `when`
// conditions and configurations with what is known, computes cache keys
// through the kinds' CacheSpec and reads entries from the cache without
// restoring them. Input files are hashed as they are now, except those an
// earlier stage declares it writes: a cached one's from its entry, and a
// stage that would run makes its readers wait on it.
func PlanRun(g *graph.Graph, opts Options) (*RunPlan, error) {
	scope, err := g.NewScope(opts.Inputs)
	if err != nil {
		return nil, err
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	n := len(g.Stages)
	p := &planner{
		s:       newScheduler(context.Background(), g, scope, &Options{Parallelism: 1, ToolDigest: opts.ToolDigest, Cache: opts.Cache, Getenv: opts.Getenv}),
		unknown: make(graph.Gone, n),
		plans:   make([]*StagePlan, n),
		written: map[string]writer{},
	}
	rp := &RunPlan{Pipeline: g.Name, File: PipelineFile(g), Dir: g.Dir}
	instances := make([][]*StagePlan, n)
	next := n
	for _, st := range startOrder(g) {
		if !st.Expands() {
			sp := p.plan(st)
			p.plans[st.Index] = sp
			rp.Waves = max(rp.Waves, sp.Wave)
			continue
		}
		// Its instances, when its for_each is known now; else the stage
		// itself, decided after what its for_each reads.
		insts, err := scope.Expand(st, p.s.outputs, p.unknown, next)
		sum := &StagePlan{Address: st.Name, Stage: st, Wave: 1}
		for _, d := range st.DepStages {
			sum.Needs = append(sum.Needs, p.plans[d.Index].Address)
			sum.Wave = max(sum.Wave, p.plans[d.Index].Wave+1)
		}
		switch {
		case errors.Is(err, graph.ErrUndecided):
			p.after(sum, nil, "its for_each")
			instances[st.Index] = []*StagePlan{sum}
		case err != nil:
			p.runs(sum, ActionFails, "its for_each: "+err.Error())
			instances[st.Index] = []*StagePlan{sum}
		case len(insts) == 0:
			sum.Action, sum.Reason = ActionSkipped, "its for_each is empty"
		default:
			next += len(insts)
			for _, in := range insts {
				sp := p.plan(in)
				instances[st.Index] = append(instances[st.Index], sp)
				sum.Wave = max(sum.Wave, sp.Wave)
				if p.unknown[st.Index] {
					continue
				}
				if sp.Action != ActionCached && sp.Action != ActionSkipped {
					p.unknown[st.Index] = true
				}
			}
		}
		p.plans[st.Index] = sum
		rp.Waves = max(rp.Waves, sum.Wave)
	}
	for _, st := range g.Stages {
		if insts := instances[st.Index]; st.Expands() {
			rp.Stages = append(rp.Stages, insts...)
			continue
		}
		rp.Stages = append(rp.Stages, p.plans[st.Index])
	}
	return rp, nil
}

// startOrder is the order in which a run with one slot would start the
// stages: the ready queue's, by declaration among the ready ones.
func startOrder(g *graph.Graph) []*graph.Stage {
	waiting := make([]int, len(g.Stages))
	var q readyQueue
	for _, st := range g.Stages {
		if waiting[st.Index] = len(st.DepStages); waiting[st.Index] == 0 {
			heap.Push(&q, st)
		}
	}
	order := make([]*graph.Stage, 0, len(g.Stages))
	for q.Len() > 0 {
		st := heap.Pop(&q).(*graph.Stage)
		order = append(order, st)
		for _, d := range st.Dependents {
			if waiting[d.Index]--; waiting[d.Index] == 0 {
				heap.Push(&q, d)
			}
		}
	}
	return order
}

type planner struct {
	// s holds the scope, the known outputs (s.outputs) and the cache.
	s *scheduler
	// unknown marks the stages whose outputs are not known before running;
	// evaluation sees them as unknown values (graph.Scope.EvalStage).
	unknown graph.Gone
	plans   []*StagePlan
	// written maps each file a planned stage declares it writes to that
	// stage and, when it would be restored from the cache, its digest.
	written map[string]writer
}

type writer struct {
	st     *graph.Stage
	digest string // "" when the stage would run
}

func (p *planner) plan(st *graph.Stage) *StagePlan {
	sp := &StagePlan{Address: st.Name, Stage: st, Wave: 1}
	for _, d := range st.DepStages {
		sp.Needs = append(sp.Needs, p.plans[d.Index].Address)
		sp.Wave = max(sp.Wave, p.plans[d.Index].Wave+1)
	}
	if st.When != nil {
		run, undecided, diags := p.s.scope.EvalWhen(st, p.s.outputs, p.unknown)
		if !run && len(undecided) == 0 && !diags.HasErrors() {
			p.s.setOutcome(st, nil, false)
		}
		switch {
		case diags.HasErrors():
			return p.cannot(sp, "its when condition", diag.NewError(errcode.ConfigInvalid, diags))
		case len(undecided) > 0:
			return p.after(sp, undecided, "its when condition")
		case !run:
			// Its outputs are nulls to the stages after it, as in a run.
			sp.Action, sp.Reason = ActionSkipped, "its when condition is false"
			return sp
		}
	}
	ck, ok := st.Kind.(stage.Cacheable)
	if !ok {
		return p.runs(sp, ActionNotCacheable, "")
	}
	if p.s.opts.Cache == nil {
		return p.runs(sp, ActionRuns, "the action cache is off")
	}
	cfg, undecided, diags := p.s.scope.EvalStage(st, p.s.outputs, p.unknown)
	if diags.HasErrors() {
		return p.cannot(sp, "its configuration", diag.NewError(errcode.ConfigInvalid, diags))
	}
	if switchedOff(st, cfg, undecided) {
		return p.runs(sp, ActionNotCacheable, "")
	}
	if len(undecided) > 0 {
		var names, attrs []string
		for _, u := range undecided {
			attrs = append(attrs, u.Attr)
			names = append(names, u.Stages...)
		}
		return p.after(sp, names, "its "+canon.Noun(len(attrs), "attribute")+" "+strings.Join(attrs, ", "))
	}
	inv := &stage.Invocation{Pipeline: p.s.g.Name, Name: st.Name, Dir: p.s.g.Dir, Config: cfg, Log: io.Discard, Progress: io.Discard, Getenv: p.s.opts.Getenv}
	spec, cacheable, err := ck.CacheSpec(inv)
	switch {
	case err != nil:
		return p.cannot(sp, "its cache key", err)
	case !cacheable:
		return p.runs(sp, ActionNotCacheable, "")
	}
	outs := make([]string, len(spec.Outputs))
	for i, o := range spec.Outputs {
		outs[i] = stage.Resolve(spec.Dir, o)
	}
	sp.Writes = outs

	// An input file a stage before it writes and that would run is known
	// only once that stage has run.
	var waits, files []string
	for _, in := range spec.Inputs {
		if w, ok := p.written[stage.Resolve(spec.Dir, in)]; ok && w.digest == "" && upstream(st, w.st) {
			waits, files = append(waits, w.st.Name), append(files, in)
		}
	}
	if len(waits) > 0 {
		p.wrote(sp, nil)
		return p.after(sp, waits, "its "+canon.Noun(len(files), "input")+" "+strings.Join(files, ", "))
	}
	key, inputs, err := p.s.keyWith(st, cfg, spec, p.hash(st))
	if err != nil {
		return p.cannot(sp, "its cache key", err)
	}
	sp.Key = key
	if res, hit := p.s.opts.Cache.Peek(key, spec.Outputs); hit {
		if out, err := decodeOutputs(st.Kind, res.Outputs); err == nil {
			sp.Action = ActionCached
			p.s.setOutcome(st, out, false)
			p.wrote(sp, func(i int) string { return res.Files[spec.Outputs[i]] })
			return sp
		}
	}
	p.wrote(sp, nil)
	return p.runs(sp, ActionRuns, p.s.missReason(p.s.stageID(st, "action", ""), key, inputs))
}

// runs records a stage that would run: its outputs are unknown after it.
func (p *planner) runs(sp *StagePlan, a Action, reason string) *StagePlan {
	sp.Action, sp.Reason = a, reason
	if sp.Stage.Template != nil {
		p.s.scope.Record(sp.Stage, nil, true)
	} else {
		p.unknown[sp.Stage.Index] = true
	}
	return sp
}

// after records a stage decided after the stages names (what says what of
// it waits on them).
func (p *planner) after(sp *StagePlan, names []string, what string) *StagePlan {
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, st := range p.s.g.Stages {
		if seen[st.Name] {
			sp.After = append(sp.After, p.plans[st.Index].Address)
		}
	}
	if len(sp.After) == 0 {
		// Not named by the expressions: every stage it reads unknown outputs of.
		for _, d := range sp.Stage.DataDeps {
			if p.unknown[d.Index] {
				sp.After = append(sp.After, p.plans[d.Index].Address)
			}
		}
	}
	return p.runs(sp, ActionDecidedAfter, what)
}

// cannot records a stage whose when, configuration or key (what) cannot be
// computed now: decided after the stages it needs (which may write what it
// lacks), or, needing none that is not skipped, a stage the run would fail.
func (p *planner) cannot(sp *StagePlan, what string, err error) *StagePlan {
	var names []string
	for _, d := range sp.Stage.DepStages {
		if p.plans[d.Index].Action != ActionSkipped {
			names = append(names, d.Name)
		}
	}
	reason := what + ": " + err.Error()
	if len(names) == 0 {
		return p.runs(sp, ActionFails, reason)
	}
	return p.after(sp, names, reason)
}

// wrote records sp's declared outputs, each with its digest when the
// stage would be restored from the cache (digest nil: it would run).
func (p *planner) wrote(sp *StagePlan, digest func(i int) string) {
	for i, path := range sp.Writes {
		w := writer{st: sp.Stage}
		if digest != nil {
			w.digest = digest(i)
		}
		p.written[path] = w
	}
}

// hash is how the plan of st hashes an input file: the digest a cached
// stage before it would restore, else the file as it is now.
func (p *planner) hash(st *graph.Stage) func(string) (string, error) {
	return func(path string) (string, error) {
		if w, ok := p.written[path]; ok && w.digest != "" && upstream(st, w.st) {
			return w.digest, nil
		}
		return cache.HashFile(path)
	}
}

// upstream reports whether st depends on w, directly or not.
func upstream(st, w *graph.Stage) bool {
	seen := map[*graph.Stage]bool{}
	stack := append([]*graph.Stage(nil), st.DepStages...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if d == w {
			return true
		}
		if !seen[d] {
			seen[d] = true
			stack = append(stack, d.DepStages...)
		}
	}
	return false
}

// switchedOff reports whether st's kind has a cache switch
// (stage.CacheSwitch) that is decided and unset or false in cfg: the stage
// is not cacheable whatever its undecided attributes.
func switchedOff(st *graph.Stage, cfg cty.Value, undecided []graph.Undecided) bool {
	sw, ok := st.Kind.(stage.CacheSwitch)
	if !ok || sw.CacheSwitch() == "" || !cfg.Type().IsObjectType() || !cfg.Type().HasAttribute(sw.CacheSwitch()) {
		return false
	}
	for _, u := range undecided {
		if u.Attr == sw.CacheSwitch() {
			return false
		}
	}
	v := cfg.GetAttr(sw.CacheSwitch())
	return v.IsNull() || v.IsKnown() && v.Type() == cty.Bool && v.False()
}
