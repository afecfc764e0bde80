package diag

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"piship.dev/piship/stages/stage/errcode"
)

// MaxNesting is how deeply an HCL file or expression may nest before it
// is parsed. hcl's parser recurses once per level, so `x = ((((...))))`
// 100,000 deep overflows the Go stack (a fatal error, not a diagnostic);
// a hand-written file nests a handful of levels.
const MaxNesting = 256

// ParseConfig is hclsyntax.ParseConfig behind the nesting bound
// (CheckNesting): every command that reads an HCL file (validate, run,
// graph, fmt, lock, build and release through distribution.hcl) parses it
// here.
func ParseConfig(src []byte, filename string, start hcl.Pos) (*hcl.File, hcl.Diagnostics) {
	if diags := CheckNesting(src, filename, start); diags.HasErrors() {
		return &hcl.File{Body: hcl.EmptyBody(), Bytes: src}, diags
	}
	return hclsyntax.ParseConfig(src, filename, start)
}

// ParseExpression is hclsyntax.ParseExpression behind the nesting bound
// (a --input value is parsed here).
func ParseExpression(src []byte, filename string, start hcl.Pos) (hclsyntax.Expression, hcl.Diagnostics) {
	if diags := CheckNesting(src, filename, start); diags.HasErrors() {
		return nil, diags
	}
	return hclsyntax.ParseExpression(src, filename, start)
}

// CheckNesting refuses src (CONFIG_INVALID, one error diagnostic at the
// first byte beyond the bound) when anything in it nests more than
// MaxNesting levels, counted the way the parser recurses: brackets ((),
// [], {}), quoted strings, heredocs and their ${ } and %{ } templates
// each open a level, so does each %{ if } or %{ for } until its end, and
// within one level each unary - or !, each ? of a
// conditional and each splat ([*], .*) adds one until the next , (or the
// next line, in a block or an object). It is one pass over the bytes that
// skips comments and the text of strings and heredocs; what it cannot
// make sense of it leaves to the parser, which reports it.
func CheckNesting(src []byte, filename string, start hcl.Pos) hcl.Diagnostics {
	type frame struct {
		kind  byte   // 0 top level; ( [ { brackets; $ a template interpolation or directive; " a quoted string; h a heredoc
		chain int    // unary operators, conditionals and splats since the last separator
		end   []byte // a heredoc's closing marker
	}
	stack := []frame{{}}
	total := 0 // levels open: the frames beyond the top level plus every chain
	prev := 0  // the last significant byte of an expression, 0 at a start
	n := len(src)
	over := func(i int) hcl.Diagnostics {
		r := rangeAt(src, filename, start, i)
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  errcode.ConfigInvalid + ": nesting too deep",
			Detail: fmt.Sprintf("%s nests more than %d levels deep here (brackets, strings and templates, unary operators, conditionals and splats each count): "+
				"piship refuses it before parsing, as the parser would exhaust the stack; flatten the expression, e.g. into locals.", filename, MaxNesting),
			Subject: &r,
		}}
	}
	push := func(k byte) bool {
		stack = append(stack, frame{kind: k})
		total++
		return total <= MaxNesting
	}
	pop := func() {
		total -= 1 + stack[len(stack)-1].chain
		stack = stack[:len(stack)-1]
	}
	chain := func(f *frame) bool {
		f.chain++
		total++
		return total <= MaxNesting
	}
	reset := func() {
		top := &stack[len(stack)-1]
		total -= top.chain
		top.chain = 0
	}
	// template handles a $ or % in a string or heredoc: ${ and %{ open an
	// expression, $${ and %%{ are literal. It returns how many more bytes
	// it took.
	template := func(i int) (skip int, ok bool) {
		c := src[i]
		switch {
		case i+2 < n && src[i+1] == c && src[i+2] == '{':
			return 2, true
		case i+1 < n && src[i+1] == '{':
			if c == '%' {
				// %{ if } and %{ for } nest until their %{ endif } and
				// %{ endfor }: a level of the string or heredoc.
				f := &stack[len(stack)-1]
				switch directive(src[i+2:]) {
				case "if", "for":
					f.chain++
					total++
				case "endif", "endfor":
					if f.chain > 0 {
						f.chain--
						total--
					}
				}
			}
			prev = 0
			return 1, push('$')
		}
		return 0, true
	}
	lineStart := true // in a heredoc: at the start of a line
	for i := 0; i < n; i++ {
		c := src[i]
		top := &stack[len(stack)-1]
		switch top.kind {
		case '"':
			switch c {
			case '\\':
				i++
			case '"', '\n':
				pop() // a quoted string ends at its quote (a newline is the parser's error)
				prev = '"'
			case '$', '%':
				skip, ok := template(i)
				if !ok {
					return over(i)
				}
				i += skip
			}
			continue
		case 'h':
			if lineStart {
				j := i
				for j < n && (src[j] == ' ' || src[j] == '\t') {
					j++
				}
				if bytes.HasPrefix(src[j:], top.end) {
					k := j + len(top.end)
					if k == n || src[k] == '\n' || src[k] == '\r' {
						pop()
						prev = '"'
						i = k - 1
						lineStart = false
						continue
					}
				}
			}
			lineStart = c == '\n'
			if c == '$' || c == '%' {
				skip, ok := template(i)
				if !ok {
					return over(i)
				}
				i += skip
			}
			continue
		}
		// An expression (or the top level, or a block body).
		switch c {
		case ' ', '\t', '\r':
			continue
		case '#':
			i = lineEnd(src, i) - 1
			continue
		case '/':
			if i+1 < n && src[i+1] == '/' {
				i = lineEnd(src, i) - 1
				continue
			}
			if i+1 < n && src[i+1] == '*' {
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil // the parser reports the unterminated comment
				}
				i += end + 3
				continue
			}
		case '"':
			if !push('"') {
				return over(i)
			}
			continue
		case '<':
			if marker, body, ok := heredocStart(src, i); ok {
				if !push('h') {
					return over(i)
				}
				stack[len(stack)-1].end = marker
				i = body - 1
				lineStart = true
				continue
			}
		case '(', '[', '{':
			if !push(c) {
				return over(i)
			}
		case ')', ']':
			if top.kind == '(' || top.kind == '[' {
				pop()
			}
		case '}':
			switch top.kind {
			case '{':
				pop()
			case '$':
				pop()
				continue // back in the string or heredoc
			}
		case ',':
			reset()
		case '\n':
			if top.kind == 0 || top.kind == '{' {
				reset()
			}
		case '?':
			if !chain(top) {
				return over(i)
			}
		case '*':
			// A splat: [*] counts in the level around its brackets,
			// which close again at once.
			f := top
			if prev == '[' && top.kind == '[' {
				f = &stack[len(stack)-2]
			}
			if (prev == '[' || prev == '.') && !chain(f) {
				return over(i)
			}
		case '-', '!':
			if operandPosition(prev) && !chain(top) {
				return over(i)
			}
		}
		prev = int(c)
	}
	return nil
}

// directive is the keyword that starts a template directive's text.
func directive(b []byte) string {
	b = bytes.TrimLeft(b, "~ \t")
	k := 0
	for k < len(b) && b[k] >= 'a' && b[k] <= 'z' {
		k++
	}
	return string(b[:k])
}

// operandPosition reports whether a - or ! after the significant byte
// prev is a unary operator (and not a binary minus, != or part of a
// name like foo-bar).
func operandPosition(prev int) bool {
	switch prev {
	case 0, '\n', '=', '(', '[', '{', ',', ':', '?', '!', '-', '+', '*', '/', '%', '<', '>', '&', '|':
		return true
	}
	return false
}

// heredocStart recognizes <<MARKER or <<-MARKER and the end of its line:
// the marker and where the body starts.
func heredocStart(src []byte, i int) (marker []byte, body int, ok bool) {
	j := i + 2
	if j > len(src) || src[i+1] != '<' {
		return nil, 0, false
	}
	if j < len(src) && src[j] == '-' {
		j++
	}
	k := j
	for k < len(src) && (src[k] == '_' || src[k] == '-' || src[k] >= 'a' && src[k] <= 'z' || src[k] >= 'A' && src[k] <= 'Z' || src[k] >= '0' && src[k] <= '9') {
		k++
	}
	if k == j {
		return nil, 0, false
	}
	e := k
	if e < len(src) && src[e] == '\r' {
		e++
	}
	if e >= len(src) || src[e] != '\n' {
		return nil, 0, false
	}
	return src[j:k], e + 1, true
}

// lineEnd is the offset of the newline ending the line of i (or len(src)).
func lineEnd(src []byte, i int) int {
	if j := bytes.IndexByte(src[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(src)
}

// rangeAt is the one-byte range at offset i of src, which starts at start.
func rangeAt(src []byte, filename string, start hcl.Pos, i int) hcl.Range {
	line, col := start.Line, start.Column
	if nl := bytes.LastIndexByte(src[:i], '\n'); nl >= 0 {
		line += bytes.Count(src[:i], []byte{'\n'})
		col = i - nl
	} else {
		col += i
	}
	p := hcl.Pos{Line: line, Column: col, Byte: start.Byte + i}
	return hcl.Range{Filename: filename, Start: p, End: hcl.Pos{Line: line, Column: col + 1, Byte: p.Byte + 1}}
}
