package main

import (
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/stages"
)

// columnStarts returns where each column after the first starts in line
// (columns are separated by two or more spaces), after indent.
func columnStarts(line string, n int) []int {
	var starts []int
	for _, m := range regexp.MustCompile(`\S  +`).FindAllStringIndex(line, n) {
		starts = append(starts, m[1])
	}
	return starts
}

// sameColumns fails unless every line of rows starts its columns at the
// same offsets.
func sameColumns(t *testing.T, what string, rows []string, cols int) {
	t.Helper()
	if len(rows) == 0 {
		t.Errorf("%s: no rows", what)
		return
	}
	want := columnStarts(rows[0], cols)
	if len(want) != cols {
		t.Errorf("%s: %q has %d columns after the first, want %d", what, rows[0], len(want), cols)
		return
	}
	for _, r := range rows[1:] {
		if got := columnStarts(r, cols); len(got) != cols || got[0] != want[0] || got[cols-1] != want[cols-1] {
			t.Errorf("%s: columns misaligned:\n%s\n%s", what, rows[0], r)
		}
	}
}

// section returns the lines of out under the header line that starts with
// head, up to the next blank line.
func section(out, head string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, head):
			in = true
		case in && l == "":
			return rows
		case in:
			rows = append(rows, l)
		}
	}
	return rows
}

// TestStagesColumnsAlignAndListEveryAttribute is issue 29 point 7: `piship
// stages` and `piship stages KIND` print aligned columns whatever the
// longest name, and every kind lists the attributes every stage takes
// (when, always, depends_on) with the kind's own.
func TestStagesColumnsAlignAndListEveryAttribute(t *testing.T) {
	code, out, stderr := piship(t, nil, "stages")
	if code != exitOK {
		t.Fatalf("stages: exit %d\n%s", code, stderr)
	}
	kinds := strings.Split(strings.SplitN(out, "\n\n", 2)[0], "\n")
	if len(kinds) != len(stages.Default().Names()) {
		t.Fatalf("stages lists %d kinds, want %d:\n%s", len(kinds), len(stages.Default().Names()), out)
	}
	sameColumns(t, "piship stages", kinds, 1)

	for _, kind := range stages.Default().Names() {
		code, out, stderr := piship(t, nil, "stages", kind)
		if code != exitOK {
			t.Fatalf("stages %s: exit %d\n%s", kind, code, stderr)
		}
		attrs := section(out, "Attributes")
		sameColumns(t, "piship stages "+kind+" attributes", attrs, 3)
		for _, meta := range []string{"when", "always", "depends_on"} {
			if !regexp.MustCompile(`(?m)^  ` + meta + ` +\S+ +optional +\S`).MatchString(strings.Join(attrs, "\n")) {
				t.Errorf("piship stages %s does not list %s:\n%s", kind, meta, out)
			}
		}
		if outs := section(out, "Outputs"); len(outs) > 0 && outs[0] != "  none" {
			sameColumns(t, "piship stages "+kind+" outputs", outs, 2)
		}
	}
}
