package launch

import (
	"encoding/json"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/home/receipt"
)

// The node on PATH against the runtime's engines.
//
// A release without a node block runs the node on PATH. When the entry's
// package (the package.json nearest above the entry, inside the payload's
// node_modules) declares engines.node and that node's version does not
// satisfy it, the start stops before the app runs, saying which range the
// release needs and which node it found (CONFIG_INVALID), instead of the
// app failing at its first syntax or API it lacks.
//
// Asking node its version costs a process start (~20 to 40 ms), so a start
// does it only when the node it resolved changed: .piship-node-check.json
// in the state directory remembers the node's path, stat fingerprint and
// version, and a start whose node has the same path and fingerprint takes
// the version from there (one stat and one small read). A node whose
// --version does not print a version (a wrapper, a stand-in) is not judged.

// NodeCheckName is the record of the last node on PATH a start asked for
// its version, in the state directory.
const NodeCheckName = ".piship-node-check.json"

// NodeCheckSchema identifies its format.
const NodeCheckSchema = "piship-node-check/v1"

type nodeCheck struct {
	Schema  string `json:"schema"`
	Path    string `json:"path"`
	Version string `json:"version"`
	fingerprint
}

// entryEngines is engines.node of the package that holds entry (a payload
// path under node_modules), "" when it declares none or cannot be read.
func entryEngines(payload, entry string) string {
	parts := strings.Split(entry, "/")
	for i := len(parts) - 1; i >= 2; i-- {
		dir := parts[:i]
		k := len(dir)
		pkg := dir[k-2] == "node_modules" && !strings.HasPrefix(dir[k-1], "@") ||
			k >= 3 && dir[k-3] == "node_modules" && strings.HasPrefix(dir[k-2], "@")
		if !pkg {
			continue
		}
		data, err := atomicfs.ReadRegular(filepath.Join(payload, filepath.FromSlash(path.Join(append(append([]string(nil), dir...), "package.json")...))), 1<<20)
		if err != nil {
			return ""
		}
		var pj struct {
			Engines map[string]string `json:"engines"`
		}
		if json.Unmarshal(data, &pj) != nil {
			return ""
		}
		return strings.TrimSpace(pj.Engines["node"])
	}
	return ""
}

// CheckEngines refuses nodePath when its version does not satisfy the
// entry package's engines.node (see above). stateDir "" keeps no record.
// It returns the node's version when it was judged ("" otherwise) and
// whether it had to ask node.
func CheckEngines(id string, rel *receipt.Release, nodePath, stateDir string) (version string, asked bool, err error) {
	want := entryEngines(rel.Payload, rel.Entry)
	if want == "" {
		return "", false, nil
	}
	fp, ferr := statFingerprint(nodePath)
	rpath := ""
	if stateDir != "" {
		rpath = filepath.Join(stateDir, NodeCheckName)
	}
	if ferr == nil && rpath != "" {
		var rc nodeCheck
		if readRecord(rpath, &rc) &&
			rc.Schema == NodeCheckSchema && rc.Path == nodePath && rc.fingerprint == fp {
			version = rc.Version
		}
	}
	if version == "" {
		out, err := exec.Command(nodePath, "--version").Output()
		asked = true
		if err != nil {
			return "", true, nil // a node that cannot say: the start runs it as before
		}
		version = strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		if _, ok := parseVersion(version); !ok {
			return "", true, nil
		}
		if ferr == nil && rpath != "" {
			_ = writeRecord(rpath, nodeCheck{Schema: NodeCheckSchema, Path: nodePath, Version: version, fingerprint: fp}) // else the next start asks again
		}
	}
	ok, valid := satisfies(version, want)
	if valid && !ok {
		return version, asked, receipt.Errorf(receipt.CodeConfigInvalid, "%s %s needs Node %s (its engines), and the node on PATH (%s) is %s: install a Node in that range or put one first on PATH; nothing was run", id, rel.Version, want, nodePath, version)
	}
	return version, asked, nil
}

// parseVersion reads major.minor.patch (a prerelease or build suffix is
// dropped; missing parts are 0).
func parseVersion(v string) ([3]int, bool) {
	var out [3]int
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	v, _, _ = strings.Cut(v, "+")
	v, _, _ = strings.Cut(v, "-")
	parts := strings.Split(v, ".")
	if len(parts) == 0 || len(parts) > 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

func cmpVersion(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// satisfies reports whether version satisfies the npm range rng (||,
// space-separated comparators, hyphen ranges, ^, ~, x-ranges, *). valid is
// false for a range it does not read: then nothing is refused.
func satisfies(version, rng string) (ok, valid bool) {
	v, vok := parseVersion(version)
	if !vok {
		return false, false
	}
	for _, alt := range strings.Split(rng, "||") {
		fields := strings.Fields(alt)
		if len(fields) == 3 && fields[1] == "-" {
			fields = []string{">=" + fields[0], "<=" + fields[2]}
		}
		all := true
		for _, c := range fields {
			m, cok := comparator(v, c)
			if !cok {
				return false, false
			}
			all = all && m
		}
		if all {
			return true, true
		}
	}
	return false, true
}

// comparator matches v against one comparator (>=22.19.0, ^18, ~1.2, 20.x).
func comparator(v [3]int, c string) (bool, bool) {
	op := ""
	for _, p := range []string{">=", "<=", ">", "<", "=", "^", "~"} {
		if strings.HasPrefix(c, p) {
			op, c = p, strings.TrimSpace(c[len(p):])
			break
		}
	}
	c = strings.TrimPrefix(c, "v")
	if c == "" || c == "*" || c == "x" || c == "X" {
		return op != "<" && op != ">", true
	}
	parts := strings.Split(c, ".")
	n := 0 // how many parts are given (the rest are wildcards)
	var b [3]int
	for i, p := range parts {
		if i > 2 {
			return false, false
		}
		if p == "x" || p == "X" || p == "*" {
			break
		}
		x, err := strconv.Atoi(p)
		if err != nil {
			return false, false
		}
		b[i], n = x, i+1
	}
	upper := func(level int) [3]int { // the first version past b at level
		u := b
		u[level]++
		for i := level + 1; i < 3; i++ {
			u[i] = 0
		}
		return u
	}
	lt := func(u [3]int) bool { return cmpVersion(v, u) < 0 }
	switch op {
	case ">=":
		return cmpVersion(v, b) >= 0, true
	case ">":
		if n < 3 {
			return !lt(upper(max(n-1, 0))), true
		}
		return cmpVersion(v, b) > 0, true
	case "<":
		return cmpVersion(v, b) < 0, true
	case "<=":
		if n < 3 {
			return lt(upper(max(n-1, 0))), true
		}
		return cmpVersion(v, b) <= 0, true
	case "^":
		level := 0
		for level < n-1 && b[level] == 0 {
			level++
		}
		return cmpVersion(v, b) >= 0 && lt(upper(level)), true
	case "~":
		level := 1
		if n < 2 {
			level = 0
		}
		return cmpVersion(v, b) >= 0 && lt(upper(level)), true
	}
	// "=" or none: an exact version, or an x-range.
	if n == 3 {
		return cmpVersion(v, b) == 0, true
	}
	if n == 0 {
		return true, true
	}
	return cmpVersion(v, b) >= 0 && lt(upper(n-1)), true
}
