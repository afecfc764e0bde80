package graph

import (
	"bytes"
	"runtime"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"piship.dev/piship/graph/diag"
)

// splitThreshold is the file size above which parseConfig parses stage
// blocks in parallel. The HCL parser handles about 2.5 MB/s here, so a
// 10,000-stage file spends most of its validation time in the lexer.
var splitThreshold = 128 << 10

// parseConfig parses src like diag.ParseConfig (hclsyntax.ParseConfig
// behind the nesting bound). For large files it
// cuts out the stage blocks (found by a conservative scan that understands
// strings, templates, heredocs and comments), parses them in parallel with
// their true start positions, and parses the rest with the stage blocks
// blanked, so every range is exactly what a single parse would give. Any
// surprise (a split it cannot prove safe, or any error) falls back to the
// single parse, which also produces the diagnostics.
func parseConfig(src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	// The nesting bound first, once for the whole file: every part parsed
	// below nests no deeper than the file.
	if diags := diag.CheckNesting(src, filename, hcl.InitialPos); diags.HasErrors() {
		return &hcl.File{Body: hcl.EmptyBody(), Bytes: src}, diags
	}
	workers := runtime.GOMAXPROCS(0)
	if len(src) < splitThreshold || workers < 2 {
		return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	spans, ok := scanStageSpans(src)
	if !ok || len(spans) < 2*workers {
		return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	}
	if f, ok := parseSplit(src, filename, spans, workers); ok {
		return f, nil
	}
	return hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
}

// span is a stage block: from the start of its first line to just after
// its closing brace.
type span struct{ start, end int }

func parseSplit(src []byte, filename string, spans []span, workers int) (*hcl.File, bool) {
	// The skeleton is the file with every stage block blanked (newlines
	// kept, so lines and byte offsets do not move).
	skeleton := bytes.Clone(src)
	for _, s := range spans {
		blank(skeleton[s.start:s.end])
	}
	per := (len(spans) + workers - 1) / workers
	type chunk struct {
		blocks hclsyntax.Blocks
		ok     bool
	}
	chunks := make([]chunk, 0, workers)
	for lo := 0; lo < len(spans); lo += per {
		chunks = append(chunks, chunk{})
	}
	var skel *hcl.File
	var skelOK bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f, diags := hclsyntax.ParseConfig(skeleton, filename, hcl.InitialPos)
		skel, skelOK = f, !diags.HasErrors()
	}()
	for ci, lo := 0, 0; lo < len(spans); ci, lo = ci+1, lo+per {
		hi := min(lo+per, len(spans))
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, last := spans[lo], spans[hi-1]
			text := bytes.Clone(src[first.start:last.end])
			// Blank what lies between this chunk's stage blocks: it
			// belongs to the skeleton.
			for i := lo; i+1 < hi; i++ {
				blank(text[spans[i].end-first.start : spans[i+1].start-first.start])
			}
			f, diags := hclsyntax.ParseConfig(text, filename, posAt(src, first.start))
			if diags.HasErrors() {
				return
			}
			body := f.Body.(*hclsyntax.Body)
			if len(body.Attributes) != 0 || len(body.Blocks) != hi-lo {
				return
			}
			chunks[ci] = chunk{blocks: body.Blocks, ok: true}
		}()
	}
	wg.Wait()
	if !skelOK {
		return nil, false
	}
	var stagesAll hclsyntax.Blocks
	for _, c := range chunks {
		if !c.ok {
			return nil, false
		}
		stagesAll = append(stagesAll, c.blocks...)
	}
	// Put each stage block into the pipeline block that encloses it.
	root := skel.Body.(*hclsyntax.Body)
	for _, b := range stagesAll {
		if b.Type != "stage" {
			return nil, false
		}
		var parent *hclsyntax.Block
		for _, p := range root.Blocks {
			r := p.Body.SrcRange
			if r.Start.Byte < b.Range().Start.Byte && b.Range().End.Byte <= r.End.Byte {
				parent = p
				break
			}
		}
		if parent == nil {
			return nil, false
		}
		parent.Body.Blocks = append(parent.Body.Blocks, b)
	}
	for _, p := range root.Blocks {
		sort.SliceStable(p.Body.Blocks, func(i, j int) bool {
			return p.Body.Blocks[i].Range().Start.Byte < p.Body.Blocks[j].Range().Start.Byte
		})
	}
	skel.Bytes = src
	return skel, true
}

// blank replaces every byte but newlines with a space.
func blank(b []byte) {
	for i, c := range b {
		if c != '\n' {
			b[i] = ' '
		}
	}
}

// posAt returns the position of offset off, which must be a line start.
func posAt(src []byte, off int) hcl.Pos {
	return hcl.Pos{Line: bytes.Count(src[:off], []byte{'\n'}) + 1, Column: 1, Byte: off}
}

// scanStageSpans finds the `stage` blocks directly inside top-level blocks.
// It accepts only the plain layout: a block starting a line (after
// indentation) and whose closing brace is followed by nothing but spaces or
// a line comment. ok is false when the file has anything it does not fully
// understand, and the caller parses the usual way.
func scanStageSpans(src []byte) (spans []span, ok bool) {
	type frame struct {
		str   bool // inside a quoted string (template)
		depth int  // brace depth inside an expression frame
	}
	stack := []frame{{}}
	lineStart := 0
	cur := -1 // start of the stage block being scanned, or -1
	n := len(src)
	for i := 0; i < n; i++ {
		c := src[i]
		top := &stack[len(stack)-1]
		if top.str {
			switch {
			case c == '\\':
				i++
			case c == '"':
				stack = stack[:len(stack)-1]
			case c == '\n':
				return nil, false // quoted strings do not span lines
			case (c == '$' || c == '%') && i+1 < n && src[i+1] == '{':
				if i > 0 && src[i-1] == c { // $${ and %%{ are literal
					i++
					continue
				}
				stack = append(stack, frame{})
				i++
			}
			continue
		}
		switch c {
		case '\n':
			lineStart = i + 1
		case '"':
			stack = append(stack, frame{str: true})
		case '#':
			i = skipLine(src, i)
			lineStart = i + 1
		case '/':
			if i+1 < n && src[i+1] == '/' {
				i = skipLine(src, i)
				lineStart = i + 1
			} else if i+1 < n && src[i+1] == '*' {
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil, false
				}
				if bytes.IndexByte(src[i:i+2+end], '\n') >= 0 {
					return nil, false // keep line tracking simple
				}
				i += end + 3
			}
		case '<':
			if i+1 < n && src[i+1] == '<' {
				return nil, false // heredocs: leave them to the real parser
			}
		case '{':
			top.depth++
			if len(stack) == 1 && top.depth == 2 && cur < 0 && startsStage(src[lineStart:i]) {
				cur = lineStart
			}
		case '}':
			if top.depth == 0 {
				if len(stack) == 1 {
					return nil, false
				}
				stack = stack[:len(stack)-1] // end of a template interpolation
				continue
			}
			top.depth--
			if len(stack) == 1 && top.depth == 1 && cur >= 0 {
				if !restIsBlank(src[i+1:]) {
					return nil, false
				}
				spans = append(spans, span{start: cur, end: i + 1})
				cur = -1
			}
		}
	}
	if len(stack) != 1 || stack[0].depth != 0 || cur >= 0 {
		return nil, false
	}
	return spans, true
}

func skipLine(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src) - 1
}

// startsStage reports whether a line prefix is `stage "<kind>" "<name>"`
// (with indentation and no other content).
func startsStage(prefix []byte) bool {
	p := bytes.TrimLeft(prefix, " \t")
	if !bytes.HasPrefix(p, []byte("stage")) {
		return false
	}
	fields := bytes.Fields(p[len("stage"):])
	if len(fields) != 2 {
		return false
	}
	for _, f := range fields {
		if len(f) < 2 || f[0] != '"' || f[len(f)-1] != '"' || bytes.ContainsAny(f[1:len(f)-1], "\"\\$%") {
			return false
		}
	}
	return true
}

// restIsBlank reports whether the rest of the line holds only spaces or a
// comment.
func restIsBlank(rest []byte) bool {
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	rest = bytes.TrimLeft(rest, " \t\r")
	return len(rest) == 0 || rest[0] == '#' || bytes.HasPrefix(rest, []byte("//"))
}
