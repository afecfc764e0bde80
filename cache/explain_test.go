package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMissReasonNamesEveryDifference(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	base := Inputs{
		InputKind: "exec", InputKindVersion: "1", InputTool: a,
		ConfigAttrPrefix + "strip": a, InputFilePrefix + "runtime/package-lock.json": a,
		"node version": "22.1", "runtime key": "i-1",
	}
	with := func(changes map[string]string) Inputs {
		in := Inputs{}
		for k, v := range base {
			in[k] = v
		}
		for k, v := range changes {
			if v == "" {
				delete(in, k)
			} else {
				in[k] = v
			}
		}
		return in
	}
	prev := &StageRecord{Key: "k1", Inputs: base}
	for _, c := range []struct {
		name    string
		prev    *StageRecord
		key     string
		changes map[string]string
		want    string
	}{
		{"no record", nil, "k2", nil, ReasonNoEarlier},
		{"same key", prev, "k1", nil, ReasonEntryGone},
		{"an old entry without inputs", &StageRecord{Key: "k1"}, "k2", nil, ReasonNoInputs},
		{"input file", prev, "k2", map[string]string{InputFilePrefix + "runtime/package-lock.json": b},
			"input runtime/package-lock.json changed (sha256 abab.. -> cdcd..)"},
		{"config attribute", prev, "k2", map[string]string{ConfigAttrPrefix + "strip": b}, "config attribute strip changed"},
		{"tool", prev, "k2", map[string]string{InputTool: b}, "tool version changed"},
		{"kind version", prev, "k2", map[string]string{InputKindVersion: "2"}, "kind version changed (1 -> 2)"},
		{"a short value", prev, "k2", map[string]string{"node version": "22.2"}, "node version changed (22.1 -> 22.2)"},
		{"added and removed", prev, "k2", map[string]string{InputFilePrefix + "b.txt": a, ConfigAttrPrefix + "strip": ""},
			"config attribute strip removed; input b.txt added"},
		// A derived key is named only when nothing it derives from changed.
		{"derived key hidden", prev, "k2", map[string]string{"runtime key": "i-2", InputTool: b}, "tool version changed"},
		{"derived key alone", prev, "k2", map[string]string{"runtime key": "i-2"}, "runtime key changed (i-1 -> i-2)"},
		// Several: all of them, kind, kind version, tool, config, inputs, rest.
		{"several in a fixed order", prev, "k2", map[string]string{"node version": "23.0", InputFilePrefix + "runtime/package-lock.json": b,
			ConfigAttrPrefix + "strip": b, InputTool: b, InputKindVersion: "2"},
			"kind version changed (1 -> 2); tool version changed; config attribute strip changed; " +
				"input runtime/package-lock.json changed (sha256 abab.. -> cdcd..); node version changed (22.1 -> 23.0)"},
	} {
		if got := MissReason(c.prev, c.key, with(c.changes)); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// The records survive a round trip through the cache home, and a stage is
// compared only with itself: another stage, cache or scope has no record.
func TestExplainRecords(t *testing.T) {
	home := t.TempDir()
	x := OpenExplain(home)
	id := StageID{Cache: "bundle", Pipeline: "/p/build.hcl", Stage: "bundle", Scope: "/dists/hello"}
	if x.Previous(id) != nil {
		t.Fatal("a record in an empty home")
	}
	in := Inputs{"strip": "true"}
	if err := x.Remember(id, "b-00000000000000000001", in); err != nil {
		t.Fatal(err)
	}
	got := x.Previous(id)
	if got == nil || got.Key != "b-00000000000000000001" || got.Inputs["strip"] != "true" {
		t.Fatalf("Previous = %+v", got)
	}
	for _, other := range []StageID{{"runtime", id.Pipeline, id.Stage, id.Scope}, {id.Cache, id.Pipeline, "other", id.Scope}, {id.Cache, id.Pipeline, id.Stage, "/dists/other"}} {
		if x.Previous(other) != nil {
			t.Errorf("%+v sees the record of %+v", other, id)
		}
	}
	if err := x.RecordKeyInputs("i-00000000000000000002", "/dists/hello", in); err != nil {
		t.Fatal(err)
	}
	if scope, got := x.KeyInputs("i-00000000000000000002"); scope != "/dists/hello" || got["strip"] != "true" {
		t.Errorf("KeyInputs = %q %v", scope, got)
	}
	if _, got := x.KeyInputs("i-00000000000000000003"); got != nil {
		t.Errorf("KeyInputs of an unrecorded key = %v", got)
	}
	for i, f := range []string{"/a.hcl", "/b.hcl"} {
		if err := x.WriteRun(&RunRecord{Pipeline: "p", File: f, Finished: []string{"2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"}[i]}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := x.Runs("p", "")
	if err != nil || len(runs) != 2 || runs[0].File != "/b.hcl" {
		t.Fatalf("Runs = %v, %v; want both, newest first", runs, err)
	}
	if runs, _ := x.Runs("", "/a.hcl"); len(runs) != 1 || runs[0].File != "/a.hcl" {
		t.Errorf("Runs of /a.hcl = %v", runs)
	}
}

// Action cache entries record the named inputs of their key, and entries
// written before they did still verify (and explain as having none).
func TestEntriesRecordTheirInputs(t *testing.T) {
	home, src := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(src, "o.txt"), []byte("out"), 0o644)
	a := OpenActions(home)
	key, old := strings.Repeat("1", 64), strings.Repeat("2", 64)
	in := Inputs{InputFilePrefix + "a.txt": strings.Repeat("a", 64)}
	if _, err := a.StoreInputs(key, src, []string{"o.txt"}, json.RawMessage(`{}`), in); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store(old, src, []string{"o.txt"}, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	res, hit, err := a.Lookup(key, t.TempDir(), []string{"o.txt"})
	if err != nil || !hit || res.Inputs[InputFilePrefix+"a.txt"] != in[InputFilePrefix+"a.txt"] {
		t.Fatalf("Lookup = %+v %v %v", res, hit, err)
	}
	data, _ := os.ReadFile(filepath.Join(a.entryDir(old), entryName))
	if strings.Contains(string(data), `"inputs"`) {
		t.Errorf("an entry without inputs writes an inputs key:\n%s", data)
	}
	if res, hit, err := a.Lookup(old, t.TempDir(), []string{"o.txt"}); err != nil || !hit || res.Inputs != nil {
		t.Fatalf("Lookup of an entry without inputs = %+v %v %v", res, hit, err)
	}
	// Editing the recorded inputs is damage, like any other field.
	data, _ = os.ReadFile(filepath.Join(a.entryDir(key), entryName))
	os.WriteFile(filepath.Join(a.entryDir(key), entryName), []byte(strings.Replace(string(data), strings.Repeat("a", 64), strings.Repeat("b", 64), 1)), 0o644)
	if _, hit, err := a.Lookup(key, t.TempDir(), []string{"o.txt"}); hit || err == nil {
		t.Errorf("an entry with edited inputs: hit %v, err %v; want a damaged miss", hit, err)
	}

	// The runtime cache's entries record theirs too:
	// stages/runtimecache TestEntriesRecordTheirInputs.
}
