package graph

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteDOT writes the graph in Graphviz DOT. Output is stable: stages in
// declaration order, edges by dependent then dependency. Data edges are
// solid, depends_on edges dashed, always stages drawn with a double border,
// verdict stages annotated with their position.
func (g *Graph) WriteDOT(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", strconv.Quote(g.Name))
	b.WriteString("  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n")
	pos := g.verdictPositions()
	for _, s := range g.Stages {
		label := s.Label()
		if p, ok := pos[s]; ok {
			label += fmt.Sprintf("\\nverdict %d", p)
		}
		attrs := "label=" + strconv.Quote(label)
		if s.Always {
			attrs += ", peripheries=2"
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(s.Name), attrs)
	}
	for _, s := range g.Stages {
		for _, e := range g.edgesInto(s) {
			style := ""
			if !e.Data {
				style = " [style=dashed]"
			}
			fmt.Fprintf(&b, "  %s -> %s%s;\n", strconv.Quote(e.From.Name), strconv.Quote(s.Name), style)
		}
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMermaid writes the graph as a Mermaid flowchart, stable like WriteDOT.
func (g *Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	pos := g.verdictPositions()
	for _, s := range g.Stages {
		label := s.Label()
		if p, ok := pos[s]; ok {
			label += fmt.Sprintf("<br/>verdict %d", p)
		}
		open, close := "[", "]"
		if s.Always {
			open, close = "[[", "]]"
		}
		fmt.Fprintf(&b, "  s%d%s\"%s\"%s\n", s.Index, open, strings.ReplaceAll(label, `"`, "#quot;"), close)
	}
	for _, s := range g.Stages {
		for _, e := range g.edgesInto(s) {
			arrow := "-->"
			if !e.Data {
				arrow = "-.->"
			}
			fmt.Fprintf(&b, "  s%d %s s%d\n", e.From.Index, arrow, s.Index)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// edgesInto returns one edge per dependency of s; a data reference wins over
// depends_on when both exist.
func (g *Graph) edgesInto(s *Stage) []*Edge {
	var out []*Edge
	for _, d := range s.DepStages {
		var pick *Edge
		for _, e := range s.Deps {
			if e.From == d && (pick == nil || (e.Data && !pick.Data)) {
				pick = e
			}
		}
		out = append(out, pick)
	}
	return out
}

func (g *Graph) verdictPositions() map[*Stage]int {
	pos := map[*Stage]int{}
	for i, s := range g.Verdicts {
		pos[s] = i + 1
	}
	return pos
}
