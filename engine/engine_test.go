package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

func TestFirstFailingVerdictIsIndependentOfTiming(t *testing.T) {
	// f2 is listed first in verdicts, so it must be the reported failure
	// whether f1 fails before or after it, and whatever the slot count.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		rec := newRecorder()
		src := fmt.Sprintf(`
pipeline "p" {
  stage "sleep" "a"  { ms = %d }
  stage "fail"  "f1" { ms = %d }
  stage "sleep" "b"  {
    ms = %d
    in = stage.a.value
  }
  stage "fail"  "f2" {
    ms = %d
    in = stage.b.value
  }
  stage "sleep" "after_f1" { depends_on = [stage.f1] }
  stage "sleep" "late" { ms = 1 }
  stage "sleep" "cleanup" {
    always     = true
    depends_on = [stage.f1, stage.f2, stage.after_f1]
  }
  verdicts = [stage.f2, stage.f1]
}`, rng.IntN(5), rng.IntN(8), rng.IntN(5), rng.IntN(8))
		g := mustParse(t, src, testRegistry(rec))
		par := 1 + rng.IntN(4)
		res, err := Run(context.Background(), g, Options{Parallelism: par})
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed == nil || res.Failed.Stage.Name != "f2" {
			t.Fatalf("run %d (parallelism %d): first failing verdict = %v, want f2", i, par, res.Failed)
		}
		want := "p: stage f2 failed: boom from f2"
		if got := res.Err().Error(); got != want {
			t.Fatalf("run %d: error %q, want %q", i, got, want)
		}
		for _, name := range rec.started {
			if !rec.finished[name] {
				t.Fatalf("run %d: stage %s started but did not finish", i, name)
			}
		}
		if !rec.finished["cleanup"] {
			t.Fatalf("run %d: always stage did not run", i)
		}
		byName := map[string]*StageResult{}
		for _, r := range res.Stages {
			byName[r.Stage.Name] = r
		}
		if byName["after_f1"].Status != NotStarted {
			t.Fatalf("run %d: after_f1 is %s, want not started (its dependency failed)", i, byName["after_f1"].Status)
		}
		if byName["cleanup"].Status != Succeeded {
			t.Fatalf("run %d: cleanup %s: %v", i, byName["cleanup"].Status, byName["cleanup"].Err)
		}
	}
}

func TestNoNewStageAfterFailureUnlessItCanChangeTheResult(t *testing.T) {
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  stage "fail"  "first" {}
  stage "sleep" "unrelated" {}
  stage "sleep" "cleanup" { always = true }
  verdicts = [stage.first]
}`, testRegistry(rec))
	res, err := Run(context.Background(), g, Options{Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rec.started, ","); got != "first,cleanup" {
		t.Fatalf("started %s, want first,cleanup", got)
	}
	if r := res.Stages[1]; r.Status != NotStarted || !strings.Contains(r.Err.Error(), "stage first failed") {
		t.Fatalf("unrelated: %s %v", r.Status, r.Err)
	}
}

func TestLargeGraphsWithOneSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		n    int
	}{
		{"chain of 500", chainSource(500), 500},
		{"wide graph of 10000", wideSource(10000), 10000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustParse(t, tc.src, testRegistry(newRecorder()))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := Run(ctx, g, Options{Parallelism: 1})
			if err != nil {
				t.Fatal(err)
			}
			if res.Err() != nil {
				t.Fatal(res.Err())
			}
			if len(res.Stages) != tc.n {
				t.Fatalf("%d results, want %d", len(res.Stages), tc.n)
			}
			for _, r := range res.Stages {
				if r.Status != Succeeded {
					t.Fatalf("stage %s: %s", r.Stage.Name, r.Status)
				}
			}
		})
	}
}

func chainSource(n int) string {
	var b strings.Builder
	b.WriteString("pipeline \"chain\" {\n  stage \"noop\" \"s0\" {}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  stage \"noop\" \"s%d\" { depends_on = [stage.s%d] }\n", i, i-1)
	}
	b.WriteString("}\n")
	return b.String()
}

func wideSource(n int) string {
	var b strings.Builder
	b.WriteString("pipeline \"wide\" {\n  stage \"noop\" \"root\" {}\n")
	for i := 1; i < n-1; i++ {
		fmt.Fprintf(&b, "  stage \"noop\" \"s%d\" { depends_on = [stage.root] }\n", i)
	}
	b.WriteString("  stage \"noop\" \"sink\" { depends_on = [")
	for i := 1; i < n-1; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "stage.s%d", i)
	}
	b.WriteString("] }\n}\n")
	return b.String()
}

func TestParallelismBoundsRunningStages(t *testing.T) {
	rec := newRecorder()
	var b strings.Builder
	b.WriteString("pipeline \"p\" {\n")
	for i := range 9 {
		fmt.Fprintf(&b, "  stage \"sleep\" \"s%d\" { ms = 15 }\n", i)
	}
	b.WriteString("}\n")
	g := mustParse(t, b.String(), testRegistry(rec))
	res, err := Run(context.Background(), g, Options{Parallelism: 3})
	if err != nil || res.Err() != nil {
		t.Fatal(err, res.Err())
	}
	if rec.peak > 3 {
		t.Fatalf("%d stages ran at once with 3 slots", rec.peak)
	}
}

func TestInterruptCancelsStartedStagesAndRunsCleanup(t *testing.T) {
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  stage "sleep" "long" { ms = 60000 }
  stage "sleep" "next" { depends_on = [stage.long] }
  stage "sleep" "cleanup" {
    always = true
    depends_on = [stage.long]
  }
}`, testRegistry(rec))
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan Event, 16)
	go func() {
		for e := range events {
			if e.Kind == EventStarted && e.Stage.Name == "long" {
				cancel()
			}
		}
	}()
	res, err := Run(ctx, g, Options{Parallelism: 2, Events: func(e Event) { events <- e }})
	close(events)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("run not marked interrupted")
	}
	st := map[string]Status{}
	for _, r := range res.Stages {
		st[r.Stage.Name] = r.Status
	}
	if st["long"] != Cancelled || st["next"] != NotStarted || st["cleanup"] != Succeeded {
		t.Fatalf("statuses %v", st)
	}
	if res.Err() == nil || !strings.Contains(res.Err().Error(), "stage long failed: interrupted") {
		t.Fatalf("error %v", res.Err())
	}
}

func TestWhenFalseSkipsAndDependentsRun(t *testing.T) {
	rec := newRecorder()
	g := mustParse(t, `
pipeline "p" {
  input "fresh" { type = bool }
  stage "sleep" "check" {}
  stage "sleep" "heavy" {
    when = !input.fresh && stage.check.value == "check"
  }
  stage "sleep" "after" {
    in = stage.heavy.value == null ? "reused" : stage.heavy.value
  }
}`, testRegistry(rec))
	for _, fresh := range []bool{true, false} {
		res, err := Run(context.Background(), g, Options{Inputs: map[string]cty.Value{"fresh": cty.BoolVal(fresh)}})
		if err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
		heavy, after := res.Stages[1], res.Stages[2]
		if fresh && (heavy.Status != Skipped || !heavy.Start.IsZero()) {
			t.Fatalf("fresh: heavy %s (started %v), want skipped without running", heavy.Status, !heavy.Start.IsZero())
		}
		if !fresh && heavy.Status != Succeeded {
			t.Fatalf("not fresh: heavy %s", heavy.Status)
		}
		if after.Status != Succeeded {
			t.Fatalf("after: %s %v", after.Status, after.Err)
		}
	}
}

// The last stages being skipped at dispatch (their condition false, or not
// started after a failure) ends the run cleanly.
func TestRunEndsWhenTheLastStagesAreSkipped(t *testing.T) {
	for _, src := range []string{
		`pipeline "p" {
  stage "sleep" "a" {}
  stage "sleep" "b" {
    when = stage.a.value == "nope"
  }
}`,
		`pipeline "p" {
  stage "fail" "a" {}
  stage "sleep" "b" {}
  verdicts = [stage.a]
}`,
	} {
		g := mustParse(t, src, testRegistry(newRecorder()))
		res, err := Run(context.Background(), g, Options{Parallelism: 1})
		if err != nil {
			t.Fatal(err)
		}
		if st := res.Stages[1].Status; st != Skipped && st != NotStarted {
			t.Fatalf("b: %s", st)
		}
	}
}
