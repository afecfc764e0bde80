package cache

// Why a stage ran: every cache entry records the named inputs of its key
// (Inputs), a small per-stage index remembers the newest entry a stage
// used, and MissReason names what differs between the two. The records
// live beside the caches, in <home>/explain:
//
//	explain/
//	  stages/<id>.json   the newest entry one stage used in one cache
//	                     (StageRecord; id hashes the cache, pipeline
//	                     file, stage and scope)
//	  keys/<key>.json    the named inputs of an i-/b- runtime key, written
//	                     by the stage that computed the key and read by the
//	                     stage that looks it up (KeyInputs)
//	  runs/<id>.json     the last run of one pipeline file (RunRecord),
//	                     read by `piship explain`
//
// Every file is written whole with a temporary file and a rename
// (atomicfs), so a concurrent run reads an old record or a new one. They
// only ever explain: a missing or unreadable record makes a reason less
// precise ("no earlier entry"), never a run fail.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// Inputs are the named inputs of a cache key: display name -> value (a
// sha256 hex digest or a short version string). The names read as the
// start of a sentence, e.g. "input src/a.txt", "config attribute strip",
// "tool version", "kind version", "platform", "node version".
type Inputs map[string]string

// Name prefixes and names with a fixed meaning in MissReason.
const (
	InputFilePrefix  = "input "            // + path: a file's sha256
	ConfigAttrPrefix = "config attribute " // + name: the attribute's digest
	InputKind        = "kind"
	InputKindVersion = "kind version"
	InputTool        = "tool version" // the piship binary's digest
)

// derivedSuffix marks an input computed from others (the runtime key a
// bundle key is made from): it is named only when nothing else differs.
const derivedSuffix = " key"

const (
	stageRecordSchema = "piship-explain-stage/v1"
	keyInputsSchema   = "piship-explain-key/v1"
	runRecordSchema   = "piship-explain-run/v1"
)

// Reasons that do not compare inputs.
const (
	ReasonNoEarlier  = "no earlier entry"
	ReasonNoInputs   = "no recorded inputs"
	ReasonEntryGone  = "the earlier entry with the same key is gone (pruned, evicted or damaged)"
	reasonKeyChanged = "the key changed but its recorded inputs did not"
)

// Explain is the explain area of a cache home (see the layout above).
type Explain struct {
	root string
	now  func() time.Time
}

// OpenExplain returns the explain area under home (see Home). Nothing is
// created until the first write.
func OpenExplain(home string) *Explain {
	return &Explain{root: filepath.Join(home, "explain"), now: time.Now}
}

// Root returns <home>/explain.
func (x *Explain) Root() string { return x.root }

// StageID names one stage's view of one cache: which cache ("action",
// "runtime", "bundle", "store"), the pipeline file, the stage name and a
// scope the kind adds (the distribution, for the runtime and bundle
// caches), so two distributions built by one pipeline do not compare
// with each other.
type StageID struct {
	Cache, Pipeline, Stage, Scope string
}

func (id StageID) file() string {
	w := NewKeyHash()
	w.Str("piship-explain-id/v1")
	w.Str(id.Cache)
	w.Str(id.Pipeline)
	w.Str(id.Stage)
	w.Str(id.Scope)
	return w.Sum()[:32] + ".json"
}

// StageRecord is the newest entry a stage used in one cache.
type StageRecord struct {
	Schema   string `json:"schema"`
	Cache    string `json:"cache"`
	Pipeline string `json:"pipeline"`
	Stage    string `json:"stage"`
	Scope    string `json:"scope,omitempty"`
	Key      string `json:"key"`
	Inputs   Inputs `json:"inputs,omitempty"`
	Updated  string `json:"updated"`
}

// Previous returns the newest entry the stage used, or nil when there is
// none (or its record is unreadable: explaining never fails a run).
func (x *Explain) Previous(id StageID) *StageRecord {
	var r StageRecord
	if !readJSON(filepath.Join(x.root, "stages", id.file()), &r) || r.Schema != stageRecordSchema {
		return nil
	}
	return &r
}

// Remember records key (with its inputs) as the newest entry the stage
// used; Updated is when it first did. Call it after the stage succeeded, so a failed run does not point
// the next one at an entry that was never made.
func (x *Explain) Remember(id StageID, key string, in Inputs) error {
	// A stage served by the entry it already names (the common hit) costs
	// one read, not a write.
	if p := x.Previous(id); p != nil && p.Key == key && maps.Equal(p.Inputs, in) {
		return nil
	}
	return x.write(filepath.Join(x.root, "stages", id.file()), &StageRecord{
		Schema: stageRecordSchema, Cache: id.Cache, Pipeline: id.Pipeline, Stage: id.Stage, Scope: id.Scope,
		Key: key, Inputs: in, Updated: x.now().UTC().Format(time.RFC3339Nano),
	})
}

// keyInputs is the on-disk form of keys/<key>.json.
type keyInputs struct {
	Schema string `json:"schema"`
	Key    string `json:"key"`
	Scope  string `json:"scope,omitempty"`
	Inputs Inputs `json:"inputs"`
}

// RecordKeyInputs writes the named inputs of a runtime cache key for the
// stage that will look it up (the stage that computed the key is another
// one). The file is named by the key, so rewriting it is idempotent.
func (x *Explain) RecordKeyInputs(key, scope string, in Inputs) error {
	if err := CheckRuntimeKey(key); err != nil {
		return err
	}
	// Every build computes the keys; an unchanged record is not rewritten.
	if sc, old := x.KeyInputs(key); old != nil && sc == scope && maps.Equal(old, in) {
		return nil
	}
	return x.write(filepath.Join(x.root, "keys", key+".json"), &keyInputs{Schema: keyInputsSchema, Key: key, Scope: scope, Inputs: in})
}

// KeyInputs returns what RecordKeyInputs recorded for key; nil inputs when
// nothing (readable) was.
func (x *Explain) KeyInputs(key string) (scope string, in Inputs) {
	if CheckRuntimeKey(key) != nil {
		return "", nil
	}
	var k keyInputs
	if !readJSON(filepath.Join(x.root, "keys", key+".json"), &k) || k.Schema != keyInputsSchema || k.Key != key {
		return "", nil
	}
	return k.Scope, k.Inputs
}

// RunRecord is the last run of one pipeline file, for `piship explain`.
type RunRecord struct {
	Schema   string `json:"schema"`
	Pipeline string `json:"pipeline"`
	File     string `json:"file"`
	Finished string `json:"finished"`
	// NoLookups is true when no stage of the run looked up a cache (the
	// run had no cacheable stages, or none of them ran).
	NoLookups bool          `json:"noLookups,omitempty"`
	Stages    []StageLookup `json:"stages"`
}

// StageLookup is what one stage of a run did with its caches.
type StageLookup struct {
	Stage  string `json:"stage"`
	Kind   string `json:"kind"`
	Status string `json:"status"`
	// Cache is "hit", "miss" or "none" (no cache was looked up).
	Cache string `json:"cache"`
	// Reason is the stage's miss reason (engine.StageResult.MissReason).
	Reason  string   `json:"reason,omitempty"`
	Lookups []Lookup `json:"lookups"`
}

// Lookup is one cache lookup of a stage.
type Lookup struct {
	Cache  string `json:"cache"`
	Key    string `json:"key"`
	Hit    bool   `json:"hit"`
	Reason string `json:"reason,omitempty"`
	Inputs Inputs `json:"inputs,omitempty"`
	// Scope is the kind's scope of the lookup (see StageID).
	Scope string `json:"scope,omitempty"`
	// Remote is the remote cache's part on a local miss: "remote hit" or
	// "remote miss: WHY" (empty: no remote cache, or a local hit).
	Remote string `json:"remote,omitempty"`
}

func runFile(pipelineFile string) string {
	w := NewKeyHash()
	w.Str("piship-explain-run/v1")
	w.Str(pipelineFile)
	return w.Sum()[:32] + ".json"
}

// WriteRun replaces the record of the last run of r.File.
func (x *Explain) WriteRun(r *RunRecord) error {
	r.Schema = runRecordSchema
	if r.Finished == "" {
		r.Finished = x.now().UTC().Format(time.RFC3339Nano)
	}
	return x.write(filepath.Join(x.root, "runs", runFile(r.File)), r)
}

// Runs returns the recorded last runs, newest first; a pipeline (name) or
// file, when not empty, selects the runs of that pipeline or file.
func (x *Explain) Runs(pipeline, file string) ([]*RunRecord, error) {
	des, err := os.ReadDir(filepath.Join(x.root, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cache: reading run records: %w", err)
	}
	var runs []*RunRecord
	for _, de := range des {
		if !strings.HasSuffix(de.Name(), ".json") || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		var r RunRecord
		if !readJSON(filepath.Join(x.root, "runs", de.Name()), &r) || r.Schema != runRecordSchema {
			continue
		}
		if pipeline != "" && r.Pipeline != pipeline || file != "" && r.File != file {
			continue
		}
		runs = append(runs, &r)
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Finished > runs[j].Finished })
	return runs, nil
}

func (x *Explain) write(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfs.WriteFileAll(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("cache: writing %s: %w", path, err)
	}
	return nil
}

func readJSON(path string, v any) bool {
	data, err := os.ReadFile(path)
	return err == nil && json.Unmarshal(data, v) == nil
}

// MissReason says why key missed, given the newest entry the same stage
// used (prev, nil when none) and the named inputs of key: every input that
// differs, in a fixed order (kind, kind version, tool version, config
// attributes, input files, the rest; each group by name), joined by "; ".
func MissReason(prev *StageRecord, key string, cur Inputs) string {
	switch {
	case prev == nil:
		return ReasonNoEarlier
	case prev.Key == key:
		return ReasonEntryGone
	case len(prev.Inputs) == 0 || len(cur) == 0:
		return ReasonNoInputs
	}
	var diffs, derived []string
	for _, name := range orderedNames(prev.Inputs, cur) {
		was, wok := prev.Inputs[name]
		now, nok := cur[name]
		var d string
		switch {
		case wok && nok && was == now:
			continue
		case !wok:
			d = name + " added"
		case !nok:
			d = name + " removed"
		default:
			d = name + " changed" + changeDetail(name, was, now)
		}
		if strings.HasSuffix(name, derivedSuffix) {
			derived = append(derived, d)
		} else {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) == 0 {
		diffs = derived
	}
	if len(diffs) == 0 {
		return reasonKeyChanged
	}
	return strings.Join(diffs, "; ")
}

// changeDetail shows a file's digests shortened and short values whole;
// config attributes and the tool are named only (their digests mean
// nothing to a reader).
func changeDetail(name, was, now string) string {
	switch {
	case strings.HasPrefix(name, ConfigAttrPrefix), name == InputTool:
		return ""
	case IsDigest(was) && IsDigest(now):
		return fmt.Sprintf(" (sha256 %s.. -> %s..)", was[:4], now[:4])
	case len(was) <= 40 && len(now) <= 40:
		return fmt.Sprintf(" (%s -> %s)", was, now)
	}
	return ""
}

func orderedNames(a, b Inputs) []string {
	set := map[string]bool{}
	for n := range a {
		set[n] = true
	}
	for n := range b {
		set[n] = true
	}
	names := slices.Collect(maps.Keys(set))
	rank := func(n string) int {
		switch {
		case n == InputKind:
			return 0
		case n == InputKindVersion:
			return 1
		case n == InputTool:
			return 2
		case strings.HasPrefix(n, ConfigAttrPrefix):
			return 3
		case strings.HasPrefix(n, InputFilePrefix):
			return 4
		}
		return 5
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(names[i]), rank(names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	return names
}

// ConfigInputs returns the named inputs of a configuration: one digest per
// attribute of its canonical JSON object (attrs), so a miss can name the
// attribute that changed without recording its value.
func ConfigInputs(attrs map[string]json.RawMessage) Inputs {
	in := make(Inputs, len(attrs))
	for name, raw := range attrs {
		c, err := canonicalJSON(raw)
		if err != nil {
			c = raw
		}
		in[ConfigAttrPrefix+name] = canon.SHA256Hex(c)
	}
	return in
}
