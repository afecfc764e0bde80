package graph

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// sourceFanOut is the number of dependents from which a stage without
// dependencies of its own is drawn as a source (see WriteDOT).
const sourceFanOut = 4

// WriteDOT writes the graph in Graphviz DOT, left to right, with a legend.
// Output is stable: stages in declaration order, edges by dependent then
// dependency.
//
// Node labels are HTML-like labels, escaped as such (&amp; &lt; &gt; &quot;,
// \\ for a backslash, which Graphviz reads as an escape even there, a line
// break is <BR/>); identifiers are DOT quoted strings with " and \
// escaped. A node shows the stage's name, its kind, "verdict N" for the
// N-th entry of verdicts, "always" (also a double border) and its `when`
// condition as written. Data edges (stage.<name>.<output>) are solid,
// depends_on edges dashed.
//
// A stage with no dependencies that feeds sourceFanOut or more stages (the
// inputs stage of release and build) is a source: it is drawn as a table of
// the outputs that are read, each with the stages reading it, and an edge
// from it is drawn only to a stage no other path from it reaches, so its
// fan-out does not hide the pipeline's shape.
func (g *Graph) WriteDOT(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.Name))
	title := "<B>" + htmlLines(g.Name, "<BR/>") + "</B>"
	if g.Description != "" {
		title += "<BR/>" + htmlLines(g.Description, "<BR/>")
	}
	fmt.Fprintf(&b, "  label=<%s>;\n", title)
	b.WriteString("  labelloc=t;\n  fontname=\"Helvetica\";\n  rankdir=LR;\n  nodesep=0.3;\n  ranksep=0.45;\n")
	b.WriteString("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=12];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=10];\n")
	pos := g.verdictPositions()
	sources := g.sources()
	node := func(indent string, s *Stage) {
		if sources[s] {
			fmt.Fprintf(&b, "%s%s [label=<%s>, shape=plain, style=\"\"];\n", indent, dotQuote(s.Name), g.sourceTable(s, pos))
			return
		}
		attrs := "label=<" + g.nodeLabel(s, pos) + ">"
		if _, ok := pos[s]; ok {
			attrs += `, style="rounded,filled", fillcolor="#fff1c1"`
		}
		if s.Always {
			attrs += ", peripheries=2"
		}
		fmt.Fprintf(&b, "%s%s [%s];\n", indent, dotQuote(s.Name), attrs)
	}
	for _, s := range g.Root.Stages {
		node("  ", s)
	}
	// A module is a cluster named by its address and source (with its
	// for_each, whose instances exist only in a run), its stages inside.
	var cluster func(m *Module, indent string)
	cluster = func(m *Module, indent string) {
		label := "<B>" + htmlText(m.Addr) + "</B><BR/>" + htmlText(m.Source)
		if m.Call.ForEach != nil {
			label += `<BR/><FONT POINT-SIZE="10" COLOR="#1f4e9c"><I>for_each ` + htmlText(exprText(g, m.Call.ForEach)) + "</I></FONT>" + g.keysText(m.Parent, m.Call.ForEach)
		}
		fmt.Fprintf(&b, "%ssubgraph %s {\n%s  label=<%s>;\n%s  style=rounded;\n%s  color=\"#999999\";\n", indent, dotQuote("cluster_"+m.Addr), indent, label, indent, indent)
		for _, s := range m.Stages {
			node(indent+"  ", s)
		}
		for _, c := range m.Modules {
			cluster(c, indent+"  ")
		}
		fmt.Fprintf(&b, "%s}\n", indent)
	}
	for _, m := range g.Root.Modules {
		cluster(m, "  ")
	}
	reach := map[*Stage]map[*Stage]bool{}
	for src := range sources {
		reach[src] = descendants(src)
	}
	for _, s := range g.Stages {
		for _, e := range g.edgesInto(s) {
			if sources[e.From] && reachedOtherwise(reach[e.From], e.From, s) {
				continue
			}
			var attrs []string
			if !e.Data {
				attrs = append(attrs, "style=dashed")
			}
			if sources[e.From] {
				// From the table's header: an edge leaving a row would
				// read as that output alone.
				attrs = append(attrs, `tailport="stage:e"`)
			}
			style := ""
			if len(attrs) > 0 {
				style = " [" + strings.Join(attrs, ", ") + "]"
			}
			fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(e.From.Name), dotQuote(s.Name), style)
		}
	}
	writeLegend(&b, len(sources) > 0)
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// nodeLabel is the HTML-like label of a stage: name, kind, verdict
// position, always and when.
func (g *Graph) nodeLabel(s *Stage, pos map[*Stage]int) string {
	var b strings.Builder
	b.WriteString("<B>" + htmlText(s.LocalName) + "</B><BR/>")
	b.WriteString(`<FONT POINT-SIZE="10" COLOR="#555555">` + htmlText(s.KindName) + "</FONT>")
	if p, ok := pos[s]; ok {
		fmt.Fprintf(&b, `<BR/><FONT COLOR="#8a4b00">verdict %d</FONT>`, p)
	}
	if s.Always {
		b.WriteString(`<BR/><FONT POINT-SIZE="10">always</FONT>`)
	}
	if s.ForEach != nil {
		b.WriteString(`<BR/><FONT POINT-SIZE="10" COLOR="#1f4e9c"><I>for_each ` + htmlText(exprText(g, s.ForEach)) + "</I></FONT>" + g.keysText(s.Module, s.ForEach))
	}
	if s.When != nil {
		b.WriteString(`<BR/><FONT POINT-SIZE="10" COLOR="#1f4e9c"><I>when ` + htmlLines(g.whenText(s), `<BR ALIGN="LEFT"/>`) + "</I></FONT>")
	}
	return b.String()
}

// keysText lists the instances a for_each of the pipeline itself makes
// when they are known before the run (over inputs with defaults and
// locals): "instances: a, b". Over a stage's output, or in a module, the
// instances exist only in a run and nothing is added.
func (g *Graph) keysText(m *Module, expr hcl.Expression) string {
	if m != g.Root {
		return ""
	}
	for _, tr := range expr.Variables() {
		if r := tr.RootName(); r != "input" && r != "local" {
			return ""
		}
	}
	sc, err := g.NewScope(nil)
	if err != nil {
		return "" // a required input: not known before the run
	}
	v, diags := expr.Value(sc.base)
	if diags.HasErrors() {
		return ""
	}
	keys, err := forEachKeys(v)
	if err != nil || len(keys) == 0 {
		return ""
	}
	names := make([]string, 0, min(len(keys), 8))
	for i, k := range keys {
		if i == 7 && len(keys) > 8 {
			names = append(names, fmt.Sprintf("... (%d in all)", len(keys)))
			break
		}
		names = append(names, k.key)
	}
	return `<BR/><FONT POINT-SIZE="10">instances: ` + htmlText(strings.Join(names, ", ")) + "</FONT>"
}

// exprText is an expression as written, on one line.
func exprText(g *Graph, e hcl.Expression) string {
	r := e.Range()
	f := g.Files[r.Filename]
	if f == nil || r.End.Byte > len(f.Bytes) {
		return "..."
	}
	return strings.Join(strings.Fields(string(f.Bytes[r.Start.Byte:r.End.Byte])), " ")
}

// sourceTable is the HTML-like table a source stage is drawn as: a header
// with its label, then one row per output that is read, naming the readers.
func (g *Graph) sourceTable(s *Stage, pos map[*Stage]int) string {
	readers := map[string][]string{}
	var ordering []string
	for _, d := range s.Dependents {
		data := false
		for _, e := range d.Deps {
			if e.From != s || !e.Data {
				continue
			}
			data = true
			if rs := readers[e.Output]; len(rs) == 0 || rs[len(rs)-1] != d.Name {
				readers[e.Output] = append(rs, d.Name)
			}
		}
		if !data {
			ordering = append(ordering, d.Name)
		}
	}
	var b strings.Builder
	b.WriteString(`<TABLE BORDER="1" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3" STYLE="ROUNDED">`)
	fill := "#e8eef7"
	if _, ok := pos[s]; ok {
		fill = "#fff1c1"
	}
	b.WriteString(`<TR><TD COLSPAN="2" PORT="stage" BGCOLOR="` + fill + `">` + g.nodeLabel(s, pos) + `</TD></TR>`)
	b.WriteString(`<TR><TD><FONT POINT-SIZE="10"><I>output</I></FONT></TD><TD><FONT POINT-SIZE="10"><I>read by</I></FONT></TD></TR>`)
	row := func(name string, names []string) {
		b.WriteString(`<TR><TD ALIGN="LEFT" BALIGN="LEFT">` + name + `</TD><TD ALIGN="LEFT" BALIGN="LEFT"><FONT POINT-SIZE="10">`)
		for i, n := range names {
			switch {
			case i > 0 && i%4 == 0:
				b.WriteString(",<BR/>")
			case i > 0:
				b.WriteString(", ")
			}
			b.WriteString(htmlText(n))
		}
		b.WriteString(`</FONT></TD></TR>`)
	}
	for _, o := range s.Kind.Outputs() {
		if rs := readers[o.Name]; len(rs) > 0 {
			row(htmlText(o.Name), rs)
		}
	}
	if len(ordering) > 0 {
		row("<I>(depends_on)</I>", ordering)
	}
	b.WriteString(`</TABLE>`)
	return b.String()
}

// writeLegend draws the legend: one table node in the last rank, so it
// sits beside the pipeline's end instead of stretching the first rank.
func writeLegend(b *strings.Builder, sources bool) {
	const (
		name   = `<B>name</B><BR/><FONT POINT-SIZE="10" COLOR="#555555">kind</FONT>`
		line   = `<TD FIXEDSIZE="TRUE" WIDTH="40" HEIGHT="4" CELLPADDING="0" SIDES="B" BORDER="1" COLOR="black"%s></TD><TD CELLPADDING="0">&gt;</TD>`
		sample = `<TD COLSPAN="2" BORDER="1" STYLE="ROUNDED"%s>` + name + `%s</TD>`
		text   = `<TD ALIGN="LEFT" BALIGN="LEFT">%s</TD>`
	)
	rows := [][2]string{
		{fmt.Sprintf(line, ""), "data edge: the stage reads stage.&lt;name&gt;.&lt;output&gt;"},
		{fmt.Sprintf(line, ` STYLE="DASHED"`), "ordering edge: depends_on, no data"},
		{fmt.Sprintf(sample, ` BGCOLOR="#fff1c1"`, `<BR/><FONT COLOR="#8a4b00">verdict N</FONT>`),
			"verdict N: the N-th entry of verdicts; a failed run names the<BR/>first failing stage in verdict order: the verdicts, then<BR/>every other stage in declaration order"},
		{fmt.Sprintf(sample, ``, `<BR/><FONT POINT-SIZE="10">always</FONT>`), "always: runs even after a failure or Ctrl-C (double border)"},
		{fmt.Sprintf(sample, ``, `<BR/><FONT POINT-SIZE="10" COLOR="#1f4e9c"><I>when condition</I></FONT>`),
			"when: skipped if the condition is false;<BR/>its dependents still run"},
	}
	if sources {
		rows = append(rows, [2]string{`<TD COLSPAN="2" BORDER="1" BGCOLOR="#e8eef7">table</TD>`,
			"a source stage: its outputs and the stages reading them;<BR/>edges from it only to stages no other path reaches"})
	}
	b.WriteString(`  "legend:" [label=<<TABLE BORDER="1" COLOR="#999999" CELLBORDER="0" CELLSPACING="4" CELLPADDING="2">`)
	b.WriteString("\n    " + `<TR><TD COLSPAN="3"><B>legend</B></TD></TR>`)
	for _, r := range rows {
		b.WriteString("\n    <TR>" + r[0] + fmt.Sprintf(text, `<FONT POINT-SIZE="10">`+r[1]+`</FONT>`) + "</TR>")
	}
	b.WriteString("\n  </TABLE>>, shape=plain, fontsize=10];\n  { rank=sink; \"legend:\"; }\n")
}

// sources returns the stages drawn as a source table: no dependencies, at
// least sourceFanOut dependents.
func (g *Graph) sources() map[*Stage]bool {
	out := map[*Stage]bool{}
	for _, s := range g.Stages {
		if len(s.DepStages) == 0 && len(s.Dependents) >= sourceFanOut {
			out[s] = true
		}
	}
	return out
}

// descendants returns the stages that depend on from, directly or not.
func descendants(from *Stage) map[*Stage]bool {
	reach := map[*Stage]bool{}
	stack := []*Stage{from}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range s.Dependents {
			if !reach[d] {
				reach[d] = true
				stack = append(stack, d)
			}
		}
	}
	return reach
}

// reachedOtherwise reports whether to depends on another stage that from
// reaches (reach: from's descendants), so the edge from -> to adds nothing
// to the picture's order.
func reachedOtherwise(reach map[*Stage]bool, from, to *Stage) bool {
	for _, d := range to.DepStages {
		if d != from && reach[d] {
			return true
		}
	}
	return false
}

// whenText is the stage's when condition as written in its file, or
// "(condition)" when the source is not at hand.
func (g *Graph) whenText(s *Stage) string {
	r := s.When.Range()
	if f, ok := g.Files[r.Filename]; ok && f != nil && r.End.Byte <= len(f.Bytes) && r.Start.Byte < r.End.Byte {
		var lines []string
		for _, l := range strings.Split(string(r.SliceBytes(f.Bytes)), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	return "(condition)"
}

// dotQuote writes s as a DOT quoted string: \ and " escaped, a line break
// as \n, other control characters as spaces.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// htmlText escapes s for an HTML-like label: &, <, >, " as entities, a
// backslash doubled;
// characters XML forbids (control characters, invalid UTF-8) as U+FFFD;
// a tab or line break as a space.
func htmlText(s string) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRuneInString(s[i:])
		w = n
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\\':
			// Graphviz reads \N, \G, \L ... in HTML-like labels too, after
			// entities are decoded; \\ is a backslash.
			b.WriteString(`\\`)
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		case r == utf8.RuneError && n == 1, r < 0x20, r == 0xFFFE, r == 0xFFFF:
			b.WriteRune('\uFFFD')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// htmlLines escapes each line of s with htmlText and joins them with br.
func htmlLines(s, br string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = htmlText(l)
	}
	return strings.Join(lines, br)
}

// WriteMermaid writes the graph as a Mermaid flowchart, stable like WriteDOT:
// "kind name", "verdict N" and the when condition as written, one node per
// stage (always stages as subroutines), data edges solid, depends_on dotted.
func (g *Graph) WriteMermaid(w io.Writer) error {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	pos := g.verdictPositions()
	for _, s := range g.Stages {
		label := mermaidText(s.Label())
		if p, ok := pos[s]; ok {
			label += fmt.Sprintf("<br/>verdict %d", p)
		}
		if s.ForEach != nil {
			label += "<br/>for_each " + mermaidText(exprText(g, s.ForEach))
		}
		if s.When != nil {
			lines := strings.Split(g.whenText(s), "\n")
			for i, l := range lines {
				lines[i] = mermaidText(l)
			}
			label += "<br/>when " + strings.Join(lines, "<br/>")
		}
		open, close := "[", "]"
		if s.Always {
			open, close = "[[", "]]"
		}
		fmt.Fprintf(&b, "  s%d%s\"%s\"%s\n", s.Index, open, label, close)
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

// mermaidText escapes s for a quoted Mermaid label with Mermaid's entity
// codes (#quot; #lt; #gt; #amp; #35;), so a condition is shown as written;
// control characters become spaces.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"':
			b.WriteString("#quot;")
		case r == '<':
			b.WriteString("#lt;")
		case r == '>':
			b.WriteString("#gt;")
		case r == '&':
			b.WriteString("#amp;")
		case r == '#':
			b.WriteString("#35;")
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
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
