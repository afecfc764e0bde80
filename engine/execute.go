package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing"
)

// execute runs one stage inside its span: evaluate the configuration, try
// the action cache, run the kind, store the result, clean up.
func (s *scheduler) execute(st *graph.Stage) *StageResult {
	ctx := s.ctx
	if st.Always {
		// Cleanup stages run even when the run was interrupted.
		ctx = context.WithoutCancel(ctx)
	}
	r := &StageResult{Stage: st, Start: time.Now()}
	ctx, span := s.opts.Tracer.Start(ctx, st.Label(), trace.WithTimestamp(r.Start))
	// Attributes are built only for a recording span: with tracing off a
	// stage costs a few microseconds and these allocations were most of it.
	recording := span.IsRecording()
	if recording {
		span.SetAttributes(
			attribute.String(tracing.AttrPipeline, s.g.Name),
			attribute.String(tracing.AttrStageKind, st.KindName),
			attribute.String(tracing.AttrStageName, st.Name),
			attribute.String(tracing.AttrStageAddress, st.Addr),
		)
	}

	err := s.runStage(ctx, span, st, r)
	switch {
	case err == nil:
		r.Status = Succeeded
	case ctx.Err() != nil:
		r.Status, r.Err = Cancelled, fmt.Errorf("interrupted: %w", err)
	default:
		r.Status, r.Err = Failed, err
	}
	if recording {
		span.SetAttributes(attribute.String(tracing.AttrVerdict, r.Status.String()))
		if r.Cacheable {
			span.SetAttributes(attribute.String(tracing.AttrCacheKey, r.CacheKey), attribute.Bool(tracing.AttrCacheHit, r.CacheHit))
		} else if n := len(r.Lookups); n > 0 {
			// A kind's own cache: its hit is the stage's hit.
			span.SetAttributes(attribute.String(tracing.AttrCacheKey, r.Lookups[n-1].Key), attribute.Bool(tracing.AttrCacheHit, r.CacheHit))
		}
		if r.MissReason != "" {
			span.SetAttributes(attribute.String(tracing.AttrCacheMissReason, r.MissReason))
		}
		if r.Err != nil {
			span.SetStatus(codes.Error, r.Err.Error())
		}
	}
	s.remember(st, r)
	r.End = time.Now()
	span.End(trace.WithTimestamp(r.End))
	return r
}

func (s *scheduler) runStage(ctx context.Context, span trace.Span, st *graph.Stage, r *StageResult) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error in kind %s: %v\n%s", st.KindName, p, debug.Stack())
		}
	}()
	cfg, undecided, diags := s.scope.EvalStage(st, s.outputs, s.gone)
	if diags.HasErrors() {
		return diag.NewError(errcode.ConfigInvalid, diags)
	}
	if len(undecided) > 0 && span.IsRecording() {
		// An always stage runs without the attributes it cannot decide
		// (they keep the kind's default); the trace says which.
		names := make([]string, len(undecided))
		for i, u := range undecided {
			names[i] = u.Attr
		}
		span.SetAttributes(attribute.StringSlice(tracing.AttrUndecided, names))
	}
	log := &stageLog{w: s.opts.Log}
	if span.IsRecording() {
		log.span = span // its lines become the span's events
	}
	defer log.flush() // after the cleanup below
	inv := &stage.Invocation{Pipeline: s.g.Name, Name: st.Name, Dir: s.g.Dir, Config: cfg, Log: log, Progress: log, Getenv: s.opts.Getenv}
	if s.opts.QuietProgress {
		inv.Progress = io.Discard
	}
	inv.OnCacheLookup = s.kindLookups(ctx, st, r)
	if c, ok := st.Kind.(stage.Cleaner); ok {
		defer func() {
			if cerr := c.Cleanup(context.WithoutCancel(ctx), inv); cerr != nil && err == nil {
				err = fmt.Errorf("cleanup: %w", cerr)
			}
		}()
	}

	var spec stage.CacheSpec
	var inputs cache.Inputs
	if ck, ok := st.Kind.(stage.Cacheable); ok && s.opts.Cache != nil {
		var cacheable bool
		spec, cacheable, err = ck.CacheSpec(inv)
		if err != nil {
			return err
		}
		if cacheable {
			r.Cacheable = true
			if r.CacheKey, inputs, err = s.cacheKey(st, cfg, spec); err != nil {
				return err
			}
			if out, hit := s.lookup(ctx, st, spec, r, inputs); hit {
				r.Outputs = out
				return nil
			}
		}
	}

	out, err := st.Kind.Run(ctx, inv)
	if err != nil {
		return err
	}
	if r.Outputs, err = stage.CheckOutputs(st.Kind, out); err != nil {
		return err
	}
	if r.Cacheable {
		s.store(ctx, st, spec, r, inputs)
	}
	return nil
}

// cacheKey hashes what decides the stage's result: kind and version, the
// canonical evaluated configuration, the input files' contents and the tool.
// It also returns those as named inputs (one digest per configuration
// attribute), which the entry records so a later miss can say what changed.
func (s *scheduler) cacheKey(st *graph.Stage, cfg cty.Value, spec stage.CacheSpec) (string, cache.Inputs, error) {
	return s.keyWith(st, cfg, spec, cache.HashFile)
}

// keyWith is cacheKey with the input files' digests from hash (given each
// file's resolved path): a plan takes those a cached stage would restore
// from its entry instead of the disk.
func (s *scheduler) keyWith(st *graph.Stage, cfg cty.Value, spec stage.CacheSpec, hash func(path string) (string, error)) (string, cache.Inputs, error) {
	canon, err := ctyjson.Marshal(cfg, cfg.Type())
	if err != nil {
		return "", nil, fmt.Errorf("cannot encode configuration for the cache key: %v", err)
	}
	// The checkout's absolute path is no part of a key: two clones share
	// entries.
	root := keyRoot(s.g.Dir)
	canon = portableConfig(canon, root)
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(canon, &attrs); err != nil {
		return "", nil, fmt.Errorf("cannot encode configuration for the cache key: %v", err)
	}
	named := cache.ConfigInputs(attrs)
	named[cache.InputKind] = st.KindName
	named[cache.InputKindVersion] = st.Kind.Version()
	named[cache.InputTool] = s.opts.ToolDigest
	inputs := make(map[string]string, len(spec.Inputs))
	for _, p := range spec.Inputs {
		sum, err := hash(stage.Resolve(spec.Dir, p))
		if err != nil {
			return "", nil, fmt.Errorf("cache input %s: %v", p, err)
		}
		inputs[portablePath(p, root)] = sum
		named[cache.InputFilePrefix+portablePath(p, root)] = sum
	}
	return cache.KeyInput{
		Kind: st.KindName, KindVersion: st.Kind.Version(),
		Config: canon, Inputs: inputs, ToolDigest: s.opts.ToolDigest,
	}.Key(), named, nil
}

// lookup tries the action cache; it records the lookup (a "cache lookup"
// span with the miss reason) whatever the outcome.
func (s *scheduler) lookup(ctx context.Context, st *graph.Stage, spec stage.CacheSpec, r *StageResult, inputs cache.Inputs) (map[string]cty.Value, bool) {
	start := time.Now()
	key := r.CacheKey
	res, hit, err := s.opts.Cache.Lookup(key, spec.Dir, spec.Outputs)
	var damaged *cache.DamagedError
	if errors.As(err, &damaged) {
		fmt.Fprintf(s.opts.Log, "%s: stage %s: discarded a damaged cache entry: %v\n", s.g.Name, st.Name, err)
	} else if err != nil {
		fmt.Fprintf(s.opts.Log, "%s: stage %s: cache lookup failed, running the stage: %v\n", s.g.Name, st.Name, err)
	}
	// A local miss reads through the run's remote cache: the pulled entry
	// is placed in the local store and looked up again with every local
	// check, so it is never trusted more than a local one.
	if !hit && (err == nil || damaged != nil) && s.opts.Cache.PullRemote(ctx, key) {
		res, hit, err = s.opts.Cache.Lookup(key, spec.Dir, spec.Outputs)
		damaged = nil
		if err != nil {
			fmt.Fprintf(s.opts.Log, "%s: stage %s: discarded the entry pulled from the remote cache: %v\n", s.g.Name, st.Name, err)
			cache.RemoteFrom(ctx).Rejected(cache.AreaAction, key, err.Error())
			err = nil
		}
	}
	lk := cache.Lookup{Cache: "action", Key: key, Inputs: inputs}
	lk.Remote = cache.RemoteFrom(ctx).Describe(cache.AreaAction, key, hit)
	var out map[string]cty.Value
	switch {
	case damaged != nil:
		lk.Reason = "the entry was damaged and removed"
	case err != nil:
		lk.Reason = "the lookup failed: " + err.Error()
	case hit:
		if out, err = decodeOutputs(st.Kind, res.Outputs); err != nil {
			fmt.Fprintf(s.opts.Log, "%s: stage %s: cached outputs unreadable, running the stage: %v\n", s.g.Name, st.Name, err)
			lk.Reason = "the cached outputs were unreadable"
		} else {
			lk.Hit = true
		}
	default:
		lk.Reason = s.missReason(s.stageID(st, "action", ""), key, inputs)
	}
	s.recordLookup(ctx, start, r, lk)
	return out, lk.Hit
}

func (s *scheduler) store(ctx context.Context, st *graph.Stage, spec stage.CacheSpec, r *StageResult, inputs cache.Inputs) {
	_, span := s.opts.Tracer.Start(ctx, "cache store", trace.WithAttributes(attribute.String(tracing.AttrCacheKey, r.CacheKey)))
	defer span.End()
	ty := stage.OutputType(st.Kind)
	data, err := ctyjson.Marshal(cty.ObjectVal(r.Outputs), ty)
	if err == nil {
		_, err = s.opts.Cache.StoreInputs(r.CacheKey, spec.Dir, spec.Outputs, data, inputs)
	}
	if err == nil {
		// Written back in the background; the command waits at the end.
		cache.RemoteFrom(ctx).Push(cache.AreaAction, r.CacheKey, s.opts.Cache.EntryDir(r.CacheKey))
	}
	if err != nil {
		// A result that cannot be cached is still a result.
		span.SetStatus(codes.Error, err.Error())
		fmt.Fprintf(s.opts.Log, "%s: stage %s: result not cached: %v\n", s.g.Name, st.Name, err)
	}
}

func decodeOutputs(k stage.Kind, data []byte) (map[string]cty.Value, error) {
	v, err := ctyjson.Unmarshal(data, stage.OutputType(k))
	if err != nil {
		return nil, err
	}
	return v.AsValueMap(), nil
}
