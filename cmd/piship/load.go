package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"piship.dev/piship/graph"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages"
)

// source is one pipeline file: on disk or embedded in the binary.
type source struct {
	name string // shown in diagnostics
	dir  string // where relative paths resolve
	src  []byte
}

// findPipeline resolves PIPELINE: a path to an .hcl file, or a name looked
// up as NAME.hcl in dir (--pipelines), then ./pipelines, then the
// pipelines embedded in the binary.
func findPipeline(arg, dir string) (*source, error) {
	if strings.HasSuffix(arg, ".hcl") || strings.ContainsRune(arg, os.PathSeparator) || strings.Contains(arg, "/") {
		return readSource(arg)
	}
	var tried []string
	for _, d := range []string{dir, "pipelines"} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, arg+".hcl")
		if _, err := os.Stat(p); err == nil {
			return readSource(p)
		}
		tried = append(tried, p)
	}
	if b, err := fs.ReadFile(pipelines.FS, arg+".hcl"); err == nil {
		cwd, _ := os.Getwd()
		return &source{name: "embedded:pipelines/" + arg + ".hcl", dir: cwd, src: b}, nil
	}
	tried = append(tried, "embedded:pipelines/"+arg+".hcl")
	return nil, fmt.Errorf("CONFIG_INVALID: no pipeline %q (looked in %s); pass a file path or one of: %s",
		arg, strings.Join(tried, ", "), strings.Join(embeddedNames(), ", "))
}

func readSource(path string) (*source, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CONFIG_INVALID: cannot read pipeline file: %v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return &source{name: path, dir: filepath.Dir(abs), src: b}, nil
}

func embeddedNames() []string {
	entries, _ := fs.ReadDir(pipelines.FS, ".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".hcl"); ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// loadOne parses src and requires exactly one pipeline in it. Diagnostics
// are printed to e.stderr; ok is false when there were errors.
func loadOne(e *env, src *source) (*graph.Graph, bool) {
	graphs, files, diags := graph.Parse(src.src, src.name, src.dir, stages.Default())
	printDiags(e, files, diags)
	if diags.HasErrors() {
		return nil, false
	}
	if len(graphs) != 1 {
		names := make([]string, len(graphs))
		for i, g := range graphs {
			names[i] = g.Name
		}
		fmt.Fprintf(e.stderr, "piship: CONFIG_INVALID: %s holds %d pipelines (%s); a runnable file holds exactly one\n", src.name, len(graphs), strings.Join(names, ", "))
		return nil, false
	}
	return graphs[0], true
}

// printDiags prints each diagnostic as `file:line:col: error: summary`,
// the source line with the range underlined, and the detail: positions a
// person can click and a grep can find.
func printDiags(e *env, files map[string]*hcl.File, diags hcl.Diagnostics) {
	if len(diags) == 0 {
		return
	}
	color := false
	if f, ok := e.stderr.(*os.File); ok && isTerminal(f) && e.getenv("NO_COLOR") == "" {
		color = true
	}
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
	writeAll(e.stderr, b.String())
}

// writeSnippet prints the first line of r with a caret underline.
func writeSnippet(b *strings.Builder, src []byte, r *hcl.Range) {
	lines := strings.Split(string(src), "\n")
	if r.Start.Line < 1 || r.Start.Line > len(lines) {
		return
	}
	line := strings.TrimRight(lines[r.Start.Line-1], "\r")
	fmt.Fprintf(b, "%5d | %s\n", r.Start.Line, line)
	width := 1
	if r.End.Line == r.Start.Line && r.End.Column > r.Start.Column {
		width = r.End.Column - r.Start.Column
	}
	pad := strings.Map(func(c rune) rune {
		if c == '\t' {
			return '\t'
		}
		return ' '
	}, string([]rune(line)[:min(r.Start.Column-1, len([]rune(line)))]))
	fmt.Fprintf(b, "      | %s%s\n", pad, strings.Repeat("^", width))
}

func isTerminal(f *os.File) bool {
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// collectSources expands validate's arguments: files, directories (every
// .hcl file in them), or, with none, ./pipelines and the embedded pipelines.
func collectSources(args []string) ([]*source, error) {
	if len(args) == 0 {
		var out []*source
		if info, err := os.Stat("pipelines"); err == nil && info.IsDir() {
			s, err := dirSources("pipelines")
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
		} else {
			for _, n := range embeddedNames() {
				s, err := findPipeline(n, "")
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
		}
		return out, nil
	}
	var out []*source
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("CONFIG_INVALID: %v", err)
		}
		if info.IsDir() {
			s, err := dirSources(a)
			if err != nil {
				return nil, err
			}
			out = append(out, s...)
			continue
		}
		s, err := readSource(a)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func dirSources(dir string) ([]*source, error) {
	matches, err := filepath.Glob(filepath.Join(dir, "*.hcl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	var out []*source
	for _, m := range matches {
		s, err := readSource(m)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// writeAll is io.WriteString that ignores a closed stdout.
func writeAll(w io.Writer, s string) { _, _ = io.WriteString(w, s) }
