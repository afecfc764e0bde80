package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"piship.dev/piship/cache"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/tracing"
)

// Why a stage ran: every lookup (the action cache's and the kinds' own)
// is compared with the newest entry the same stage used, and the run is
// recorded for `piship explain` (cache/explain.go holds the records).

// PipelineFile identifies a pipeline across runs: the absolute path of its
// file, or the embedded name of a built-in one (explain's records, the
// trace's piship.pipeline.file).
func PipelineFile(g *graph.Graph) string {
	if strings.HasPrefix(g.File, "embedded:") || g.File == "" {
		return g.File
	}
	if filepath.IsAbs(g.File) {
		return filepath.Clean(g.File)
	}
	return filepath.Join(g.Dir, filepath.Base(g.File))
}

// explain is the explain area of the run's cache home; nil without an
// action cache (nothing is compared or recorded then).
func (s *scheduler) explain() *cache.Explain {
	if s.opts.Cache == nil {
		return nil
	}
	return s.opts.Cache.Explain()
}

func (s *scheduler) stageID(st *graph.Stage, cacheName, scope string) cache.StageID {
	return cache.StageID{Cache: cacheName, Pipeline: PipelineFile(s.g), Stage: st.Name, Scope: scope}
}

// missReason compares key with the newest entry the stage used.
func (s *scheduler) missReason(id cache.StageID, key string, in cache.Inputs) string {
	x := s.explain()
	if x == nil {
		return ""
	}
	return cache.MissReason(x.Previous(id), key, in)
}

// recordLookup adds one lookup to the stage's result and traces it as a
// "cache lookup" child of the stage span.
func (s *scheduler) recordLookup(ctx context.Context, start time.Time, r *StageResult, lk cache.Lookup) {
	_, span := s.opts.Tracer.Start(ctx, "cache lookup", trace.WithTimestamp(start))
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String(tracing.AttrCacheName, lk.Cache),
			attribute.String(tracing.AttrCacheKey, lk.Key),
			attribute.Bool(tracing.AttrCacheHit, lk.Hit),
		}
		if !lk.Hit && lk.Reason != "" {
			attrs = append(attrs, attribute.String(tracing.AttrCacheMissReason, lk.Reason))
		}
		if lk.Remote != "" {
			attrs = append(attrs, attribute.String(tracing.AttrCacheRemote, lk.Remote))
		}
		span.SetAttributes(attrs...)
	}
	span.End()
	r.Lookups = append(r.Lookups, lk)
	if lk.Hit {
		r.CacheHit, r.MissReason = true, ""
	}
	r.MissReason = stageMissReason(r.Lookups)
}

// stageMissReason is the stage's reason: empty when any lookup hit, the
// one miss's reason, or each miss's reason named by its cache.
func stageMissReason(lks []cache.Lookup) string {
	var misses []cache.Lookup
	for _, lk := range lks {
		if lk.Hit {
			return ""
		}
		if lk.Reason != "" {
			misses = append(misses, lk)
		}
	}
	if len(misses) == 1 {
		return misses[0].Reason
	}
	parts := make([]string, len(misses))
	for i, lk := range misses {
		parts[i] = lk.Cache + ": " + lk.Reason
	}
	return strings.Join(parts, "; ")
}

// kindLookups returns the engine's side of stage.Invocation.CacheLookup
// for one stage run.
func (s *scheduler) kindLookups(ctx context.Context, st *graph.Stage, r *StageResult) func(stage.CacheLookup) {
	return func(l stage.CacheLookup) {
		lk := cache.Lookup{Cache: l.Cache, Key: l.Key, Hit: l.Hit, Inputs: l.Inputs, Scope: l.Scope, Remote: l.Remote}
		switch {
		case l.Hit:
		case l.Reason != "":
			lk.Reason = l.Reason
		default:
			lk.Reason = s.missReason(s.stageID(st, l.Cache, l.Scope), l.Key, l.Inputs)
		}
		s.recordLookup(ctx, time.Now(), r, lk)
	}
}

// remember records a succeeded stage's lookups as the newest entries it
// used; a failed stage may not have made its entry, so it records none.
func (s *scheduler) remember(st *graph.Stage, r *StageResult) {
	x := s.explain()
	if x == nil || r.Status != Succeeded {
		return
	}
	for _, lk := range r.Lookups {
		if err := x.Remember(s.stageID(st, lk.Cache, lk.Scope), lk.Key, lk.Inputs); err != nil {
			fmt.Fprintf(s.opts.Log, "%s: stage %s: cannot record its cache entry for piship explain: %v\n", s.g.Name, st.Name, err)
		}
	}
}

// recordRun writes the run's record for `piship explain`; a run that
// cannot be recorded still has its result. A run whose stages looked up no
// cache (doctor, status, an install from the store-less path) has nothing
// to explain and writes nothing, so it costs no write, unless
// Options.RecordEveryRun asks for it (piship run, build and release: explain
// must explain the last run, even to say it had no cacheable stages).
func (s *scheduler) recordRun(res *Result) {
	x := s.explain()
	looked := lookedUp(res)
	if x == nil || !looked && !s.opts.RecordEveryRun {
		return
	}
	rec := &cache.RunRecord{Pipeline: s.g.Name, File: PipelineFile(s.g), NoLookups: !looked}
	for _, r := range res.Stages {
		sl := cache.StageLookup{Stage: r.Stage.Name, Kind: r.Stage.KindName, Status: r.Status.String(), Cache: "none", Reason: r.MissReason, Lookups: r.Lookups}
		if sl.Lookups == nil {
			sl.Lookups = []cache.Lookup{}
		}
		switch {
		case r.CacheHit:
			sl.Cache = "hit"
		case len(r.Lookups) > 0:
			sl.Cache = "miss"
		}
		rec.Stages = append(rec.Stages, sl)
	}
	if err := x.WriteRun(rec); err != nil {
		fmt.Fprintf(s.opts.Log, "%s: the run was not recorded for piship explain: %v\n", s.g.Name, err)
	}
}

// lookedUp reports whether any stage of the run consulted a cache.
func lookedUp(res *Result) bool {
	for _, r := range res.Stages {
		if r.CacheHit || len(r.Lookups) > 0 || r.MissReason != "" {
			return true
		}
	}
	return false
}
