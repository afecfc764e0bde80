package audit

import (
	"strings"
	"testing"
)

// node-semver 7.8 (npm's own) gave these answers: satisfies(version, range)
// and satisfies(version, range, {includePrerelease: true}).
var rangeCases = []struct {
	rng, ver     string
	want, wantPr bool
}{
	{"^1.2.3", "1.2.3", true, true},
	{"^1.2.3", "1.9.9", true, true},
	{"^1.2.3", "2.0.0", false, false},
	{"^1.2.3", "1.2.2", false, false},
	{"^1.2.3", "1.3.0-beta", false, true},
	{"^1.2.3", "2.0.0-0", false, false},
	{"^1.2.3-beta.2", "1.2.3-beta.4", true, true},
	{"^1.2.3-beta.2", "1.2.3-beta.1", false, false},
	{"^1.2.3-beta.2", "1.2.4-beta.1", false, true},
	{"^1.2.3-beta.2", "1.2.3", true, true},
	{"^0.2.3", "0.2.9", true, true},
	{"^0.2.3", "0.3.0", false, false},
	{"^0.0.3", "0.0.3", true, true},
	{"^0.0.3", "0.0.4", false, false},
	{"^0.0.3-beta", "0.0.3-pr.2", true, true},
	{"^0.0.3-beta", "0.0.3-alpha", false, false},
	{"^0.0", "0.0.9", true, true},
	{"^0.0", "0.1.0", false, false},
	{"^0.x", "0.9.0", true, true},
	{"^0.x", "1.0.0", false, false},
	{"^1.x", "1.9.0", true, true},
	{"^1.2.x", "1.2.0", true, true},
	{"^1.2.x", "1.1.9", false, false},
	{"^0.0.x", "0.0.7", true, true},
	{"^0.1.x", "0.2.0", false, false},
	{"^*", "5.0.0", true, true},
	{"^*", "5.0.0-rc.1", false, true},
	{"~1.2.3", "1.2.9", true, true},
	{"~1.2.3", "1.3.0", false, false},
	{"~1.2.3", "1.2.2", false, false},
	{"~1.2", "1.2.0", true, true},
	{"~1.2", "1.3.0", false, false},
	{"~1", "1.9.9", true, true},
	{"~1", "2.0.0", false, false},
	{"~0.2.3", "0.2.4", true, true},
	{"~0.2.3", "0.3.0", false, false},
	{"~1.2.3-beta.2", "1.2.3-beta.3", true, true},
	{"~1.2.3-beta.2", "1.2.4-beta.2", false, true},
	{"~1.2.3-beta.2", "1.2.4", true, true},
	{"~>1.2.3", "1.2.8", true, true},
	{"~ 1.2.3", "1.2.8", true, true},
	{"~*", "0.0.1", true, true},
	{"1.x", "1.0.0", true, true},
	{"1.x", "1.99.99", true, true},
	{"1.x", "2.0.0", false, false},
	{"1.x", "1.2.0-beta", false, true},
	{"1.2.x", "1.2.7", true, true},
	{"1.2.x", "1.3.0", false, false},
	{"1.2.*", "1.2.0", true, true},
	{"1.X", "1.4.0", true, true},
	{"*", "1.2.3", true, true},
	{"*", "0.0.0", true, true},
	{"*", "1.0.0-alpha", false, true},
	{"x", "3.0.0", true, true},
	{"", "2.0.0", true, true},
	{"1", "1.5.0", true, true},
	{"1", "2.0.0", false, false},
	{"1.2", "1.2.5", true, true},
	{"1.2", "1.3.0", false, false},
	{">1", "1.9.9", false, false},
	{">1", "2.0.0", true, true},
	{">1.2", "1.2.9", false, false},
	{">1.2", "1.3.0", true, true},
	{"<=1", "1.9.9", true, true},
	{"<=1", "2.0.0", false, false},
	{"<=1", "2.0.0-beta", false, false},
	{"<=1.2", "1.2.99", true, true},
	{"<=1.2", "1.3.0", false, false},
	{"<1", "1.0.0", false, false},
	{"<1", "0.9.9", true, true},
	{"<1", "1.0.0-beta", false, false},
	{"<1.2", "1.1.9", true, true},
	{"<1.2", "1.2.0", false, false},
	{">=1", "1.0.0", true, true},
	{">=1", "0.9.0", false, false},
	{">=1.2", "1.2.0", true, true},
	{">*", "1.0.0", false, false},
	{"<*", "1.0.0", false, false},
	{">=*", "1.0.0", true, true},
	{"=1.x", "1.5.0", true, true},
	{"=1.2.3", "1.2.3", true, true},
	{"=1.2.3", "1.2.4", false, false},
	{"1.2.3", "1.2.3", true, true},
	{"v1.2.3", "1.2.3", true, true},
	{"1.2.3", "1.2.3+build.5", true, true},
	{"1.2.3-beta", "1.2.3-beta", true, true},
	{">=1.2.3 <2.0.0", "1.5.0", true, true},
	{">=1.2.3 <2.0.0", "2.0.0", false, false},
	{">=1.2.3 <2.0.0", "1.5.0-rc.1", false, true},
	{">= 1.2.3 < 2.0.0", "1.9.0", true, true},
	{">=1.2.3-alpha <2.0.0", "1.2.3-beta", true, true},
	{">=1.2.3-alpha <2.0.0", "1.2.4-beta", false, true},
	{"<1.2.3-beta.5", "1.2.3-beta.2", true, true},
	{"<1.2.3-beta.5", "1.2.3-beta.11", false, false},
	{"<1.2.3-beta.5", "1.2.2", true, true},
	{"<1.2.3-beta.5", "1.2.3-alpha.9", true, true},
	{">1.0.0-alpha <1.0.0", "1.0.0-beta", true, true},
	{">1.0.0-alpha <1.0.0", "1.0.0-alpha", false, false},
	{">1.0.0-alpha <1.0.0", "0.9.0", false, false},
	{"1.0.0-alpha.1", "1.0.0-alpha.1", true, true},
	{"<1.0.0-rc.1", "1.0.0-beta.11", true, true},
	{"<1.0.0-rc.1", "1.0.0-rc.1", false, false},
	{"<1.0.0-beta.2", "1.0.0-beta.11", false, false},
	{"<1.0.0-beta", "1.0.0-beta.0", false, false},
	{"<1.0.0-1", "1.0.0-alpha", false, false},
	{"<1.0.0-alpha", "1.0.0-1", true, true},
	{"1.2.3 - 2.3.4", "1.2.3", true, true},
	{"1.2.3 - 2.3.4", "2.3.4", true, true},
	{"1.2.3 - 2.3.4", "2.3.5", false, false},
	{"1.2.3 - 2.3.4", "1.2.2", false, false},
	{"1.2 - 2.3.4", "1.2.0", true, true},
	{"1.2.3 - 2.3", "2.3.9", true, true},
	{"1.2.3 - 2.3", "2.4.0", false, false},
	{"1.2.3 - 2", "2.9.9", true, true},
	{"1.2.3 - 2", "3.0.0", false, false},
	{"* - 2", "1.0.0", true, true},
	{"1.2.3 - *", "9.0.0", true, true},
	{"1.2.3-beta - 1.2.3", "1.2.3-beta.1", true, true},
	{"1.2.3 - 2.3.4", "2.3.4-beta", false, true},
	{"1.2.3 - 2.3.4-beta.1", "2.3.4-alpha", true, true},
	{"1.2.3 - 2.3.4", "2.0.0-beta", false, true},
	{"<1.2.3 || >=2.0.0", "1.0.0", true, true},
	{"<1.2.3 || >=2.0.0", "1.5.0", false, false},
	{"<1.2.3 || >=2.0.0", "2.1.0", true, true},
	{"<1.2.3||>=2.0.0", "2.1.0", true, true},
	{">=4.0.0 <4.17.21", "4.17.20", true, true},
	{">=4.0.0 <4.17.21", "4.17.21", false, false},
	{"<4.17.21", "4.17.20", true, true},
	{"<=4.17.20", "4.17.20", true, true},
	{">=0.0.0", "1.0.0-beta", false, true},
	{">=0.0.0", "0.0.0", true, true},
	{">=1.0.0 <1.2.3 || >=2.0.0-beta <2.1.0", "2.0.0-rc.1", true, true},
	{">=1.0.0 <1.2.3 || >=2.0.0-beta <2.1.0", "2.0.1-rc.1", false, true},
	{"<0.0.0-0", "0.0.0", false, false},
	{"<0.0.0-0", "0.0.0-0", false, false},
	{">=1.0.0-0", "1.0.0-0", true, true},
	{">=1.0.0-0", "1.0.1-pre", false, true},
}

func TestSatisfies(t *testing.T) {
	for _, c := range rangeCases {
		for _, incPr := range []bool{false, true} {
			want := c.want
			if incPr {
				want = c.wantPr
			}
			got, err := Satisfies(c.ver, c.rng, incPr)
			if err != nil {
				t.Errorf("Satisfies(%q, %q, %v): %v", c.ver, c.rng, incPr, err)
				continue
			}
			if got != want {
				r, _ := parseRange(c.rng, incPr)
				t.Errorf("Satisfies(%q, %q, includePrerelease=%v) = %v, want %v (sets %v)", c.ver, c.rng, incPr, got, want, r.sets)
			}
		}
	}
}

func TestVersionOrder(t *testing.T) {
	// SemVer 2.0's own example, then numbers and leading zeros.
	order := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2", "1.0.0-beta.11",
		"1.0.0-rc.1", "1.0.0", "1.0.1-0", "1.0.1", "1.2.0", "1.10.0", "2.0.0-0", "2.0.0"}
	for i := range order {
		for j := range order {
			a, err := parseVersion(order[i])
			if err != nil {
				t.Fatal(err)
			}
			b, _ := parseVersion(order[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := compareVersions(a, b); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", order[i], order[j], got, want)
			}
		}
	}
	for _, same := range [][2]string{{"1.2.3+build", "1.2.3"}, {"v1.2.3", "1.2.3"}, {"=1.2.3", "1.2.3"}, {"1.2.3beta", "1.2.3-beta"}, {"01.2.3", "1.2.3"}} {
		a, err1 := parseVersion(same[0])
		b, err2 := parseVersion(same[1])
		if err1 != nil || err2 != nil || compareVersions(a, b) != 0 {
			t.Errorf("%s != %s (%v %v)", same[0], same[1], err1, err2)
		}
	}
	for _, bad := range []string{"", "1", "1.2", "1.x.3", "a.b.c", "1.2.3.4", "1.2.3-", "1.2.3-a..b", "1.2.3+", "99999999999999999999.0.0"} {
		if v, err := parseVersion(bad); err == nil {
			t.Errorf("parseVersion(%q) = %v, want an error", bad, v)
		}
	}
}

func TestRangeDesugar(t *testing.T) {
	for _, c := range []struct{ rng, want string }{
		{"^1.2.3", ">=1.2.3 <2.0.0-0"},
		{"^0.2.3", ">=0.2.3 <0.3.0-0"},
		{"^0.0.3", ">=0.0.3 <0.0.4-0"},
		{"^1.2.3-beta.2", ">=1.2.3-beta.2 <2.0.0-0"},
		{"~1.2", ">=1.2.0 <1.3.0-0"},
		{"~1", ">=1.0.0 <2.0.0-0"},
		{"1.x", ">=1.0.0 <2.0.0-0"},
		{">1.2", ">=1.3.0"},
		{"<=1", "<2.0.0-0"},
		{"*", "*"},
		{">*", "<0.0.0-0"},
		{"1.2.3 - 2.3", ">=1.2.3 <2.4.0-0"},
		{"1.2 - 2.3.4", ">=1.2.0 <=2.3.4"},
		{"> 1.2.3 <  2", ">1.2.3 <2.0.0-0"},
		{"<1 || >=2 <3", "<1.0.0-0 || >=2.0.0 <3.0.0-0"},
	} {
		r, err := parseRange(c.rng, false)
		if err != nil {
			t.Errorf("%s: %v", c.rng, err)
			continue
		}
		var sets []string
		for _, set := range r.sets {
			var cs []string
			for _, cmp := range set {
				cs = append(cs, cmp.String())
			}
			sets = append(sets, strings.Join(cs, " "))
		}
		if got := strings.Join(sets, " || "); got != c.want {
			t.Errorf("%s desugars to %q, want %q", c.rng, got, c.want)
		}
	}
	for _, bad := range []string{">=1.2.3 <2.0.0 garbage", "1.2.3 -", "^1.2.3-", "~>", "~", "^", ">", ">=>1", "1.2.3 - 2.0.0 - 3.0.0", ">=1.2.3<2"} {
		if _, err := parseRange(bad, false); err == nil {
			t.Errorf("parseRange(%q) succeeded", bad)
		}
	}
}
