// Package engine runs validated pipeline graphs.
//
// One scheduler loop owns all state: a ready queue ordered by declaration,
// N parallelism slots held only by running stages (a stage waiting for its
// inputs holds none), and a fixed pool of workers. Each stage runs inside an
// OpenTelemetry span; cacheable stages are looked up in the action cache
// first. When a stage fails, no new stage starts unless it could still change
// the result (it comes earlier in verdict order than every failure so far, or
// feeds such a stage) or it is an `always` stage; every started stage
// finishes. The run's error is then the first failing stage in verdict order,
// so the result never depends on timing.
//
// An always stage that refers to outputs of a stage that failed, was
// cancelled or did not start sees them as unknown (graph.Scope.EvalStage):
// the attributes that depend on them are left unset and the stage runs with
// the rest; it is skipped, with the reason, only when a required attribute
// or its when condition cannot be decided without them.
//
// PlanRun decides before a run what each stage would do (cached, runs,
// skipped, not cacheable, or decided after the stages whose outputs it
// waits on) without running one: `piship run --plan` (runplan.go).
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/zclconf/go-cty/cty"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage/errcode"
)

// Status is where a stage ended up.
type Status int

const (
	Pending Status = iota
	Succeeded
	Failed
	Cancelled
	// NotStarted: blocked by a dependency that did not succeed, or not
	// started because the run was stopping.
	NotStarted
	// Skipped: its `when` condition was false (or, for an always stage,
	// could not be decided, nor could a required attribute, without the
	// outputs of a stage that is gone). Not a failure; dependents run and
	// see its outputs as null.
	Skipped
)

func (s Status) String() string {
	switch s {
	case Succeeded:
		return "passed"
	case Failed:
		return "failed"
	case Cancelled:
		return "cancelled"
	case NotStarted:
		return "not started"
	case Skipped:
		return "skipped"
	}
	return "pending"
}

// pastTense words a status for "stage X, which ...".
func (s Status) pastTense() string {
	switch s {
	case Cancelled:
		return "was cancelled"
	case NotStarted:
		return "did not start"
	}
	return s.String()
}

// ErrWhenFalse is the Err of a stage skipped because its `when` condition
// is false: it does not apply to this run (a distribution without Pi
// packages, a payload that is reused), so the people's progress views print
// nothing for it.
var ErrWhenFalse = errors.New("skipped: its when condition is false")

// ErrNoInstances is the Err of a for_each stage whose for_each is empty:
// like ErrWhenFalse, nothing to do in this run, so progress prints nothing.
var ErrNoInstances = errors.New("skipped: its for_each is empty")

// Options configure a run.
type Options struct {
	// Parallelism is the number of stages that may run at once; 0 means
	// the number of CPUs (see CheckParallelism).
	Parallelism int
	// Inputs are the pipeline's input values (converted to declared types).
	Inputs map[string]cty.Value
	// Tracer records one span per stage; nil records nothing.
	Tracer trace.Tracer
	// Cache serves cacheable stages; nil disables the action cache.
	Cache *cache.Actions
	// ToolDigest is part of every cache key (the running binary's digest).
	ToolDigest string
	// Events receives progress events, always from one goroutine, in the
	// order they happened; nil discards them.
	Events func(Event)
	// Log receives the stages' own messages, from several goroutines at
	// once (Progress.Log serializes them into whole lines); nil discards
	// them.
	Log io.Writer
	// Getenv is the environment stages see; nil means os.Getenv.
	Getenv func(string) string
	// QuietProgress gives the stages io.Discard as their Progress (the
	// lines about what they are doing), for a command that prints its own
	// result instead; their warnings still go to Log.
	QuietProgress bool
	// RecordEveryRun records the run for `piship explain` even when no
	// stage looked up a cache (explain then says the run had no cacheable
	// stages instead of explaining an older run). Off, such a run writes
	// nothing: the consumer pipelines (doctor, status) cost no write.
	RecordEveryRun bool
}

// StageResult is the outcome of one stage.
type StageResult struct {
	Stage   *graph.Stage
	Status  Status
	Outputs map[string]cty.Value
	Err     error
	// Cacheable is true when the stage had a cache key; CacheHit when the
	// result came from the cache.
	Cacheable bool
	CacheHit  bool
	CacheKey  string
	// MissReason says why the stage missed its cache (what differs from
	// the newest entry the stage used); empty on a hit or when no cache
	// was looked up.
	MissReason string
	// Lookups are the stage's cache lookups, the action cache's and those
	// the kind reported (stage.Invocation.CacheLookup), in order.
	Lookups []cache.Lookup
	// Start and End are the span's timestamps (zero for skipped stages).
	Start, End time.Time
}

// Result is the outcome of a run.
type Result struct {
	Pipeline string
	// Stages holds one result per stage, in declaration order.
	Stages []*StageResult
	// Failed is the first failing stage in verdict order, or nil.
	Failed *StageResult
	// Interrupted is set when the context was cancelled during the run.
	Interrupted bool
}

// Err returns the run's error: the first failing verdict, or nil.
func (r *Result) Err() error {
	if r.Failed != nil {
		return &StageError{Pipeline: r.Pipeline, Stage: r.Failed.Stage.Name, Err: r.Failed.Err}
	}
	if r.Interrupted {
		return &StageError{Pipeline: r.Pipeline, Err: errors.New("interrupted")}
	}
	return nil
}

// StageError is a failed run; its message is the line printed last on stderr.
type StageError struct {
	Pipeline string
	Stage    string // empty when the run was interrupted before any stage failed
	Err      error
}

func (e *StageError) Error() string {
	if e.Stage == "" {
		return fmt.Sprintf("%s: %v", e.Pipeline, e.Err)
	}
	return fmt.Sprintf("%s: stage %s failed: %v", e.Pipeline, e.Stage, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// MaxParallelism is the most stages a run lets run at once.
const MaxParallelism = 1024

// CheckParallelism is the rule of --parallelism: 0 (the number of CPUs) or
// 1 to MaxParallelism; anything else is CONFIG_INVALID.
func CheckParallelism(n int) error {
	if n < 0 || n > MaxParallelism {
		return errcode.Newf(errcode.ConfigInvalid, "--parallelism %d is out of range: give 1 to %d stages at once (0 or no flag: the number of CPUs)", n, MaxParallelism)
	}
	return nil
}

// Run executes g. It returns an error only when the run could not start
// (bad inputs); a failed stage is reported in the Result.
func Run(ctx context.Context, g *graph.Graph, opts Options) (*Result, error) {
	if err := CheckParallelism(opts.Parallelism); err != nil {
		return nil, err
	}
	scope, err := g.NewScope(opts.Inputs)
	if err != nil {
		return nil, err
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = runtime.NumCPU()
	}
	if opts.Tracer == nil {
		opts.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	s := newScheduler(ctx, g, scope, &opts)
	res := s.run()
	s.recordRun(res)
	return res, nil
}
