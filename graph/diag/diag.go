// Package diag holds what every HCL decoder of piship does with its input
// and its diagnostics: the one door to the HCL parser (ParseConfig and
// ParseExpression refuse anything nested more than MaxNesting levels
// before hclsyntax, which recurses per level, can exhaust the stack;
// TestOneDoorToTheParser keeps it the only one), a total order for
// printing, positions as file:line:col, the one way every command prints a
// diagnostic (Render in full, Line in one line, Error to carry them through
// a Go error; FileRange for a problem with a whole file), and did-you-mean
// suggestions for misspelt names.
package diag

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
)

// Sort orders diagnostics by file, byte offset, summary and detail: a total
// order, so the same input always prints the same report.
func Sort(diags hcl.Diagnostics) hcl.Diagnostics {
	sort.SliceStable(diags, func(i, j int) bool {
		a, b := diags[i], diags[j]
		af, ao := pos(a)
		bf, bo := pos(b)
		if af != bf {
			return af < bf
		}
		if ao != bo {
			return ao < bo
		}
		if a.Summary != b.Summary {
			return a.Summary < b.Summary
		}
		return a.Detail < b.Detail
	})
	return diags
}

func pos(d *hcl.Diagnostic) (string, int) {
	if d.Subject == nil {
		return "", -1
	}
	return d.Subject.Filename, d.Subject.Start.Byte
}

// Pos formats the start of r as file:line:col.
func Pos(r hcl.Range) string {
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// Suggest returns the candidate closest to s, if it is close enough to be
// a likely typo, else "".
func Suggest(s string, candidates []string) string {
	best, bestDist := "", len(s)/2+2
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ImproveUnsupported adds a did-you-mean, or else the list of accepted
// names, to hcl's "Unsupported argument" and "Unsupported block type"
// diagnostics. where names the thing being decoded ("Kind exec").
func ImproveUnsupported(diags hcl.Diagnostics, where string, attrs, blocks []string) {
	for _, d := range diags {
		if strings.Contains(d.Detail, "Did you mean") {
			continue
		}
		var name string
		var candidates []string
		switch d.Summary {
		case "Unsupported argument":
			n, ok := strings.CutPrefix(d.Detail, `An argument named "`)
			if !ok {
				continue
			}
			name, _, _ = strings.Cut(n, `"`)
			candidates = attrs
		case "Unsupported block type":
			n, ok := strings.CutPrefix(d.Detail, `Blocks of type "`)
			if !ok {
				continue
			}
			name, _, _ = strings.Cut(n, `"`)
			candidates = blocks
		default:
			continue
		}
		if s := Suggest(name, candidates); s != "" {
			d.Detail += fmt.Sprintf(" Did you mean %q?", s)
			continue
		}
		var accepted []string
		accepted = append(accepted, attrs...)
		for _, b := range blocks {
			accepted = append(accepted, b+" { }")
		}
		if len(accepted) == 0 {
			d.Detail += fmt.Sprintf(" %s takes nothing else.", where)
		} else {
			d.Detail += fmt.Sprintf(" %s takes: %s.", where, strings.Join(accepted, ", "))
		}
	}
}

// didYouMean is how every did-you-mean is worded in a detail.
var didYouMean = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Did you mean ("(?:[^"\\]|\\.)*")\?`) })

// Suggestion is the replacement a diagnostic's detail suggests (its
// did-you-mean), or "" when it suggests none: what an editor offers as the
// quick fix (piship validate --json).
func Suggestion(d *hcl.Diagnostic) string {
	m := didYouMean().FindStringSubmatch(d.Detail)
	if m == nil {
		return ""
	}
	s, err := strconv.Unquote(m[1])
	if err != nil {
		return ""
	}
	return s
}
