package budgets

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/stage/errcode"
)

func budget(payload, installed, bytes int64) Budget {
	return Budget{PayloadFiles: payload, InstalledFiles: installed, ArchiveBytes: bytes}
}

func measured(target string, payload, installed, bytes int64) Measured {
	return Measured{Target: target, Archive: "/r/x-1.0.0-" + target + ".tar.zst", PayloadFiles: payload, InstalledFiles: installed, ArchiveBytes: bytes}
}

func TestFigureTolerance(t *testing.T) {
	for _, c := range []struct {
		budget, actual int64
		want           string
	}{
		{100, 100, Within},
		{100, 110, Within}, // exactly 10% over is within
		{100, 111, Over},
		{100, 120, Over},
		{100, 90, Within}, // exactly 10% under is within
		{100, 89, Under},
		{0, 0, Within},
		{0, 1, Over},
		{15, 18, Over}, // 20% more files than hello's payload
		{22, 25, Over},
	} {
		if got := figure("payload files", c.budget, c.actual).State; got != c.want {
			t.Errorf("figure(budget %d, actual %d) = %s, want %s", c.budget, c.actual, got, c.want)
		}
	}
}

func TestCheckOverFailsUnderReports(t *testing.T) {
	f := &File{Path: "d/budgets.hcl", Targets: map[string]Budget{"linux-x64": budget(15, 22, 10000), "darwin-arm64": budget(1, 1, 1)}}
	rep := Check(f, []Measured{measured("linux-x64", 18, 22, 8000)})
	err := rep.Err()
	if errcode.Of(err) != errcode.BudgetExceeded || errcode.Exit(err) != errcode.ExitFailed {
		t.Fatalf("Err = %v, want BUDGET_EXCEEDED exit 1", err)
	}
	for _, want := range []string{"d/budgets.hcl", "linux-x64 payload files 18, budget 15 (+20.0%)", "--record"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "archive bytes") {
		t.Errorf("Err names a figure under budget: %v", err)
	}
	lines := strings.Join(rep.Lines(), "\n")
	for _, want := range []string{
		"linux-x64: payload files   18, budget 15 (+20.0%): OVER by more than 10%",
		"linux-x64: installed files 22, budget 22 (+0.0%): ok",
		"linux-x64: archive bytes   8000, budget 10000 (-20.0%): under by more than 10%: tighten it with --record",
		"darwin-arm64: budgeted in d/budgets.hcl, not in this release: not checked",
	} {
		if !strings.Contains(lines, want) {
			t.Errorf("report lacks %q:\n%s", want, lines)
		}
	}
}

func TestCheckUnderAndExactPass(t *testing.T) {
	f := &File{Path: "b.hcl", Targets: map[string]Budget{"linux-x64": budget(100, 100, 100)}}
	for _, m := range []Measured{measured("linux-x64", 100, 100, 100), measured("linux-x64", 50, 110, 90)} {
		if err := Check(f, []Measured{m}).Err(); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
}

func TestCheckTargetWithoutBudgetPasses(t *testing.T) {
	rep := Check(&File{Path: "b.hcl", Targets: map[string]Budget{}}, []Measured{measured("linux-arm64", 1000, 1000, 1000)})
	if err := rep.Err(); err != nil || rep.Targets[0].Budgeted {
		t.Fatalf("no budget: %v %+v", err, rep.Targets)
	}
	if l := rep.Lines(); len(l) != 1 || !strings.Contains(l[0], "linux-arm64: no budget in b.hcl") {
		t.Errorf("lines %q", l)
	}
}

func TestTimingsAreReportedNeverGated(t *testing.T) {
	rec := Timing{ReleaseMs: 1000, RuntimeCache: "miss", Stages: []StageTiming{{"npm_install module.qualify.stage.runtime_entry", 600, "miss"}, {"smoke module.qualify.stage.tests", 200, "none"}}}
	now := Timing{ReleaseMs: 3000, RuntimeCache: "hit", Stages: []StageTiming{{"npm_install module.qualify.stage.runtime_entry", 5, "hit"}, {"smoke module.qualify.stage.tests", 500, "none"}, {"bundle module.payload.stage.bundle", 900, "miss"}}}
	f := &File{Path: "b.hcl", Targets: map[string]Budget{"linux-x64": {PayloadFiles: 1, InstalledFiles: 1, ArchiveBytes: 1, Timing: rec}}}
	m := measured("linux-x64", 1, 1, 1)
	m.Timing, m.HasTiming = now, true
	rep := Check(f, []Measured{m})
	if err := rep.Err(); err != nil {
		t.Fatalf("a release three times slower failed the check: %v", err)
	}
	got := map[string]TimingRatio{}
	for _, r := range rep.Targets[0].Timings {
		got[r.Name] = r
	}
	if r := got["release"]; r.Ratio != 3 || !strings.Contains(r.Note, "runtime cache hit, recorded on a miss") {
		t.Errorf("release %+v", r)
	}
	if r := got["npm_install module.qualify.stage.runtime_entry"]; r.Ratio != 0 || !strings.Contains(r.Note, "not compared") {
		t.Errorf("a hit compared with a recorded miss: %+v", r)
	}
	if r := got["smoke module.qualify.stage.tests"]; r.Ratio != 2.5 || r.Note != "" {
		t.Errorf("smoke %+v", r)
	}
	if r := got["bundle module.payload.stage.bundle"]; r.RecordedMs != 0 || !strings.Contains(r.Note, "not recorded") {
		t.Errorf("bundle %+v", r)
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	f := &File{Path: "b.hcl", Targets: map[string]Budget{
		"linux-x64":    {PayloadFiles: 15, InstalledFiles: 22, ArchiveBytes: 10366, Timing: Timing{ReleaseMs: 1417, RuntimeCache: "miss", Stages: []StageTiming{{"smoke x", 268, "none"}, {"npm_install y", 618, "miss"}}}},
		"darwin-arm64": {PayloadFiles: 1, InstalledFiles: 2, ArchiveBytes: 3},
	}}
	src := f.Format()
	if !strings.HasPrefix(string(src), "# Release budgets") || strings.Index(string(src), "darwin-arm64") > strings.Index(string(src), "linux-x64") ||
		strings.Index(string(src), `"npm_install y"`) > strings.Index(string(src), `"smoke x"`) {
		t.Errorf("not in name order:\n%s", src)
	}
	g, err := Parse(src, "b.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if again := g.Format(); string(again) != string(src) {
		t.Errorf("Format is not stable:\n%s\n---\n%s", src, again)
	}
	if b := g.Targets["linux-x64"]; b.ArchiveBytes != 10366 || b.Timing.ReleaseMs != 1417 || len(b.Timing.Stages) != 2 || b.Timing.Stages[0] != (StageTiming{"npm_install y", 618, "miss"}) {
		t.Errorf("parsed %+v", b)
	}
}

func TestParseRefusesBadFiles(t *testing.T) {
	for name, src := range map[string]string{
		"syntax":    `target "linux-x64" {`,
		"unknown":   "target \"linux-x64\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n archive_files = 2\n}\n",
		"missing":   "target \"linux-x64\" {\n payload_files = 1\n}\n",
		"target":    "target \"linux-z80\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n}\n",
		"twice":     "target \"linux-x64\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n}\ntarget \"linux-x64\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n}\n",
		"negative":  "target \"linux-x64\" {\n payload_files = -1\n installed_files = 1\n archive_bytes = 1\n}\n",
		"not count": "target \"linux-x64\" {\n payload_files = \"many\"\n installed_files = 1\n archive_bytes = 1\n}\n",
	} {
		_, err := Parse([]byte(src), "d/budgets.hcl")
		if errcode.Of(err) != errcode.ConfigInvalid || !strings.Contains(err.Error(), "d/budgets.hcl") || !strings.Contains(err.Error(), "--record") {
			t.Errorf("%s: %v, want CONFIG_INVALID naming the file and --record", name, err)
		}
	}
}

func TestReadMissingAndRecord(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	f, exists, err := Read(p)
	if err != nil || exists || len(f.Targets) != 0 {
		t.Fatalf("Read of no file: %v %v %+v", err, exists, f)
	}
	f.Targets["darwin-arm64"] = budget(1, 2, 3)
	f.Record([]Measured{measured("linux-x64", 15, 22, 10366)})
	if err := f.Write(); err != nil {
		t.Fatal(err)
	}
	g, exists, err := Read(p)
	if err != nil || !exists || !reflect.DeepEqual(g.Targets["linux-x64"], budget(15, 22, 10366)) || !reflect.DeepEqual(g.Targets["darwin-arm64"], budget(1, 2, 3)) {
		t.Fatalf("after Record: %v %+v", err, g)
	}
}

func TestTimingOf(t *testing.T) {
	raw := `{"runtimeCache":"hit","timing":{"totalMs":1000,"stages":[
	 {"name":"release_inputs inputs","ms":50,"cache":"none"},
	 {"name":"npm_install module.target[\"linux-x64\"].module.qualify.stage.runtime_entry","ms":400,"cache":"hit"},
	 {"name":"npm_install module.target[\"linux-arm64\"].module.qualify.stage.runtime_entry","ms":400,"cache":"hit"},
	 {"name":"release_set set","ms":100,"cache":"none"}]}}`
	tm, err := timingOf([]byte(raw), "linux-x64")
	if err != nil {
		t.Fatal(err)
	}
	want := []StageTiming{{"npm_install module.qualify.stage.runtime_entry", 400, "hit"}, {"release_set set", 100, "none"}}
	if tm.ReleaseMs != 1000 || tm.RuntimeCache != "hit" || len(tm.Stages) != 2 || tm.Stages[0] != want[0] || tm.Stages[1] != want[1] {
		t.Errorf("timingOf = %+v, want %+v", tm, want)
	}
	if _, err := timingOf([]byte("{"), "linux-x64"); err == nil {
		t.Error("timingOf of broken JSON: no error")
	}
}

func TestFindSet(t *testing.T) {
	dir := t.TempDir()
	_, err := FindSet(filepath.Join(dir, "releases"), "hello")
	if errcode.Of(err) != errcode.ConfigUnavailable || !strings.Contains(err.Error(), "run piship release") {
		t.Fatalf("no releases: %v", err)
	}
	sum := strings.Repeat("a", 64)
	write := func(name, body string, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	write("hello-1.0.0.SHA256SUMS", sum+"  hello-1.0.0-linux-x64.tar.zst\n", 2*time.Hour)
	write("hello-1.0.1.SHA256SUMS", sum+"  hello-1.0.1-linux-x64.tar.zst\n", time.Hour)
	write("hello-world-2.0.0.SHA256SUMS", sum+"  hello-world-2.0.0-linux-x64.tar.zst\n", 0)
	s, err := FindSet(dir, "hello")
	if err != nil || s.Version != "1.0.1" {
		t.Fatalf("FindSet = %+v, %v; want hello 1.0.1, the newest of hello (not hello-world)", s, err)
	}
	write("hello-1.0.2.SHA256SUMS", "not a set\n", 0)
	_, err = FindSet(dir, "hello")
	var e *errcode.Error
	if errcode.Of(err) != errcode.ConfigInvalid || !errors.As(err, &e) || !strings.Contains(err.Error(), "hello-1.0.2.SHA256SUMS") {
		t.Errorf("a broken set: %v", err)
	}
}

func TestDecodePositionsItsDiagnostics(t *testing.T) {
	src := "target \"linux-x64\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n}\n\ntarget \"linux-z80\" {\n payload_files = 1\n installed_files = 1\n archive_bytes = 1\n}\n"
	_, diags := Decode([]byte(src), "budgets.hcl")
	if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start.Line != 7 || !strings.Contains(diags[0].Detail, "linux-z80") {
		t.Fatalf("diagnostics %v, want one at line 7 naming linux-z80", diags)
	}
}
