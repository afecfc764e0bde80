package channel

import (
	"fmt"
	"strconv"
	"strings"
)

// A small SemVer 2.0 reader: MAJOR.MINOR.PATCH[-pre][+build], compared by
// precedence (build metadata ignored). stages/audit has a lenient npm-style
// reader but exports no comparison; channel versions come from release.json,
// which dist validated strictly, so this one is strict.

type semver struct {
	major, minor, patch uint64
	pre                 []string
}

func parseSemver(s string) (semver, error) {
	bad := func(why string) (semver, error) {
		return semver{}, fmt.Errorf("%q is not a semantic version MAJOR.MINOR.PATCH[-pre][+build]: %s", s, why)
	}
	core, build, hasBuild := strings.Cut(s, "+")
	if hasBuild && !validIdents(build, false) {
		return bad("bad build metadata")
	}
	core, pre, hasPre := strings.Cut(core, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("three numbers are needed")
	}
	var nums [3]uint64
	for i, p := range parts {
		if !numeric(p) || (len(p) > 1 && p[0] == '0') {
			return bad("a number is empty, not decimal or has a leading zero")
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return bad("a number is too large")
		}
		nums[i] = n
	}
	v := semver{major: nums[0], minor: nums[1], patch: nums[2]}
	if hasPre {
		if !validIdents(pre, true) {
			return bad("bad pre-release")
		}
		v.pre = strings.Split(pre, ".")
	}
	return v, nil
}

func validIdents(s string, pre bool) bool {
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
		if pre && numeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

func numeric(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compare orders by SemVer precedence: -1, 0 or 1.
func (a semver) compare(b semver) int {
	for _, c := range [][2]uint64{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1 // a release follows its pre-releases
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		xn, yn := numeric(x), numeric(y)
		switch {
		case xn && yn:
			if len(x) != len(y) { // no leading zeros: longer is larger
				return cmpInt(len(x), len(y))
			}
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		case xn:
			return -1 // numeric identifiers sort below alphanumeric ones
		case yn:
			return 1
		default:
			if c := strings.Compare(x, y); c != 0 {
				return c
			}
		}
	}
	return cmpInt(len(a.pre), len(b.pre))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CompareVersions orders two semantic versions by precedence: -1, 0 or 1.
// Build metadata is ignored (1.0.0+a equals 1.0.0+b).
func CompareVersions(a, b string) (int, error) {
	x, err := parseSemver(a)
	if err != nil {
		return 0, err
	}
	y, err := parseSemver(b)
	if err != nil {
		return 0, err
	}
	return x.compare(y), nil
}
