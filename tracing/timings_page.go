package tracing

import (
	"bytes"
	_ "embed"
	"strconv"
	"strings"
)

// The timings page is written by hand rather than by html/template: any
// binary that can execute a text/template keeps every exported method of
// every type it links (the template calls them by name through
// reflection), and that was 2.6 MB of the end-user installer, which
// writes this page for --timings. Every value from the trace goes through
// escHTML; the rest is numbers and the page's own markup.

//go:embed timings.css
var timingsCSS string

// htmlEscaper escapes what html/template escaped in text, RCDATA (<title>)
// and quoted attribute values, so the page's bytes did not change with
// the renderer.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"'", "&#39;",
	"&", "&amp;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// pageWriter writes markup (raw), values from the trace (esc) and numbers
// (num) into one buffer.
type pageWriter struct{ bytes.Buffer }

func (w *pageWriter) raw(parts ...string) {
	for _, s := range parts {
		w.WriteString(s)
	}
}

func (w *pageWriter) esc(s string) { _, _ = htmlEscaper.WriteString(&w.Buffer, s) }

func (w *pageWriter) num(n int64) { w.WriteString(strconv.FormatInt(n, 10)) }

// attr writes ` name="value"` with value escaped.
func (w *pageWriter) attr(name, value string) {
	w.raw(" ", name, `="`)
	w.esc(value)
	w.raw(`"`)
}

// numAttr writes ` name="n"`.
func (w *pageWriter) numAttr(name string, n int) {
	w.raw(" ", name, `="`)
	w.num(int64(n))
	w.raw(`"`)
}

// line writes a <line> from (x1, y1) to (x2, y2).
func (w *pageWriter) line(x1, y1, x2, y2 int) {
	w.raw("<line")
	w.numAttr("x1", x1)
	w.numAttr("y1", y1)
	w.numAttr("x2", x2)
	w.numAttr("y2", y2)
	w.raw("></line>")
}

// rect opens a <rect> of class at (x, y), width by height; the caller
// adds its other attributes and closes it.
func (w *pageWriter) rect(class string, x, y, width, height int) {
	w.raw("<rect")
	w.attr("class", class)
	w.numAttr("x", x)
	w.numAttr("y", y)
	w.numAttr("width", width)
	w.numAttr("height", height)
}

// rawIf writes s when cond holds.
func (w *pageWriter) rawIf(cond bool, s string) {
	if cond {
		w.WriteString(s)
	}
}

// writeTimingsPage renders p: the header, the legend, the notes on stages
// that did not run and the critical path, the Gantt chart, the table and
// the timing lines.
func writeTimingsPage(w *pageWriter, p timingsPage) {
	w.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>piship timings: ")
	w.esc(p.Pipeline)
	w.raw(" (")
	w.esc(p.Total)
	w.raw(")</title>\n<style>\n", timingsCSS, "</style>\n</head>\n<body>\n<h1>piship timings: pipeline ")
	w.esc(p.Pipeline)
	w.raw("</h1>\n<p class=\"sub\" id=\"header\"")
	w.attr("data-pipeline", p.Pipeline)
	w.numAttr("data-stages", p.Stages)
	w.raw(">\n<b class=\"outcome-")
	w.esc(p.Outcome)
	w.raw(`">`)
	w.esc(p.Outcome)
	w.raw("</b> in <b>")
	w.esc(p.Total)
	w.raw("</b> &middot;\n")
	w.num(int64(p.Stages))
	w.raw(" stage runs, ")
	w.num(int64(p.Cached))
	w.raw(" served from cache")
	if p.FailedN != 0 {
		w.raw(`, <b class="outcome-failed">`)
		w.num(int64(p.FailedN))
		w.raw(" failed</b>")
	}
	w.raw(" &middot;\nstarted ")
	w.esc(p.Started)
	if p.Service != "" {
		w.raw(" &middot; ")
		w.esc(p.Service)
	}
	w.raw(" &middot; trace ")
	w.esc(p.TraceID)
	w.raw("\n</p>\n" + `<div class="legend">
<span><i class="sw ran"></i>ran</span>
<span><i class="sw cached"></i>cache hit</span>
<span><i class="sw failed"></i>failed</span>
<span><i class="sw skipped"></i>skipped or cancelled</span>
<span><i class="sw critical"></i>critical path</span>
<span>&middot; hover a row for its exact figures`)
	w.rawIf(p.HasPhases, "; lighter bands inside a bar are its phases")
	w.raw("</span>\n</div>\n")
	if len(p.NoSpan) > 0 {
		w.raw(`<p class="critpath note" id="nospan">`)
		w.num(int64(len(p.NoSpan)))
		w.raw(" of the pipeline's stages did not run (not started, or skipped): ")
		for i, n := range p.NoSpan {
			w.rawIf(i > 0, ", ")
			w.esc(n)
		}
		w.raw("</p>\n")
	}
	if p.NoDeps {
		w.raw(`<p class="critpath note">Critical path not marked: the pipeline's dependency edges are unknown (its file was not found; pass --pipeline FILE).</p>` + "\n")
	} else {
		w.raw(`<p class="critpath">Critical path (`)
		w.num(p.CriticalMs)
		w.raw(" ms of ")
		w.esc(p.Total)
		w.raw("): ")
		for i, n := range p.CriticalPath {
			w.rawIf(i > 0, " &rarr; ")
			w.raw("<code>")
			w.esc(n)
			w.raw("</code>")
		}
		w.raw("</p>\n")
	}
	writeChart(w, p)
	w.raw(`<table id="timing">
<thead><tr><th>stage (longest first), its phases below it</th><th>start ms</th><th>ms</th><th>cache</th><th>verdict</th><th>critical path</th></tr></thead>
<tbody>
`)
	for _, r := range p.Rows {
		w.raw(`<tr class="`)
		w.rawIf(r.Phase, "phase")
		w.rawIf(r.Critical, " critical")
		w.raw(`"><td>`)
		w.esc(r.Name)
		w.raw(`</td><td class="num">`)
		w.esc(r.Start)
		w.raw(`</td><td class="num">`)
		w.num(r.Ms)
		w.raw(`</td><td class="`)
		w.esc(r.Cache)
		w.raw(`">`)
		w.esc(r.Cache)
		w.raw(`</td><td class="`)
		w.esc(r.Verdict)
		w.raw(`">`)
		w.esc(r.Verdict)
		w.raw("</td><td>")
		w.rawIf(r.Critical, "yes")
		w.raw("</td></tr>\n")
	}
	w.raw("</tbody>\n</table>\n<details><summary>the timing lines as PISHIP_DEBUG_TIMING=1 prints them</summary>\n<pre>")
	w.esc(p.TimingText)
	w.raw("</pre>\n</details>\n</body>\n</html>\n")
}

// writeChart writes the Gantt chart: the axis and its ticks, the run's
// end, and one row per stage run with its bar, critical strip and phases.
func writeChart(w *pageWriter, p timingsPage) {
	c := p.Chart
	w.raw("\n<svg class=\"gantt\" viewBox=\"0 0 ")
	w.num(int64(c.Width))
	w.raw(" ")
	w.num(int64(c.Height))
	w.raw("\" role=\"img\" aria-label=\"stages by start and duration\">\n<g class=\"axis\">")
	for _, t := range c.Ticks {
		w.raw("\n<g class=\"tick\">")
		w.line(t.X, c.AxisY, t.X, c.Height)
		w.raw("<text")
		w.numAttr("x", t.X)
		w.numAttr("y", c.AxisY)
		w.raw(` text-anchor="middle" dy="-4">`)
		w.esc(t.Label)
		w.raw("</text></g>")
	}
	w.raw("\n</g>\n<g class=\"end\"><title>the run ended at ")
	w.esc(p.Total)
	w.raw("</title>")
	w.line(c.EndX, c.AxisY, c.EndX, c.Height)
	w.raw("<text")
	w.numAttr("x", c.EndX)
	w.numAttr("y", c.Height)
	w.raw(` dx="-4" dy="-4" text-anchor="end">run ended at `)
	w.esc(p.Total)
	w.raw("</text></g>\n")
	for _, b := range c.Bars {
		w.raw(`<g class="row`)
		w.rawIf(b.Critical, " critical")
		w.raw("\">\n<title>")
		w.esc(b.Title)
		w.raw("</title>\n")
		w.rect("band", 0, b.RowY, c.Width, c.RowH)
		w.raw("></rect>\n<text class=\"label\"")
		w.numAttr("x", c.LabelX)
		w.numAttr("y", b.TextY)
		w.raw(`><tspan class="kind">`)
		w.esc(b.Kind)
		w.raw("</tspan> ")
		w.esc(b.Label)
		w.raw("</text>\n")
		w.rect("bar "+b.Class, b.X, b.Y, b.W, chartBarH)
		w.attr("data-stage", b.Stage)
		w.attr("data-cache", b.Cache)
		w.attr("data-verdict", b.Verdict)
		w.attr("data-critical", strconv.FormatBool(b.Critical))
		w.raw("></rect>\n")
		if b.Critical {
			w.rect("crit", b.X, b.CritY, b.W, 3)
			w.raw("></rect>")
		}
		w.raw("\n")
		for _, ph := range b.Phases {
			class := "phase"
			if ph.Alt {
				class += " alt"
			}
			w.rect(class, ph.X, b.Y, ph.W, chartBarH)
			w.raw("><title>")
			w.esc(ph.Title)
			w.raw("</title></rect>")
		}
		w.raw("\n<text class=\"figure\"")
		w.numAttr("x", b.FigureX)
		w.numAttr("y", b.TextY)
		w.raw(">")
		w.esc(b.Figure)
		w.raw("</text>\n</g>\n")
	}
	w.raw("</svg>\n")
}
