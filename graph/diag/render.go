package diag

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/stages/stage/errcode"
)

// FileRange is the subject of a diagnostic about a whole file rather than
// a place in it (the file cannot be read, or is missing): its name and no
// position. Render and Line print it as `file: error: summary`.
func FileRange(filename string) *hcl.Range { return &hcl.Range{Filename: filename} }

// Where is where d points, the way piship prints positions: file:line:col,
// just the file for a FileRange, or fallback when d has no subject (empty
// fallback: "").
func Where(d *hcl.Diagnostic, fallback string) string {
	r := d.Subject
	switch {
	case r == nil:
		return fallback
	case r.Start.Line < 1:
		return r.Filename
	}
	return Pos(*r)
}

// Line is d in one line: `where: summary`, then `; detail` when the detail
// is one line (a detail of several lines is a listing, left to Render).
// It never prints hcl's own range format (`file:3,22-22`) or `<nil>`.
func Line(d *hcl.Diagnostic, fallback string) string {
	s := d.Summary
	if w := Where(d, fallback); w != "" {
		s = w + ": " + s
	}
	if det := strings.TrimSpace(d.Detail); det != "" && !strings.Contains(det, "\n") {
		s += "; " + det
	}
	return s
}

// RenderOptions are how Render prints.
type RenderOptions struct {
	// Source returns a file's bytes for the snippet (nil: no snippet).
	Source func(filename string) []byte
	// Color puts the severity in colour (a terminal without NO_COLOR).
	Color bool
	// Where names what a diagnostic without a subject is about (a file,
	// a stage); empty prints it as `error: summary`.
	Where string
}

// Render prints each diagnostic as `file:line:col: error: summary`, the
// source line with the range underlined, and the detail (what to do)
// indented, one blank line after each: positions a person can click and a
// grep can find. A FileRange prints `file: error: summary` and no
// snippet. This is the one format of every piship diagnostic.
func Render(diags hcl.Diagnostics, o RenderOptions) string {
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if o.Color {
			sev = "\x1b[1;31m" + sev + "\x1b[0m"
		}
		if w := Where(d, o.Where); w != "" {
			fmt.Fprintf(&b, "%s: %s: %s\n", w, sev, d.Summary)
		} else {
			fmt.Fprintf(&b, "%s: %s\n", sev, d.Summary)
		}
		if r := d.Subject; r != nil && r.Start.Line >= 1 && o.Source != nil {
			if src := o.Source(r.Filename); src != nil {
				writeSnippet(&b, src, r)
			}
		}
		for _, line := range strings.Split(d.Detail, "\n") {
			if strings.TrimSpace(line) != "" {
				fmt.Fprintf(&b, "  %s\n", strings.TrimRight(line, " \t\r"))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// writeSnippet prints the first line of r with a caret underline.
func writeSnippet(b *strings.Builder, src []byte, r *hcl.Range) {
	lines := strings.Split(string(src), "\n")
	if r.Start.Line < 1 || r.Start.Line > len(lines) {
		return
	}
	line := []rune(strings.TrimRight(lines[r.Start.Line-1], "\r"))
	col := min(max(r.Start.Column-1, 0), len(line))
	width := 1
	if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
		width = r.End.Column - r.Start.Column
	}
	// A long line (a generated or hostile file) shows the 120 characters
	// around the column, not all of it.
	const window = 120
	prefix, suffix := "", ""
	if len(line) > window {
		from := max(0, min(col-window/2, len(line)-window))
		if from > 0 {
			prefix = "..."
		}
		if from+window < len(line) {
			suffix = "..."
		}
		line, col = line[from:from+window], col-from
		width = min(width, window-col)
	}
	fmt.Fprintf(b, "%5d | %s%s%s\n", r.Start.Line, prefix, string(line), suffix)
	pad := strings.Map(func(c rune) rune {
		if c == '\t' {
			return '\t'
		}
		return ' '
	}, prefix+string(line[:col]))
	fmt.Fprintf(b, "      | %s%s\n", pad, strings.Repeat("^", max(width, 1)))
}

// Error is diagnostics carried as a Go error, for code that reports
// through an error (a stage's Run, a loader under a stage): its message is
// one line (the code and the first error as Line words it), and a caller
// that prints for a person finds it with errors.As and renders every
// diagnostic with Render instead.
type Error struct {
	// Code is the searchable error code: CONFIG_INVALID, ...
	Code string
	// Diags are the diagnostics, sorted (at least one error).
	Diags hcl.Diagnostics
	// Sources holds the bytes of the files the diagnostics point into,
	// when the producer has them, for the snippets.
	Sources map[string][]byte
}

// NewError wraps diags (sorted here) with the code.
func NewError(code string, diags hcl.Diagnostics) *Error {
	return &Error{Code: code, Diags: Sort(diags)}
}

// ErrorCode returns the code (errcode.Coder).
func (e *Error) ErrorCode() string { return e.Code }

var _ errcode.Coder = (*Error)(nil)

func (e *Error) Error() string {
	var first *hcl.Diagnostic
	n := 0
	for _, d := range e.Diags {
		if d.Severity == hcl.DiagError {
			if first == nil {
				first = d
			}
			n++
		}
	}
	if first == nil {
		return e.Code
	}
	s := e.Code + ": " + Line(first, "")
	if n > 1 {
		s += fmt.Sprintf(" (and %d more)", n-1)
	}
	return s
}
