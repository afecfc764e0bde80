// Package semver orders semantic versions by SemVer 2.0 precedence and
// reads them strictly (MAJOR.MINOR.PATCH[-pre][+build]). It is the one
// comparison the audit (npm ranges, read leniently there) and the update
// channels (strict) share; it imports only the standard library.
package semver

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a semantic version without build metadata, which has no
// precedence.
type Version struct {
	Major, Minor, Patch uint64
	Pre                 []string
}

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	return s
}

// Parse reads a version strictly: three decimal numbers without leading
// zeros, an optional pre-release and optional build metadata.
func Parse(s string) (Version, error) {
	bad := func(why string) (Version, error) {
		return Version{}, fmt.Errorf("%q is not a semantic version MAJOR.MINOR.PATCH[-pre][+build]: %s", s, why)
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
		if !IsNumeric(p) || (len(p) > 1 && p[0] == '0') {
			return bad("a number is empty, not decimal or has a leading zero")
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return bad("a number is too large")
		}
		nums[i] = n
	}
	v := Version{Major: nums[0], Minor: nums[1], Patch: nums[2]}
	if hasPre {
		if !validIdents(pre, true) {
			return bad("bad pre-release")
		}
		v.Pre = strings.Split(pre, ".")
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
		if pre && IsNumeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// IsNumeric reports whether s is a non-empty run of decimal digits.
func IsNumeric(s string) bool {
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

// Compare orders a and b by precedence: -1, 0 or 1. A release follows its
// pre-releases; pre-release identifiers compare numerically when both are
// numbers (numbers sort below alphanumerics), else in ASCII order, and a
// shorter list of equal identifiers comes first.
func Compare(a, b Version) int {
	for _, c := range [][2]uint64{{a.Major, b.Major}, {a.Minor, b.Minor}, {a.Patch, b.Patch}} {
		if c[0] != c[1] {
			if c[0] < c[1] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a.Pre) == 0 && len(b.Pre) == 0:
		return 0
	case len(a.Pre) == 0:
		return 1
	case len(b.Pre) == 0:
		return -1
	}
	for i := 0; i < len(a.Pre) && i < len(b.Pre); i++ {
		if c := compareIdent(a.Pre[i], b.Pre[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a.Pre), len(b.Pre))
}

func compareIdent(a, b string) int {
	an, bn := IsNumeric(a), IsNumeric(b)
	switch {
	case an && bn:
		// Leading zeros (accepted by lenient readers) do not count.
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if c := cmpInt(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case an:
		return -1
	case bn:
		return 1
	}
	return strings.Compare(a, b)
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

// SnapshotPre is the first pre-release identifier of a snapshot version,
// the version `piship release --snapshot` makes from a commit
// (1.2.4-snapshot.g<sha>): a build to try, never one to publish.
const SnapshotPre = "snapshot"

// IsSnapshot reports whether s is a snapshot version: a semantic version
// whose pre-release starts with SnapshotPre. `piship repo add` refuses
// one.
func IsSnapshot(s string) bool {
	v, err := Parse(s)
	return err == nil && len(v.Pre) > 0 && v.Pre[0] == SnapshotPre
}
