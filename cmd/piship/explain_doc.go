package main

import (
	"maps"
	"slices"

	"piship.dev/piship/cache"
	"piship.dev/piship/cmd/internal/cli"
)

// ExplainDoc is piship-explain/v1: the last recorded run of a pipeline
// file, what each stage's cache lookups found and why they missed.
type ExplainDoc struct {
	Schema   string `json:"schema"`
	Pipeline string `json:"pipeline"`
	File     string `json:"file"`
	Finished string `json:"finished"`
	// Cacheable is false when no stage of the run looked up a cache: the
	// run had no cacheable stages (or none of them ran), nothing to explain.
	Cacheable bool           `json:"cacheable"`
	Stages    []ExplainStage `json:"stages"`
}

// ExplainStage is one stage of the run.
type ExplainStage struct {
	Stage  string `json:"stage"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Cache is "hit", "miss" or "none"; Reason the stage's miss reason.
	Cache   string          `json:"cache"`
	Reason  string          `json:"reason"`
	Lookups []ExplainLookup `json:"lookups"`
}

// ExplainLookup is one cache lookup: which cache, the key, the outcome,
// why it missed, and the key's named inputs, sorted by name ([] when none
// were recorded).
type ExplainLookup struct {
	Cache  string `json:"cache"`
	Key    string `json:"key"`
	Hit    bool   `json:"hit"`
	Reason string `json:"reason"`
	// Remote is what the remote cache gave on a local miss ("remote hit",
	// "remote miss: WHY"); "" without --remote-cache or on a local hit.
	Remote string         `json:"remote"`
	Inputs []ExplainInput `json:"inputs"`
}

// ExplainInput is one named input of a key ("input src/a.txt" -> its
// sha256, "node version" -> "22.1" ...).
type ExplainInput struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// ExplainJSON is run as piship-explain/v1, restricted to the stage named
// only when only is not empty.
func ExplainJSON(run *cache.RunRecord, only string) ExplainDoc {
	d := ExplainDoc{Schema: cli.Schema("explain"), Pipeline: run.Pipeline, File: run.File, Finished: run.Finished, Cacheable: !run.NoLookups, Stages: []ExplainStage{}}
	for _, st := range run.Stages {
		if only != "" && st.Stage != only {
			continue
		}
		es := ExplainStage{Stage: st.Stage, Kind: st.Kind, Status: st.Status, Cache: st.Cache, Lookups: []ExplainLookup{}}
		for _, lk := range st.Lookups {
			in := []ExplainInput{}
			for _, n := range slices.Sorted(maps.Keys(lk.Inputs)) {
				in = append(in, ExplainInput{Name: n, Value: lk.Inputs[n]})
			}
			es.Lookups = append(es.Lookups, ExplainLookup{Cache: lk.Cache, Key: lk.Key, Hit: lk.Hit, Reason: lk.Reason, Remote: lk.Remote, Inputs: in})
		}
		es.Reason = st.Reason
		d.Stages = append(d.Stages, es)
	}
	return d
}
