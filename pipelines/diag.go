package pipelines

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// WriteDiags prints each diagnostic as `file:line:col: error: summary`,
// the source line with the range underlined, and the detail: positions a
// person can click and a grep can find. A terminal gets the severity in
// colour unless NO_COLOR is set.
func WriteDiags(w io.Writer, getenv func(string) string, files map[string]*hcl.File, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	color := IsTerminal(w) && getenv("NO_COLOR") == ""
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if color {
			sev = "\x1b[1;31m" + sev + "\x1b[0m"
		}
		if d.Subject != nil {
			r := d.Subject
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", r.Filename, r.Start.Line, r.Start.Column, sev, d.Summary)
			if f := files[r.Filename]; f != nil {
				writeSnippet(&b, f.Bytes, r)
			}
		} else {
			fmt.Fprintf(&b, "%s: %s\n", sev, d.Summary)
		}
		for _, line := range strings.Split(d.Detail, "\n") {
			if line != "" {
				fmt.Fprintf(&b, "  %s\n", line)
			}
		}
		b.WriteString("\n")
	}
	WriteAll(w, b.String())
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

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// WriteAll is io.WriteString that ignores a closed stdout.
func WriteAll(w io.Writer, s string) { _, _ = io.WriteString(w, s) }

// HumanBytes words a size in binary units: 512 B, 1.5 KiB, 24.0 MiB.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
