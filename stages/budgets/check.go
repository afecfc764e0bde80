package budgets

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/stage/errcode"
)

// Tolerance is how far, in percent, a counted figure may stray from its
// budget before Check calls it over (failing) or under (reported).
const Tolerance = 10

// The states of a counted figure.
const (
	Within = "within" // no more than Tolerance percent from the budget
	Over   = "over"   // more than Tolerance percent over: fails
	Under  = "under"  // more than Tolerance percent under: reported, tighten the budget
)

// Figure is one counted figure of a target against its budget.
type Figure struct {
	Name   string // payload files, installed files, archive bytes
	Budget int64
	Actual int64
	State  string // Within, Over or Under
}

// TimingRatio is one timing of this release against the recorded one:
// reported, never gated.
type TimingRatio struct {
	Name       string  // "release" or a stage's name
	RecordedMs int64   // 0 when nothing was recorded for it
	Ms         int64   // this release's (0 when the stage is not among this run's)
	Ratio      float64 // Ms / RecordedMs, 0 when not compared
	Note       string  // why it is not compared, or what differs ("" when compared alike)
}

// TargetReport is one target's check.
type TargetReport struct {
	Target   string
	Archive  string
	Budgeted bool // false: the file has no budget for the target (it passes)
	Figures  []Figure
	Timings  []TimingRatio
}

// Report is a check of a release set against a budgets file.
type Report struct {
	File    string
	Targets []TargetReport
	// Unreleased are the file's targets the release does not have (the
	// release set or --target left them out), by name.
	Unreleased []string
}

// Check holds each measured target to its budget in f.
func Check(f *File, ms []Measured) *Report {
	r := &Report{File: f.Path}
	seen := map[string]bool{}
	for _, m := range ms {
		seen[m.Target] = true
		b, ok := f.Targets[m.Target]
		tr := TargetReport{Target: m.Target, Archive: m.Archive, Budgeted: ok}
		if ok {
			tr.Figures = []Figure{
				figure("payload files", b.PayloadFiles, m.PayloadFiles),
				figure("installed files", b.InstalledFiles, m.InstalledFiles),
				figure("archive bytes", b.ArchiveBytes, m.ArchiveBytes),
			}
			if m.HasTiming {
				tr.Timings = ratios(b.Timing, m.Timing)
			}
		}
		r.Targets = append(r.Targets, tr)
	}
	for _, t := range slices.Sorted(maps.Keys(f.Targets)) {
		if !seen[t] {
			r.Unreleased = append(r.Unreleased, t)
		}
	}
	return r
}

// figure judges actual against budget: over when actual is more than
// Tolerance percent above it, under when more than Tolerance percent below.
func figure(name string, budget, actual int64) Figure {
	f := Figure{Name: name, Budget: budget, Actual: actual, State: Within}
	switch {
	case actual*100 > budget*(100+Tolerance):
		f.State = Over
	case actual*100 < budget*(100-Tolerance):
		f.State = Under
	}
	return f
}

// ratios compares this release's timings with the recorded ones: the
// release's total, then every stage either recorded or this run's, by name.
func ratios(rec, now Timing) []TimingRatio {
	total := TimingRatio{Name: "release", RecordedMs: rec.ReleaseMs, Ms: now.ReleaseMs}
	if rec.ReleaseMs > 0 {
		total.Ratio = float64(now.ReleaseMs) / float64(rec.ReleaseMs)
	}
	if rec.RuntimeCache != now.RuntimeCache && rec.RuntimeCache != "" && now.RuntimeCache != "" {
		total.Note = fmt.Sprintf("runtime cache %s, recorded on a %s", now.RuntimeCache, rec.RuntimeCache)
	}
	out := []TimingRatio{total}
	recd := map[string]StageTiming{}
	for _, s := range rec.Stages {
		recd[s.Name] = s
	}
	cur := map[string]StageTiming{}
	for _, s := range now.Stages {
		cur[s.Name] = s
	}
	names := slices.Sorted(maps.Keys(recd))
	for n := range cur {
		if _, ok := recd[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		r, wasRecorded := recd[n]
		c, ran := cur[n]
		t := TimingRatio{Name: n, RecordedMs: r.Ms, Ms: c.Ms}
		switch {
		case !wasRecorded:
			t.Note = "not recorded (it now takes a tenth of the release or more)"
		case !ran:
			t.Note = "under a tenth of this release, not compared"
		case r.Cache != c.Cache:
			t.Note = fmt.Sprintf("cache %s, recorded on a %s: not compared", c.Cache, r.Cache)
		case r.Ms > 0:
			t.Ratio = float64(c.Ms) / float64(r.Ms)
		}
		out = append(out, t)
	}
	return out
}

// Err is BUDGET_EXCEEDED naming every figure more than Tolerance percent
// over its budget, with the budget, the actual figure and what to do; nil
// when none is.
func (r *Report) Err() error {
	var over []string
	for _, t := range r.Targets {
		for _, f := range t.Figures {
			if f.State == Over {
				over = append(over, fmt.Sprintf("%s %s %d, budget %d (%s)", t.Target, f.Name, f.Actual, f.Budget, percent(f)))
			}
		}
	}
	if len(over) == 0 {
		return nil
	}
	return errcode.Newf(errcode.BudgetExceeded, "%s over %s by more than %d%%: %s; shrink the release back under it, or accept the growth with piship budgets check --record and commit %s with the reason",
		canon.Count(len(over), "figure"), r.File, Tolerance, strings.Join(over, "; "), FileName)
}

// percent says how far f is from its budget: "+20.0%", "-12.5%".
func percent(f Figure) string {
	if f.Budget == 0 {
		if f.Actual == 0 {
			return "+0.0%"
		}
		return "none budgeted"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(f.Actual-f.Budget)/float64(f.Budget))
}

// Lines are the report for people: per target, each figure with its
// budget and state, then the timings (reported only).
func (r *Report) Lines() []string {
	var out []string
	for _, t := range r.Targets {
		if !t.Budgeted {
			out = append(out, fmt.Sprintf("%s: no budget in %s: nothing checked (piship budgets check --record writes one)", t.Target, r.File))
			continue
		}
		for _, f := range t.Figures {
			line := fmt.Sprintf("%s: %-15s %d, budget %d (%s): ", t.Target, f.Name, f.Actual, f.Budget, percent(f))
			switch f.State {
			case Over:
				line += fmt.Sprintf("OVER by more than %d%%", Tolerance)
			case Under:
				line += fmt.Sprintf("under by more than %d%%: tighten it with --record", Tolerance)
			default:
				line += "ok"
			}
			out = append(out, line)
		}
		for _, tm := range t.Timings {
			line := fmt.Sprintf("%s: timing %s: %d ms", t.Target, tm.Name, tm.Ms)
			if tm.Ratio > 0 {
				line += fmt.Sprintf(", %.2fx the recorded %d ms", tm.Ratio, tm.RecordedMs)
			} else if tm.RecordedMs > 0 {
				line += fmt.Sprintf(", recorded %d ms", tm.RecordedMs)
			}
			if tm.Note != "" {
				line += " (" + tm.Note + ")"
			}
			out = append(out, line+"; reported, not gated")
		}
	}
	for _, t := range r.Unreleased {
		out = append(out, fmt.Sprintf("%s: budgeted in %s, not in this release: not checked", t, r.File))
	}
	return out
}
