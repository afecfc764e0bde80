package engine

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing"
)

// EventKind says what happened to a stage.
type EventKind int

const (
	// EventStarted: the stage took a slot and began (cache lookup included).
	EventStarted EventKind = iota
	// EventFinished: the stage ended; Result says how (passed, cached,
	// failed, cancelled).
	EventFinished
	// EventSkipped: the stage will not run; Result.Status says whether it
	// was skipped by its condition or not started, Result.Err why.
	EventSkipped
	// EventExpanded: a stage with for_each (or in a module with one) was
	// made into Instances stages, which run in its place: their events
	// follow. The run's stage count grows by Instances minus one.
	EventExpanded
)

// Event is one progress event. Result is set for finished and skipped
// stages; its Start and End are the stage span's timestamps.
type Event struct {
	Kind     EventKind
	Pipeline string
	Stage    *graph.Stage
	Result   *StageResult
	// Instances is the number of instances an EventExpanded made.
	Instances int
}

type scheduler struct {
	ctx   context.Context
	g     *graph.Graph
	scope *graph.Scope
	opts  *Options

	results []*StageResult
	outputs []map[string]cty.Value // by stage index; written before dependents start
	// gone marks the stages that failed, were cancelled or did not start:
	// an always stage sees their outputs as unknown (graph.Scope.EvalStage).
	gone    graph.Gone
	waiting []int // unsettled dependencies per stage
	pos     []int // position in verdict order
	ready   readyQueue
	running int
	settled int

	// failPos is the lowest verdict position among failed stages (len when
	// none), failSeq the lowest instance position at it (an instance's
	// Seq; maxInt for a stage that has none); needed marks, by declaration
	// index, stages that may still start after a failure.
	failPos     int
	failSeq     int
	firstFailed *graph.Stage
	needed      []bool
	interrupted bool

	// Instances: results grows past the declared stages as stages expand
	// (outputs and gone do not: workers read them, and an instance's
	// outcome is kept on it, graph.Scope.Record); instances[i] lists
	// those of declared stage i, and left[i] how many have not settled.
	instances [][]*graph.Stage
	left      []int
	total     int // stages and instances to settle

	jobs chan *graph.Stage
	done chan *StageResult
}

func newScheduler(ctx context.Context, g *graph.Graph, scope *graph.Scope, opts *Options) *scheduler {
	n := len(g.Stages)
	s := &scheduler{
		ctx: ctx, g: g, scope: scope, opts: opts,
		results: make([]*StageResult, n),
		outputs: make([]map[string]cty.Value, n),
		gone:    make(graph.Gone, n),
		waiting: make([]int, n),
		pos:     make([]int, n),
		failPos: n,
		failSeq: math.MaxInt,
		jobs:    make(chan *graph.Stage, max(1, min(opts.Parallelism, n))),
		done:    make(chan *StageResult, max(1, min(opts.Parallelism, n))),

		instances: make([][]*graph.Stage, n),
		left:      make([]int, n),
		total:     n,
	}
	for i, st := range g.VerdictOrder {
		s.pos[st.Index] = i
	}
	for _, st := range g.Stages {
		s.results[st.Index] = &StageResult{Stage: st}
		s.waiting[st.Index] = len(st.DepStages)
	}
	return s
}

func (s *scheduler) run() *Result {
	workers := max(1, min(s.opts.Parallelism, len(s.g.Stages)))
	for range workers {
		go s.worker()
	}
	defer close(s.jobs)

	for _, st := range s.g.Stages {
		if s.waiting[st.Index] == 0 {
			heap.Push(&s.ready, st)
		}
	}
	ctxDone := s.ctx.Done()
	for s.settled < s.total {
		s.dispatch()
		if s.settled == s.total {
			break // dispatch settled the rest (skipped or not started)
		}
		if s.running == 0 {
			// Nothing runs and nothing can start: every remaining stage
			// is blocked behind a stage that will never run.
			if s.ready.Len() == 0 {
				panic(fmt.Sprintf("engine: %d stages unsettled with nothing running", s.total-s.settled))
			}
			continue
		}
		select {
		case r := <-s.done:
			s.finish(r)
		case <-ctxDone:
			s.interrupted = true
			ctxDone = nil
			s.recomputeNeeded()
		}
	}
	res := &Result{Pipeline: s.g.Name, Interrupted: s.interrupted, Stages: s.results}
	if len(s.results) > len(s.g.Stages) {
		// Instances in their stages' places, in key order.
		res.Stages = make([]*StageResult, 0, len(s.results))
		for _, st := range s.g.Stages {
			res.Stages = append(res.Stages, s.resultsOf(st)...)
		}
	}
	for _, st := range s.g.VerdictOrder {
		for _, r := range s.resultsOf(st) {
			if r.Status == Failed || r.Status == Cancelled {
				res.Failed = r
				break
			}
		}
		if res.Failed != nil {
			break
		}
	}
	return res
}

// resultsOf is a declared stage's result, or its instances' in order when
// it expanded.
func (s *scheduler) resultsOf(st *graph.Stage) []*StageResult {
	insts := s.instances[st.Index]
	if insts == nil {
		return []*StageResult{s.results[st.Index]}
	}
	out := make([]*StageResult, len(insts))
	for i, in := range insts {
		out[i] = s.results[in.Index]
	}
	return out
}

// expand makes the instances of a declared stage that is ready: they go
// to the ready queue in its place, and it settles when they all have.
func (s *scheduler) expand(st *graph.Stage) {
	insts, err := s.scope.Expand(st, s.outputs, s.gone, len(s.results))
	if errors.Is(err, graph.ErrUndecided) {
		s.settleAs(st, Skipped, fmt.Errorf("skipped: %v", err), "for_each undecided")
		return
	}
	if err != nil {
		s.failWithoutRunning(st, errcode.Newf(errcode.ConfigInvalid, "%s: %v", st.Name, err), "for_each could not be evaluated")
		return
	}
	if len(insts) == 0 {
		s.settleAs(st, Skipped, ErrNoInstances, "for_each is empty")
		return
	}
	s.instances[st.Index] = insts
	s.left[st.Index] = len(insts)
	s.total += len(insts)
	// One allocation for the instances' results: a for_each may make
	// thousands, and this loop is what every stage waits on.
	results := make([]StageResult, len(insts))
	s.results = slices.Grow(s.results, len(insts))
	for i, in := range insts {
		results[i].Stage = in
		s.results = append(s.results, &results[i])
		heap.Push(&s.ready, in)
	}
	s.emit(Event{Kind: EventExpanded, Pipeline: s.g.Name, Stage: st, Instances: len(insts)})
}

// dispatch starts ready stages while slots are free, lowest index first.
func (s *scheduler) dispatch() {
	for s.running < s.opts.Parallelism && s.ready.Len() > 0 {
		st := heap.Pop(&s.ready).(*graph.Stage)
		if !s.mayStart(st) {
			s.settleAs(st, NotStarted, s.stopReason(), "run stopping")
			continue
		}
		if st.Expands() {
			s.expand(st)
			continue
		}
		if st.When != nil {
			run, undecided, diags := s.scope.EvalWhen(st, s.outputs, s.gone)
			if diags.HasErrors() {
				s.failWithoutRunning(st, diag.NewError(errcode.ConfigInvalid, diags), "when could not be evaluated")
				continue
			}
			if len(undecided) > 0 {
				s.settleAs(st, Skipped, fmt.Errorf("skipped: its when condition needs outputs of %s", s.goneWords(undecided)), "when undecided")
				continue
			}
			if !run {
				s.settleAs(st, Skipped, ErrWhenFalse, "when is false")
				continue
			}
		}
		if st.Always && s.dataDepGone(st) {
			// Decide now whether the always stage can run without the
			// outputs that will never come (graph.Scope.EvalStage).
			_, undecided, diags := s.scope.EvalStage(st, s.outputs, s.gone)
			if !diags.HasErrors() {
				if u, ok := firstRequired(undecided); ok {
					s.settleAs(st, Skipped, fmt.Errorf("skipped: its required attribute %s needs outputs of %s", u.Attr, s.goneWords(u.Stages)), "required attribute undecided")
					continue
				}
			}
		}
		s.running++
		s.emit(Event{Kind: EventStarted, Pipeline: s.g.Name, Stage: st})
		s.jobs <- st
	}
}

// dataDepGone reports whether st refers to outputs of a stage that is gone.
func (s *scheduler) dataDepGone(st *graph.Stage) bool {
	for _, d := range st.DataDeps {
		if s.gone[d.Index] {
			return true
		}
	}
	return false
}

func firstRequired(us []graph.Undecided) (graph.Undecided, bool) {
	for _, u := range us {
		if u.Required {
			return u, true
		}
	}
	return graph.Undecided{}, false
}

// goneWords names gone stages with what happened to them: "stage inputs,
// which failed".
func (s *scheduler) goneWords(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		st, _ := s.g.Stage(n)
		parts[i] = "stage " + n + ", which " + s.results[st.TemplateIndex()].Status.pastTense()
	}
	return strings.Join(parts, "; ")
}

func (s *scheduler) stopping() bool { return s.interrupted || s.firstFailed != nil }

// mayStart decides whether a ready stage starts once the run is stopping.
func (s *scheduler) mayStart(st *graph.Stage) bool {
	if !s.stopping() || st.Always {
		return true
	}
	if s.interrupted {
		return false
	}
	t := st.TemplateIndex()
	if s.needed[t] {
		return true
	}
	// An instance of the failed stage that comes before the failed one
	// in key order may still change the result.
	return st.Template != nil && s.pos[t] == s.failPos && st.Seq < s.failSeq
}

func (s *scheduler) stopReason() error {
	if s.interrupted {
		return fmt.Errorf("not started: the run was interrupted")
	}
	return fmt.Errorf("not started: stage %s failed", s.firstFailed.Name)
}

// finish records a worker's result and releases what it unblocks.
func (s *scheduler) finish(r *StageResult) {
	s.running--
	st := r.Stage
	s.results[st.Index] = r
	if r.Status == Succeeded {
		if r.Outputs == nil {
			r.Outputs = map[string]cty.Value{}
		}
		s.setOutcome(st, r.Outputs, false)
	} else {
		s.setOutcome(st, nil, true)
		seq := math.MaxInt
		if st.Template != nil {
			seq = st.Seq
		}
		if p := s.pos[st.TemplateIndex()]; p < s.failPos || (p == s.failPos && seq < s.failSeq) {
			s.failPos, s.failSeq = p, seq
			if s.firstFailed == nil {
				s.firstFailed = st
			}
			s.recomputeNeeded()
		}
	}
	s.emit(Event{Kind: EventFinished, Pipeline: s.g.Name, Stage: st, Result: r})
	s.settle(st)
}

// settle marks st done and makes its dependents ready, skipping those that
// can no longer run. It works through a queue so a long chain of skips does
// not recurse.
func (s *scheduler) settle(st *graph.Stage) {
	queue := []*graph.Stage{st}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		s.settled++
		if t := cur.Template; t != nil {
			// The declared stage settles with its last instance.
			if s.left[t.Index]--; s.left[t.Index] == 0 {
				s.settleTemplate(t)
				queue = append(queue, t)
			}
			continue
		}
		for _, d := range cur.Dependents {
			s.waiting[d.Index]--
			if s.waiting[d.Index] > 0 {
				continue
			}
			if blocker := s.failedDep(d); blocker != nil && !d.Always {
				past := blocker.Status.pastTense()
				s.mark(d, NotStarted, fmt.Errorf("not started: it needs stage %s, which %s", blocker.Stage.Name, past),
					"dependency "+blocker.Stage.Name+" "+past)
				queue = append(queue, d)
				continue
			}
			heap.Push(&s.ready, d)
		}
	}
}

// setOutcome keeps what a stage gave for the stages that read it.
func (s *scheduler) setOutcome(st *graph.Stage, outputs map[string]cty.Value, gone bool) {
	if st.Template != nil {
		s.scope.Record(st, outputs, gone)
		return
	}
	s.outputs[st.Index], s.gone[st.Index] = outputs, gone
}

// settleTemplate gives a declared stage that expanded the result its
// dependents see: the first instance (in key order) that failed, was
// cancelled or did not start, else skipped when all were, else passed.
func (s *scheduler) settleTemplate(t *graph.Stage) {
	r := s.results[t.Index]
	r.Status = Skipped
	for _, in := range s.instances[t.Index] {
		ir := s.results[in.Index]
		switch ir.Status {
		case Succeeded:
			r.Status = Succeeded
			continue
		case Skipped:
			continue
		}
		r.Status, r.Err = ir.Status, ir.Err
		s.gone[t.Index] = true
		return
	}
}

// failedDep returns a dependency that blocks st: one that failed, was
// cancelled or did not start. A skipped dependency does not block.
func (s *scheduler) failedDep(st *graph.Stage) *StageResult {
	for _, d := range st.DepStages {
		if r := s.results[d.Index]; r.Status != Succeeded && r.Status != Skipped {
			return r
		}
	}
	return nil
}

func (s *scheduler) settleAs(st *graph.Stage, status Status, why error, reason string) {
	s.mark(st, status, why, reason)
	s.settle(st)
}

// failWithoutRunning records a stage that failed before it could start
// (its condition could not be evaluated) as a failure like any other.
func (s *scheduler) failWithoutRunning(st *graph.Stage, err error, reason string) {
	s.running++ // finish releases the slot it never took
	s.skipSpan(st, Failed, reason, err)
	s.finish(&StageResult{Stage: st, Status: Failed, Err: err})
}

func (s *scheduler) mark(st *graph.Stage, status Status, why error, reason string) {
	r := s.results[st.Index]
	r.Status, r.Err = status, why
	s.setOutcome(st, nil, status != Skipped)
	s.skipSpan(st, status, reason, nil)
	s.emit(Event{Kind: EventSkipped, Pipeline: s.g.Name, Stage: st, Result: r})
}

// skipSpan records a stage that will not run as a zero-length span at the
// moment the scheduler decided, so a trace viewer shows every stage of the
// graph and why some did not run. reason is the short piship.stage.skip_reason
// ("when is false", "dependency X failed", "run stopping").
func (s *scheduler) skipSpan(st *graph.Stage, status Status, reason string, err error) {
	now := time.Now()
	_, span := s.opts.Tracer.Start(s.ctx, st.Label(), trace.WithTimestamp(now))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String(tracing.AttrPipeline, s.g.Name),
			attribute.String(tracing.AttrStageKind, st.KindName),
			attribute.String(tracing.AttrStageName, st.Name),
			attribute.String(tracing.AttrStageAddress, st.Addr),
			attribute.String(tracing.AttrVerdict, status.String()),
			attribute.String(tracing.AttrSkipReason, reason),
		)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End(trace.WithTimestamp(now))
}

// recomputeNeeded marks the stages that may still start after a failure:
// those earlier in verdict order than every failure so far, and every stage
// they depend on. Running them keeps the result independent of timing.
func (s *scheduler) recomputeNeeded() {
	n := len(s.g.Stages)
	if s.needed == nil {
		s.needed = make([]bool, n)
	} else {
		clear(s.needed)
	}
	if s.interrupted {
		return
	}
	var stack []*graph.Stage
	for _, st := range s.g.VerdictOrder[:s.failPos] {
		if !s.needed[st.Index] {
			s.needed[st.Index] = true
			stack = append(stack, st)
		}
	}
	for len(stack) > 0 {
		st := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range st.DepStages {
			if !s.needed[d.Index] {
				s.needed[d.Index] = true
				stack = append(stack, d)
			}
		}
	}
}

func (s *scheduler) emit(e Event) {
	if s.opts.Events != nil {
		s.opts.Events(e)
	}
}

func (s *scheduler) worker() {
	for st := range s.jobs {
		s.done <- s.execute(st)
	}
}

// readyQueue is a min-heap of stages by declaration index, instances by
// the index of the stage they were made from, then key order.
type readyQueue []*graph.Stage

func (q readyQueue) Len() int { return len(q) }
func (q readyQueue) Less(i, j int) bool {
	a, b := q[i].TemplateIndex(), q[j].TemplateIndex()
	if a != b {
		return a < b
	}
	return q[i].Seq < q[j].Seq
}
func (q readyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *readyQueue) Push(x any)   { *q = append(*q, x.(*graph.Stage)) }
func (q *readyQueue) Pop() any {
	old := *q
	st := old[len(old)-1]
	*q = old[:len(old)-1]
	return st
}
