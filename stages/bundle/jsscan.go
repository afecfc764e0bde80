package bundle

import (
	"strconv"
	"strings"
)

// jsScan is what a light tokenizer learns from one JavaScript module: how it
// locates itself, which module names it passes to run-time loaders, and where
// it calls import() with a computed specifier.
//
// The tokenizer skips comments, strings, template literals and regular
// expression literals (a "/" starts a regular expression unless it follows a
// value), so words inside them are not mistaken for code. It does not build a
// syntax tree: what it reports are hints for the heuristics in doc.go. A
// wrong hint mostly costs a kept file or a shim; the only code it leads to
// changing is a computed import() call.
type jsScan struct {
	metaURL      bool // import.meta.url
	metaDirname  bool // import.meta.dirname
	metaFilename bool // import.meta.filename
	metaResolve  bool // import.meta.resolve
	dirname      bool // __dirname
	filename     bool // __filename

	// dynImports are byte offsets of "import" keywords that start an
	// import(...) call whose argument is not a string or template literal.
	dynImports []int
	// computedRequire is set when require(...) is called with an argument
	// that is not a string or template literal.
	computedRequire bool
	// relLiterals are string literals that look like relative module paths
	// ("./x.js", "../y"), wherever they appear; a module with a computed
	// import() may pass any of them to it.
	relLiterals []string
	// calls are calls whose callee names a loader (require, import or
	// resolve in its name) with the string-literal arguments they pass.
	// A call of a loader's result, createRequire(import.meta.url)("./x.js"),
	// has the callee "createRequire()".
	calls []jsCall
	// staticImports are the specifiers of import and export declarations
	// (`import x from "a"`, `import "a"`, `export * from "a"`).
	staticImports []string
}

// jsCall is one call to a loader-like function with string-literal arguments.
type jsCall struct {
	Callee string   // dotted callee, e.g. "require.resolve", "cjsRequire", "import"
	Args   []string // string-literal arguments, in order
}

type tokKind uint8

const (
	tkPunct tokKind = iota
	tkIdent
	tkString
	tkTemplate
	tkNumber
	tkRegexp
)

type token struct {
	kind tokKind
	text string
	pos  int
}

// callFrame is an open call's argument list.
type callFrame struct {
	callee    string
	loader    bool // callee is loader-like
	isImport  bool // import( ... ); importPos is the keyword's offset
	importPos int
	isRequire bool // plain require( ... )

	dynamic bool // the first argument is computed (not a string or template)

	argIndex  int
	argToks   int     // significant tokens in the current argument
	firstKind tokKind // kind of the first token of the first argument
	pending   string  // value of the literal that started the current argument
	literal   bool    // pending holds a decodable literal
	args      []string
}

// scanJS tokenizes src. It never fails: on text it cannot follow it
// resynchronises at the next line and keeps what it found.
func scanJS(src string) *jsScan {
	s := &jsScan{}
	n := len(src)
	i := 0
	if strings.HasPrefix(src, "#!") {
		for i < n && src[i] != '\n' {
			i++
		}
	}

	// hist holds the most recent significant tokens, hist[0] the latest.
	var hist [8]token
	have := 0
	push := func(t token) {
		copy(hist[1:], hist[:len(hist)-1])
		hist[0] = t
		have++
	}

	// templateStack holds, for each open "${", the brace depth at which the
	// substitution returns to template text.
	var templateStack []int
	braceDepth := 0
	var parens []*callFrame // nil for parentheses that are not calls

	regexAllowed := func() bool {
		if have == 0 {
			return true
		}
		t := hist[0]
		switch t.kind {
		case tkNumber, tkString, tkTemplate, tkRegexp:
			return false
		case tkIdent:
			switch t.text {
			case "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw",
				"case", "do", "else", "yield", "await":
				return true
			}
			return false
		default:
			return t.text != ")" && t.text != "]"
		}
	}

	// closed is the call whose ")" was the last token: it is a call unless
	// a "{" follows (then it was a method definition such as
	// `async import(x) {`).
	var closed *callFrame
	commit := func(f *callFrame) {
		if f.dynamic && f.isImport {
			s.dynImports = append(s.dynImports, f.importPos)
		}
		if f.dynamic && f.isRequire {
			s.computedRequire = true
		}
		if f.loader && len(f.args) > 0 {
			s.calls = append(s.calls, jsCall{Callee: f.callee, Args: f.args})
		}
	}

	// emit records a significant token and feeds the innermost open call.
	emit := func(kind tokKind, text, value string, ok bool, pos int) {
		if closed != nil {
			if !(kind == tkPunct && text == "{") {
				commit(closed)
			}
			closed = nil
		}
		if len(parens) > 0 {
			if f := parens[len(parens)-1]; f != nil && !(kind == tkPunct && (text == "," || text == ")")) {
				if f.argToks == 0 {
					if f.argIndex == 0 {
						f.firstKind = kind
					}
					if kind == tkString || kind == tkTemplate {
						f.pending, f.literal = value, ok
					}
				}
				f.argToks++
			}
		}
		push(token{kind, text, pos})
	}
	endArg := func(f *callFrame) {
		if f.argToks == 1 && f.literal {
			f.args = append(f.args, f.pending)
		}
		if f.argIndex == 0 && f.argToks > 0 && f.firstKind != tkString && f.firstKind != tkTemplate {
			f.dynamic = true
		}
		f.argIndex++
		f.argToks, f.literal, f.pending = 0, false, ""
	}

	for i < n {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			i++
		case c == '/' && i+1 < n && src[i+1] == '/':
			for i < n && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < n && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				i = n
			} else {
				i += end + 4
			}
		case c == '"' || c == '\'':
			j, val, ok := scanString(src, i)
			if ok && have > 0 && hist[0].kind == tkIdent && (hist[0].text == "from" || hist[0].text == "import") && len(s.staticImports) < 10000 {
				s.staticImports = append(s.staticImports, val)
			}
			if ok && (strings.HasPrefix(val, "./") || strings.HasPrefix(val, "../")) && len(s.relLiterals) < 1000 {
				s.relLiterals = append(s.relLiterals, val)
			}
			emit(tkString, "\"", val, ok, i)
			i = j
		case c == '`':
			j, val, ok, open := scanTemplate(src, i+1)
			if open {
				templateStack = append(templateStack, braceDepth)
				braceDepth++
				ok = false
			}
			emit(tkTemplate, "`", val, ok, i)
			i = j
		case c == '}' && len(templateStack) > 0 && braceDepth-1 == templateStack[len(templateStack)-1]:
			// end of a substitution: back to template text
			templateStack = templateStack[:len(templateStack)-1]
			braceDepth--
			j, _, _, open := scanTemplate(src, i+1)
			if open {
				templateStack = append(templateStack, braceDepth)
				braceDepth++
			}
			i = j
			push(token{tkTemplate, "`", i})
		case c == '/' && regexAllowed():
			j := scanRegexp(src, i)
			emit(tkRegexp, "/", "", false, i)
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentPart(src[j]) {
				j++
			}
			word := src[i:j]
			afterDot := have > 0 && hist[0].kind == tkPunct && hist[0].text == "."
			if afterDot && have >= 4 && hist[1].text == "meta" && hist[2].text == "." && hist[3].text == "import" {
				switch word {
				case "url":
					s.metaURL = true
				case "dirname":
					s.metaDirname = true
				case "filename":
					s.metaFilename = true
				case "resolve":
					s.metaResolve = true
				}
			}
			if !afterDot {
				switch word {
				case "__dirname":
					s.dirname = true
				case "__filename":
					s.filename = true
				}
			}
			emit(tkIdent, word, "", false, i)
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < n && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i + 1
			for j < n && (isIdentPart(src[j]) || src[j] == '.') {
				j++
			}
			emit(tkNumber, src[i:j], "", false, i)
			i = j
		default:
			p := string(c)
			switch c {
			case '(':
				var f *callFrame
				if have > 0 && hist[0].kind == tkIdent {
					if callee := calleeChain(hist[:], have); callee != "" && !isKeywordNotCallee(callee) {
						f = &callFrame{callee: callee}
						lc := strings.ToLower(callee)
						f.loader = strings.Contains(lc, "require") || strings.Contains(lc, "import") || strings.Contains(lc, "resolve")
						switch callee {
						case "import":
							f.isImport, f.importPos = true, hist[0].pos
						case "require":
							f.isRequire = true
						}
					}
				}
				if f == nil && closed != nil && closed.loader && have > 0 && hist[0].text == ")" {
					// createRequire(import.meta.url)("./x.js"): the result
					// of a loader-like call, called.
					f = &callFrame{callee: closed.callee + "()", loader: true}
				}
				emit(tkPunct, p, "", false, i)
				parens = append(parens, f)
			case ')':
				var f *callFrame
				if len(parens) > 0 {
					f = parens[len(parens)-1]
					parens = parens[:len(parens)-1]
					if f != nil {
						endArg(f)
					}
				}
				emit(tkPunct, p, "", false, i)
				closed = f
			case ',':
				if len(parens) > 0 {
					if f := parens[len(parens)-1]; f != nil {
						endArg(f)
					}
				}
				emit(tkPunct, p, "", false, i)
			case '{':
				braceDepth++
				emit(tkPunct, p, "", false, i)
			case '}':
				if braceDepth > 0 {
					braceDepth--
				}
				emit(tkPunct, p, "", false, i)
			default:
				switch {
				case c == '=' && i+1 < n && src[i+1] == '>':
					p = "=>"
					i++
				case c == '.' && i+2 < n && src[i+1] == '.' && src[i+2] == '.':
					p = "..."
					i += 2
				case c == '?' && i+1 < n && src[i+1] == '.' && !(i+2 < n && src[i+2] >= '0' && src[i+2] <= '9'):
					p = "." // optional chaining: a member access for our purposes
					i++
				}
				emit(tkPunct, p, "", false, i)
			}
			i++
		}
	}
	if closed != nil {
		commit(closed)
	}
	return s
}

// calleeChain returns the dotted identifier chain ending at hist[0], such as
// "require.resolve" or "import.meta.resolve". A chain that is itself the
// property of a computed value (e.g. `f().require(`) is returned from the
// last identifier on.
func calleeChain(hist []token, have int) string {
	if have > len(hist) {
		have = len(hist)
	}
	parts := []string{hist[0].text}
	k := 1
	for k+1 < have && hist[k].kind == tkPunct && hist[k].text == "." && hist[k+1].kind == tkIdent {
		parts = append(parts, hist[k+1].text)
		k += 2
	}
	// reverse
	for a, b := 0, len(parts)-1; a < b; a, b = a+1, b-1 {
		parts[a], parts[b] = parts[b], parts[a]
	}
	return strings.Join(parts, ".")
}

func isKeywordNotCallee(w string) bool {
	switch w {
	case "if", "for", "while", "switch", "catch", "with", "return", "typeof", "function", "class",
		"new", "delete", "void", "throw", "case", "do", "else", "yield", "await", "in", "of", "instanceof":
		return true
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c == '#' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

// scanString scans a quoted string starting at src[i] and returns the offset
// after it and its value; ok is false when the value uses escapes this
// scanner does not decode (the token is still skipped correctly).
func scanString(src string, i int) (int, string, bool) {
	q := src[i]
	j := i + 1
	simple := true
	for j < len(src) {
		c := src[j]
		if c == '\\' {
			simple = false
			j += 2
			continue
		}
		if c == q {
			j++
			break
		}
		if c == '\n' {
			break // unterminated: resynchronise at the line end
		}
		j++
	}
	if j > len(src) {
		j = len(src)
	}
	raw := src[i:j]
	if simple {
		if len(raw) >= 2 && raw[len(raw)-1] == q {
			return j, raw[1 : len(raw)-1], true
		}
		return j, "", false
	}
	if q == '\'' {
		raw = `"` + strings.ReplaceAll(strings.ReplaceAll(raw[1:len(raw)-1], `"`, `\"`), `\'`, `'`) + `"`
	}
	v, err := strconv.Unquote(raw)
	if err != nil {
		return j, "", false
	}
	return j, v, true
}

// scanTemplate scans template text starting after "`" or after the "}" that
// closes a substitution. It returns the offset after the closing "`" (open
// false) or after "${" (open true); value and ok give the text of a template
// without substitutions or escapes.
func scanTemplate(src string, j int) (end int, value string, ok, open bool) {
	start := j
	plain := true
	for j < len(src) {
		c := src[j]
		if c == '\\' {
			plain = false
			j += 2
			continue
		}
		if c == '`' {
			return j + 1, src[start:j], plain, false
		}
		if c == '$' && j+1 < len(src) && src[j+1] == '{' {
			return j + 2, "", false, true
		}
		j++
	}
	return len(src), "", false, false
}

// scanRegexp skips a regular expression literal starting at src[i] ("/").
func scanRegexp(src string, i int) int {
	j := i + 1
	inClass := false
	for j < len(src) {
		c := src[j]
		switch {
		case c == '\\':
			j += 2
			continue
		case c == '\n':
			return j // not a regexp after all; resynchronise
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '/':
			j++
			for j < len(src) && isIdentPart(src[j]) {
				j++
			}
			return j
		}
		j++
	}
	return j
}
