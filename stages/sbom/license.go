package sbom

import (
	"fmt"
	"slices"
	"strings"
)

const noAssertion = "NOASSERTION"

// licenses maps the declared licenses of a package set to SPDX values.
type licenses struct {
	refs map[string]string // text as written -> LicenseRef-...
	// extracted lists the LicenseRefs in order of their text.
	extracted []extractedLicense
}

type extractedLicense struct {
	ID   string `json:"licenseId"`
	Text string `json:"extractedText"`
	Name string `json:"name"`
}

// newLicenses assigns a LicenseRef to each declared text that is not an
// SPDX expression, in sorted order of the texts so the IDs are stable.
func newLicenses(pkgs []*pkg) *licenses {
	l := &licenses{refs: map[string]string{}}
	var texts []string
	for _, p := range pkgs {
		if p.license != "" && !validExpression(p.license) {
			if _, ok := l.refs[p.license]; !ok {
				l.refs[p.license] = ""
				texts = append(texts, p.license)
			}
		}
	}
	slices.Sort(texts)
	used := map[string]bool{}
	for _, t := range texts {
		base := "LicenseRef-" + refPart(t)
		id := base
		for n := 2; used[id]; n++ {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		used[id] = true
		l.refs[t] = id
		l.extracted = append(l.extracted, extractedLicense{ID: id, Text: t, Name: t})
	}
	return l
}

// declared is the licenseDeclared value of a declared license text.
func (l *licenses) declared(text string) string {
	if text == "" {
		return noAssertion
	}
	if id := l.refs[text]; id != "" {
		return id
	}
	return text
}

// refPart makes an SPDX idstring of a text: runs of characters outside
// [A-Za-z0-9.-] become one "-", at most 64 characters.
func refPart(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' {
			b.WriteByte(c)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 64 {
		out = strings.TrimRight(out[:64], "-")
	}
	if out == "" {
		out = "unnamed"
	}
	return out
}

// validExpression says whether s looks like an SPDX license expression
// written with listed IDs only: IDs (optionally with "+"), AND, OR, WITH
// and balanced parentheses, in a well-formed order. NONE and NOASSERTION
// alone are valid values too. LicenseRef and DocumentRef IDs, and npm's
// UNLICENSED, are not: the document defines what it references.
func validExpression(s string) bool {
	if s == "NONE" || s == noAssertion {
		return true
	}
	toks := strings.Fields(strings.NewReplacer("(", " ( ", ")", " ) ").Replace(s))
	if len(toks) == 0 {
		return false
	}
	depth := 0
	// want: true when the next token must be an operand (an ID or "(").
	want := true
	afterWith := false
	for _, t := range toks {
		switch t {
		case "(":
			if !want || afterWith {
				return false
			}
			depth++
		case ")":
			if want {
				return false
			}
			if depth--; depth < 0 {
				return false
			}
		case "AND", "OR", "WITH":
			if want {
				return false
			}
			want = true
			afterWith = t == "WITH"
			continue
		default:
			if !want || !licenseID(t, afterWith) {
				return false
			}
			want = false
		}
		afterWith = false
	}
	return depth == 0 && !want
}

func licenseID(t string, exception bool) bool {
	if !exception {
		t = strings.TrimSuffix(t, "+")
	}
	if t == "" || strings.EqualFold(t, "UNLICENSED") || strings.HasPrefix(t, "LicenseRef-") || strings.HasPrefix(t, "DocumentRef-") ||
		t == "NONE" || t == noAssertion {
		return false
	}
	for _, c := range []byte(t) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
