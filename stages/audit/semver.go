package audit

import (
	"fmt"
	"strconv"
	"strings"

	"piship.dev/piship/stages/semver"
)

// npm's semantic versions and ranges, as node-semver reads them: versions
// ordered by SemVer 2.0 precedence, ranges with ||, space-separated
// comparator sets, <, <=, >, >=, =, ~, ~>, ^, x-ranges (1.x, 1.2.*, *) and
// hyphen ranges (1.2 - 2.3.4), each desugared to plain comparators exactly
// as node-semver's Range does.

// version is a parsed semantic version (semver.Version: build metadata
// dropped, it has no precedence).
type version = semver.Version

// parseVersion reads a version leniently, like node-semver's loose mode:
// leading "v", "=" and spaces, leading zeros, and a pre-release written
// without its "-" (1.2.3beta) are accepted.
func parseVersion(s string) (version, error) {
	p, err := parsePartial(s)
	if err != nil {
		return version{}, err
	}
	if p.x() {
		return version{}, fmt.Errorf("%q is not a full version (MAJOR.MINOR.PATCH)", s)
	}
	return p.version(), nil
}

// compareVersions orders by SemVer 2.0 precedence: -1, 0 or 1.
func compareVersions(a, b version) int { return semver.Compare(a, b) }

// partial is a version that may have x parts: "1", "1.2", "1.x", "*",
// "1.2.3-beta.1". An empty or x part is a wildcard.
type partial struct {
	major, minor, patch string
	pre                 []string
}

func isX(s string) bool { return s == "" || s == "x" || s == "X" || s == "*" }

func (p partial) xMajor() bool { return isX(p.major) }
func (p partial) xMinor() bool { return p.xMajor() || isX(p.minor) }
func (p partial) xPatch() bool { return p.xMinor() || isX(p.patch) }
func (p partial) x() bool      { return p.xPatch() }

func num(s string) uint64 {
	n, _ := strconv.ParseUint(s, 10, 64) // parsePartial checked the digits
	return n
}

// version returns p with its x parts as 0.
func (p partial) version() version {
	v := version{Pre: p.pre}
	if !isX(p.major) {
		v.Major = num(p.major)
	}
	if !p.xMinor() {
		v.Minor = num(p.minor)
	}
	if !p.xPatch() {
		v.Patch = num(p.patch)
	}
	return v
}

// parsePartial reads [v=\s]*MAJOR[.MINOR[.PATCH[[-]PRE][+BUILD]]] where
// each number may be x, X or *.
func parsePartial(s string) (partial, error) {
	orig := s
	s = strings.TrimLeft(strings.TrimSpace(s), "v= \t")
	bad := func(why string) (partial, error) {
		return partial{}, fmt.Errorf("%q is not a version: %s", orig, why)
	}
	if s == "" {
		return partial{}, nil // "" is *
	}
	var p partial
	parts := []*string{&p.major, &p.minor, &p.patch}
	i := 0
	for n, dst := range parts {
		j := i
		switch {
		case j < len(s) && (s[j] == 'x' || s[j] == 'X' || s[j] == '*'):
			j++
		default:
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
		}
		if j == i {
			return bad("expected a number or x")
		}
		*dst = s[i:j]
		if !isX(*dst) {
			if _, err := strconv.ParseUint(*dst, 10, 64); err != nil {
				return bad("number out of range")
			}
		}
		i = j
		if i == len(s) {
			return p, nil
		}
		if n < 2 {
			if s[i] != '.' {
				return bad(fmt.Sprintf("unexpected %q", s[i:]))
			}
			i++
		}
	}
	rest := s[i:]
	var build string
	if k := strings.IndexByte(rest, '+'); k >= 0 {
		rest, build = rest[:k], rest[k+1:]
		if !validIdents(build, true) {
			return bad("malformed build metadata")
		}
	}
	if rest != "" {
		if p.x() {
			return bad("a pre-release needs a full version")
		}
		if rest[0] == '-' {
			rest = rest[1:]
		} else if rest[0] == '.' {
			return bad(fmt.Sprintf("unexpected %q", rest))
		}
		if !validIdents(rest, false) {
			return bad("malformed pre-release")
		}
		p.pre = strings.Split(rest, ".")
	}
	return p, nil
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-].
func validIdents(s string, build bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for i := 0; i < len(id); i++ {
			c := id[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
				return false
			}
		}
	}
	return true
}

// comparator is op and a version; op "" matches any version.
type comparator struct {
	op string
	v  version
}

func (c comparator) any() bool { return c.op == "" }

func (c comparator) test(v version) bool {
	if c.any() {
		return true
	}
	x := compareVersions(v, c.v)
	switch c.op {
	case "<":
		return x < 0
	case "<=":
		return x <= 0
	case ">":
		return x > 0
	case ">=":
		return x >= 0
	}
	return x == 0
}

func (c comparator) String() string {
	if c.any() {
		return "*"
	}
	return c.op + c.v.String()
}

// semverRange is a parsed npm range: a version matches when it matches
// every comparator of at least one set.
type semverRange struct {
	sets [][]comparator
	// includePrerelease drops node-semver's rule that a pre-release only
	// matches a set naming a pre-release of the same MAJOR.MINOR.PATCH.
	includePrerelease bool
}

var nullSet = []comparator{{op: "<", v: version{Pre: []string{"0"}}}} // <0.0.0-0

// parseRange parses an npm range. includePrerelease is node-semver's
// option of the same name: npm audit sets it, so that a pre-release of a
// vulnerable version counts as vulnerable.
func parseRange(s string, includePrerelease bool) (*semverRange, error) {
	r := &semverRange{includePrerelease: includePrerelease}
	for _, part := range strings.Split(s, "||") {
		set, err := parseSet(strings.TrimSpace(part), includePrerelease)
		if err != nil {
			return nil, fmt.Errorf("range %q: %v", s, err)
		}
		r.sets = append(r.sets, set)
	}
	return r, nil
}

// test reports whether v is in the range.
func (r *semverRange) test(v version) bool {
	for _, set := range r.sets {
		if testSet(set, v, r.includePrerelease) {
			return true
		}
	}
	return false
}

func testSet(set []comparator, v version, includePrerelease bool) bool {
	for _, c := range set {
		if !c.test(v) {
			return false
		}
	}
	if len(v.Pre) == 0 || includePrerelease {
		return true
	}
	// A pre-release matches only a set that names a pre-release of the
	// same MAJOR.MINOR.PATCH: ^1.2.3-pr.1 admits 1.2.3-pr.2, not 1.2.4-rc.
	for _, c := range set {
		if !c.any() && len(c.v.Pre) > 0 && c.v.Major == v.Major && c.v.Minor == v.Minor && c.v.Patch == v.Patch {
			return true
		}
	}
	return false
}

var operators = []string{"~>", "~", "^", ">=", "<=", ">", "<", "="}

// parseSet parses one comparator set: a hyphen range or space-separated
// comparators (an operator may be separated from its version by spaces).
func parseSet(s string, incPr bool) ([]comparator, error) {
	fields := strings.Fields(s)
	if len(fields) == 3 && fields[1] == "-" {
		return hyphen(fields[0], fields[2], incPr)
	}
	var set []comparator
	for i := 0; i < len(fields); i++ {
		tok := fields[i]
		for _, op := range operators {
			if tok == op && i+1 < len(fields) {
				tok += fields[i+1]
				i++
				break
			}
		}
		cs, err := desugar(tok, incPr)
		if err != nil {
			return nil, err
		}
		set = append(set, cs...)
	}
	// Like node-semver: a null comparator makes the set null, and * is
	// dropped beside other comparators.
	var out []comparator
	for _, c := range set {
		if c.op == "<" && compareVersions(c.v, nullSet[0].v) == 0 {
			return nullSet, nil
		}
		if !c.any() {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return []comparator{{}}, nil
	}
	return out, nil
}

// desugar turns one comparator token into plain comparators.
func desugar(tok string, incPr bool) ([]comparator, error) {
	op := ""
	for _, o := range operators {
		if strings.HasPrefix(tok, o) {
			op, tok = o, tok[len(o):]
			break
		}
	}
	if op != "" && tok == "" {
		return nil, fmt.Errorf("%q has no version", op)
	}
	p, err := parsePartial(tok)
	if err != nil {
		return nil, err
	}
	M, m, pa := p.major, p.minor, p.patch
	ge := func(s string) comparator { return comp(">=", s) }
	lt := func(s string) comparator { return comp("<", s) }
	z := ""
	if incPr {
		z = "-0"
	}
	pre := ""
	if len(p.pre) > 0 {
		pre = "-" + strings.Join(p.pre, ".")
	}
	switch op {
	case "~", "~>":
		switch {
		case p.xMajor():
			return []comparator{{}}, nil
		case p.xMinor():
			return []comparator{ge(M + ".0.0"), lt(inc(M) + ".0.0-0")}, nil
		case p.xPatch():
			return []comparator{ge(M + "." + m + ".0"), lt(M + "." + inc(m) + ".0-0")}, nil
		}
		return []comparator{ge(M + "." + m + "." + pa + pre), lt(M + "." + inc(m) + ".0-0")}, nil
	case "^":
		switch {
		case p.xMajor():
			return []comparator{{}}, nil
		case p.xMinor():
			return []comparator{ge(M + ".0.0" + z), lt(inc(M) + ".0.0-0")}, nil
		case p.xPatch():
			if num(M) == 0 {
				return []comparator{ge(M + "." + m + ".0" + z), lt(M + "." + inc(m) + ".0-0")}, nil
			}
			return []comparator{ge(M + "." + m + ".0" + z), lt(inc(M) + ".0.0-0")}, nil
		}
		low := M + "." + m + "." + pa + pre
		if pre == "" {
			low += z
		}
		switch {
		case num(M) == 0 && num(m) == 0:
			return []comparator{ge(low), lt(M + "." + m + "." + inc(pa) + "-0")}, nil
		case num(M) == 0:
			return []comparator{ge(low), lt(M + "." + inc(m) + ".0-0")}, nil
		}
		return []comparator{ge(low), lt(inc(M) + ".0.0-0")}, nil
	}
	// x-ranges and plain comparators.
	if !p.x() {
		if op == "" {
			op = "="
		}
		return []comparator{{op: op, v: p.version()}}, nil
	}
	if op == "=" {
		op = ""
	}
	pr := z
	switch {
	case p.xMajor():
		if op == ">" || op == "<" {
			return nullSet, nil
		}
		return []comparator{{}}, nil
	case op != "":
		maj, min := num(M), uint64(0)
		if !p.xMinor() {
			min = num(m)
		}
		switch op {
		case ">":
			op = ">="
			if p.xMinor() {
				maj++
				min = 0
			} else {
				min++
			}
		case "<=":
			op = "<"
			if p.xMinor() {
				maj++
			} else {
				min++
			}
		}
		if op == "<" {
			pr = "-0"
		}
		return []comparator{comp(op, fmt.Sprintf("%d.%d.0%s", maj, min, pr))}, nil
	case p.xMinor():
		return []comparator{ge(M + ".0.0" + pr), lt(inc(M) + ".0.0-0")}, nil
	}
	return []comparator{ge(M + "." + m + ".0" + pr), lt(M + "." + inc(m) + ".0-0")}, nil
}

// hyphen desugars "from - to".
func hyphen(fromS, toS string, incPr bool) ([]comparator, error) {
	from, err := parsePartial(fromS)
	if err != nil {
		return nil, err
	}
	to, err := parsePartial(toS)
	if err != nil {
		return nil, err
	}
	z := ""
	if incPr {
		z = "-0"
	}
	var set []comparator
	switch {
	case from.xMajor():
	case from.xMinor():
		set = append(set, comp(">=", from.major+".0.0"+z))
	case from.xPatch():
		set = append(set, comp(">=", from.major+"."+from.minor+".0"+z))
	case len(from.pre) > 0:
		set = append(set, comparator{op: ">=", v: from.version()})
	default:
		v := from.version()
		if incPr {
			v.Pre = []string{"0"}
		}
		set = append(set, comparator{op: ">=", v: v})
	}
	switch {
	case to.xMajor():
	case to.xMinor():
		set = append(set, comp("<", inc(to.major)+".0.0-0"))
	case to.xPatch():
		set = append(set, comp("<", to.major+"."+inc(to.minor)+".0-0"))
	case len(to.pre) > 0:
		set = append(set, comparator{op: "<=", v: to.version()})
	case incPr:
		set = append(set, comp("<", to.major+"."+to.minor+"."+inc(to.patch)+"-0"))
	default:
		set = append(set, comparator{op: "<=", v: to.version()})
	}
	if len(set) == 0 {
		set = []comparator{{}}
	}
	return set, nil
}

// comp builds a comparator from a version this file wrote itself.
func comp(op, v string) comparator {
	p, err := parsePartial(v)
	if err != nil {
		panic(err)
	}
	return comparator{op: op, v: p.version()}
}

func inc(s string) string { return strconv.FormatUint(num(s)+1, 10) }

// Satisfies reports whether version is in the npm range rng, with
// node-semver's semantics (includePrerelease as its option). An invalid
// version or range is an error.
func Satisfies(ver, rng string, includePrerelease bool) (bool, error) {
	v, err := parseVersion(ver)
	if err != nil {
		return false, err
	}
	r, err := parseRange(rng, includePrerelease)
	if err != nil {
		return false, err
	}
	return r.test(v), nil
}
