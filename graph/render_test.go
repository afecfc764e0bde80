package graph

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"piship.dev/piship/stages"
)

// dotToken is a quoted string (kind 'q', unescaped as Graphviz reads a
// label: \" \\ and \n), an HTML string (kind 'h', without its outer <>),
// or the edge operator (kind 'a').
type dotToken struct {
	kind byte
	text string
}

// scanDOT splits DOT into the tokens the tests look at, failing on a quoted
// string that is not closed or holds a raw line break, and on an HTML string
// whose < and > do not balance.
func scanDOT(t *testing.T, src string) []dotToken {
	t.Helper()
	var toks []dotToken
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				switch {
				case src[j] == '\n':
					t.Fatalf("raw line break in a quoted string at byte %d:\n%s", j, src)
				case src[j] == '\\' && j+1 < len(src):
					j++
					switch src[j] {
					case 'n':
						b.WriteByte('\n')
					case '"', '\\':
						b.WriteByte(src[j])
					default:
						t.Fatalf("escape \\%c at byte %d is not one WriteDOT writes", src[j], j)
					}
				default:
					b.WriteByte(src[j])
				}
			}
			if j == len(src) {
				t.Fatalf("quoted string at byte %d is not closed", i)
			}
			toks = append(toks, dotToken{'q', b.String()})
			i = j
		case src[i] == '<':
			depth, j := 0, i
			for ; j < len(src); j++ {
				if src[j] == '<' {
					depth++
				} else if src[j] == '>' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if j == len(src) {
				t.Fatalf("HTML string at byte %d is not closed", i)
			}
			toks = append(toks, dotToken{'h', src[i+1 : j]})
			i = j
		case strings.HasPrefix(src[i:], "->"):
			toks = append(toks, dotToken{'a', "->"})
			i++
		}
	}
	return toks
}

// dotDoc is what a DOT document says, as the tests read it.
type dotDoc struct {
	id     string
	labels map[string]string // node (or graph) id -> HTML label
	edges  []string          // "from -> to", in output order
	text   string            // the whole output
}

func readDOT(t *testing.T, src string) dotDoc {
	t.Helper()
	toks := scanDOT(t, src)
	d := dotDoc{labels: map[string]string{}, text: src}
	if len(toks) == 0 || toks[0].kind != 'q' {
		t.Fatalf("no graph id:\n%s", src)
	}
	d.id = toks[0].text
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].kind == 'q' && toks[i+1].kind == 'h' {
			d.labels[toks[i].text] = toks[i+1].text
		}
		if i+2 < len(toks) && toks[i].kind == 'q' && toks[i+1].kind == 'a' && toks[i+2].kind == 'q' {
			d.edges = append(d.edges, toks[i].text+" -> "+toks[i+2].text)
		}
	}
	return d
}

// htmlRows parses an HTML-like label strictly as XML (which fails on an
// unescaped <, > or & and on an unknown entity) and returns the text
// Graphviz draws: one row per <TR>, one cell per <TD> (a label without a
// table is one cell), <BR/> as a line break, \\ as a backslash. Any other
// backslash escape fails: Graphviz would replace \N, \G, \L ...
func htmlRows(t *testing.T, label string) [][]string {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader("<x>" + label + "</x>"))
	dec.Strict = true
	var rows [][]string
	table := strings.HasPrefix(label, "<TABLE")
	if !table {
		rows = [][]string{{""}}
	}
	inCell := !table
	cell := func() *string { r := rows[len(rows)-1]; return &r[len(r)-1] }
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("label is not well-formed: %v\n%s", err, label)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "TR":
				rows = append(rows, nil)
			case "TD":
				rows[len(rows)-1] = append(rows[len(rows)-1], "")
				inCell = true
			case "BR":
				*cell() += "\n"
			}
		case xml.EndElement:
			if tok.Name.Local == "TD" {
				inCell = false
			}
		case xml.CharData:
			if inCell {
				*cell() += string(tok)
			}
		}
	}
	for _, r := range rows {
		for i, c := range r {
			var b strings.Builder
			for j := 0; j < len(c); j++ {
				if c[j] == '\\' {
					if j+1 == len(c) || c[j+1] != '\\' {
						t.Fatalf("Graphviz reads an escape in %q of label:\n%s", c, label)
					}
					j++
				}
				b.WriteByte(c[j])
			}
			r[i] = b.String()
		}
	}
	return rows
}

// labelText is the text of a label without a table.
func labelText(t *testing.T, label string) string {
	t.Helper()
	return htmlRows(t, label)[0][0]
}

const hostileSrc = `pipeline "q\"b\\s<l>&a\nline 2" {
  description = "d \"x\" \\ <y> & z"
  input "x" { default = "a" }
  stage "exec" "first" { command = ["true"] }
  stage "exec" "odd" {
    command    = ["true"]
    depends_on = [stage.first]
    when       = input.x == "q\"b\\s<l>&a" || (
      input.x == "")
  }
}`

// The condition as written, one line per source line.
const hostileWhen = `when input.x == "q\"b\\s<l>&a" || (` + "\n" + `input.x == "")`

func hostileGraph(t *testing.T) *Graph {
	t.Helper()
	gs, diags := parse(t, hostileSrc)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return gs[0]
}

// Quotes, backslashes, <, >, & and line breaks in the pipeline's name, its
// description and a when condition reach the picture as written: the DOT
// quoted strings and HTML-like labels are escaped so a reader of the DOT
// language gets the original text back.
func TestDOTEscaping(t *testing.T) {
	var out bytes.Buffer
	if err := hostileGraph(t).WriteDOT(&out); err != nil {
		t.Fatal(err)
	}
	d := readDOT(t, out.String())
	name := "q\"b\\s<l>&a\nline 2"
	if d.id != name {
		t.Errorf("graph id reads back as %q, want %q", d.id, name)
	}
	if got, want := labelText(t, d.labels[name]), name+"\nd \"x\" \\ <y> & z"; got != want {
		t.Errorf("title reads %q, want %q", got, want)
	}
	if got, want := labelText(t, d.labels["odd"]), "odd\nexec\n"+hostileWhen; got != want {
		t.Errorf("node odd reads %q, want %q", got, want)
	}
	for id, l := range d.labels {
		htmlRows(t, l) // every label is well-formed
		if strings.Contains(l, `\n`) {
			t.Errorf("label of %q holds a literal \\n, which Graphviz would draw: %s", id, l)
		}
	}
	if strings.Join(d.edges, ";") != "first -> odd" {
		t.Errorf("edges %v", d.edges)
	}
}

func TestMermaidEscaping(t *testing.T) {
	var out bytes.Buffer
	if err := hostileGraph(t).WriteMermaid(&out); err != nil {
		t.Fatal(err)
	}
	want := `  s1["exec odd<br/>when input.x == #quot;q\#quot;b\\s#lt;l#gt;#amp;a#quot; || (<br/>input.x == #quot;#quot;)"]` + "\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("mermaid:\n%s\nwant the line:\n%s", out.String(), want)
	}
}

// The legend says what the edge styles and node marks mean; the table row
// only where a source stage is drawn as one.
func TestDOTLegend(t *testing.T) {
	var out bytes.Buffer
	if err := hostileGraph(t).WriteDOT(&out); err != nil {
		t.Fatal(err)
	}
	rows := htmlRows(t, readDOT(t, out.String()).labels["legend:"])
	var got []string
	for _, r := range rows {
		got = append(got, strings.ReplaceAll(r[len(r)-1], "\n", " "))
	}
	want := []string{
		"legend",
		"data edge: the stage reads stage.<name>.<output>",
		"ordering edge: depends_on, no data",
		"verdict N: the N-th entry of verdicts; a failed run names the first failing stage in verdict order: the verdicts, then every other stage in declaration order",
		"always: runs even after a failure or Ctrl-C (double border)",
		"when: skipped if the condition is false; its dependents still run",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("legend rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func releaseGraph(t *testing.T) *Graph {
	t.Helper()
	p := filepath.Join("..", "pipelines", "release.hcl")
	src, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	gs, _, diags := ParseWith(src, p, t.TempDir(), Options{Kinds: stages.Default(), Builtin: builtinFromDisk})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return gs[0]
}

// builtinFromDisk reads the built-in modules from pipelines/modules (graph
// does not link pipelines, which embeds them).
func builtinFromDisk(name string) ([]ModuleFile, bool) {
	p := filepath.Join("..", "pipelines", "modules", name+".hcl")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	return []ModuleFile{{Name: p, Src: b}}, true
}

// The release pipeline's inputs stage feeds every stage of each target's
// release (through the target module's each.value). It is drawn as a
// table of its outputs, each with its readers, and an edge from it goes only
// to a stage no other path from it reaches; every other edge is drawn, the
// verdict order and the when conditions are on the nodes.
func TestReleaseGraphIsReadable(t *testing.T) {
	g := releaseGraph(t)
	var out bytes.Buffer
	if err := g.WriteDOT(&out); err != nil {
		t.Fatal(err)
	}
	d := readDOT(t, out.String())

	var fromInputs, others, wantOthers []string
	for _, e := range d.edges {
		if strings.HasPrefix(e, "inputs -> ") {
			fromInputs = append(fromInputs, strings.TrimPrefix(e, "inputs -> "))
		} else {
			others = append(others, e)
		}
	}
	if got, want := strings.Join(fromInputs, ","), "module.target.module.qualify.stage.runtime_entry,module.target.module.qualify.stage.audit,module.target.module.qualify.stage.package_audits,module.target.module.qualify.stage.signatures"; got != want {
		t.Errorf("edges from inputs to %s, want %s", got, want)
	}
	for _, s := range g.Stages {
		for _, dep := range s.DepStages {
			if dep.Name != "inputs" {
				wantOthers = append(wantOthers, dep.Name+" -> "+s.Name)
			}
		}
	}
	sort.Strings(others)
	sort.Strings(wantOthers)
	if strings.Join(others, "\n") != strings.Join(wantOthers, "\n") {
		t.Errorf("edges not from inputs:\n%s\nwant every dependency drawn:\n%s", strings.Join(others, "\n"), strings.Join(wantOthers, "\n"))
	}

	// The table: a header, a column header, then output -> readers.
	rows := htmlRows(t, d.labels["inputs"])
	if len(rows) < 3 || !strings.HasPrefix(rows[0][0], "inputs\nrelease_inputs") {
		t.Fatalf("inputs is not drawn as a table: %q", rows)
	}
	table := map[string]string{}
	for _, r := range rows[2:] {
		table[r[0]] = strings.ReplaceAll(r[1], ",\n", ", ")
	}
	want := map[string][]string{}
	for _, s := range g.Stages {
		for _, e := range s.Deps {
			if e.From.Name == "inputs" {
				if rs := want[e.Output]; len(rs) == 0 || rs[len(rs)-1] != s.Name {
					want[e.Output] = append(rs, s.Name)
				}
			}
		}
	}
	if len(table) != len(want) {
		t.Errorf("table has %d outputs, %d are read: %q", len(table), len(want), table)
	}
	for o, rs := range want {
		if table[o] != strings.Join(rs, ", ") {
			t.Errorf("output %s read by %q in the table, want %q", o, table[o], strings.Join(rs, ", "))
		}
	}
	// Each target's stages read one target's object (each.value of the
	// target module's for_each); the release set reads the rest.
	if table["releases"] != "set" || !strings.HasPrefix(table["targets"], "module.target.module.qualify.stage.runtime_entry, module.target.module.qualify.stage.audit, ") {
		t.Errorf("releases readers %q, targets readers %q", table["releases"], table["targets"])
	}

	for name, want := range map[string]string{
		"module.target.module.qualify.stage.signatures": "signatures\nsignatures\nverdict 1",
		"module.target.module.qualify.stage.tests":      "tests\nsmoke\nverdict 2",
		"module.target.module.qualify.stage.audit":      "audit\naudit\nverdict 3",
		"module.target.module.qualify.stage.sbom":       "sbom\nsbom",
		"module.target.module.payload.stage.strip":      "strip\nstrip\nwhen input.reuse == \"none\" && !input.inputs.bundle_cached && input.inputs.strip",
		"module.target.module.publish.stage.cleanup":    "cleanup\nstaging_cleanup\nalways",
	} {
		if got := labelText(t, d.labels[name]); got != want {
			t.Errorf("node %s reads %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(out.String(), `"module.target.module.publish.stage.cleanup" [label=<`) || !strings.Contains(out.String(), "peripheries=2];\n") {
		t.Error("the always stage has no double border")
	}
	legend := htmlRows(t, d.labels["legend:"])
	if last := legend[len(legend)-1]; !strings.HasPrefix(last[len(last)-1], "a source stage: ") {
		t.Errorf("legend does not explain the table: %q", last)
	}
}

// With Graphviz installed, dot reads both pictures without a warning and
// draws the text as written: no literal \n, the condition with its quotes,
// backslashes, <, > and &.
func TestDOTRendersWithGraphviz(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Log("not-applicable: Graphviz `dot` is not on PATH (apt-get install graphviz); TestDOTEscaping and TestReleaseGraphIsReadable check the DOT structurally")
		return
	}
	for _, tc := range []struct {
		name string
		g    *Graph
		want []string
	}{
		{"hostile", hostileGraph(t), []string{`q"b\s<l>&a`, "line 2", `when input.x == "q\"b\\s<l>&a" || (`, `input.x == "")`}},
		{"release", releaseGraph(t), []string{"release", "verdict 1", "verdict 4", "module.payload", "builtin:payload", `when input.reuse == "none" && !input.inputs.bundle_cached && input.inputs.strip`, "legend"}},
	} {
		var src bytes.Buffer
		if err := tc.g.WriteDOT(&src); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = &src
		var svg, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &svg, &stderr
		if err := cmd.Run(); err != nil || stderr.Len() > 0 {
			t.Fatalf("%s: dot -Tsvg: %v\n%s", tc.name, err, stderr.String())
		}
		texts := map[string]bool{}
		dec := xml.NewDecoder(&svg)
		dec.Strict = false
		inText := false
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				inText = tok.Name.Local == "text"
			case xml.EndElement:
				inText = false
			case xml.CharData:
				if inText {
					texts[string(tok)] = true
				}
			}
		}
		for _, w := range tc.want {
			if !texts[w] {
				t.Errorf("%s: the SVG has no text %q", tc.name, w)
			}
		}
		if tc.name == "release" {
			for s := range texts {
				if strings.Contains(s, `\n`) {
					t.Errorf("release: the SVG draws a literal \\n in %q", s)
				}
			}
		}
	}
}
