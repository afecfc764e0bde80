package bundle

import (
	"bytes"
	"encoding/json"
	"path"
	"sort"
	"strings"
)

// Node's resolution of a package's entry points, as far as bundling needs it:
// "exports" (subpaths, patterns, conditions, arrays), "main" and index.js.

var (
	importConds  = []string{"node", "import", "default"}
	requireConds = []string{"node", "require", "default"}
)

// ordered is a JSON value whose objects keep their key order (conditions in
// "exports" are tried in the order written).
type ordered struct {
	str   *string
	arr   []ordered
	keys  []string
	vals  []ordered
	isObj bool
	null  bool
}

func parseOrdered(raw json.RawMessage) (ordered, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ordered{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	v, err := decodeOrdered(dec)
	return v, err == nil
}

func decodeOrdered(dec *json.Decoder) (ordered, error) {
	tok, err := dec.Token()
	if err != nil {
		return ordered{}, err
	}
	switch x := tok.(type) {
	case json.Delim:
		switch x {
		case '{':
			o := ordered{isObj: true}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return ordered{}, err
				}
				k, _ := kt.(string)
				v, err := decodeOrdered(dec)
				if err != nil {
					return ordered{}, err
				}
				o.keys = append(o.keys, k)
				o.vals = append(o.vals, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			var o ordered
			o.arr = []ordered{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return ordered{}, err
				}
				o.arr = append(o.arr, v)
			}
			_, err := dec.Token()
			return o, err
		}
	case string:
		return ordered{str: &x}, nil
	case nil:
		return ordered{null: true}, nil
	}
	return ordered{}, nil // numbers, booleans: no target
}

// exportsSubpaths returns the subpath keys of an "exports" value ("." for
// the sugar forms).
func exportsSubpaths(ex ordered) []string {
	if ex.isObj && len(ex.keys) > 0 && strings.HasPrefix(ex.keys[0], ".") {
		return append([]string(nil), ex.keys...)
	}
	return []string{"."}
}

// resolveExports resolves subpath ("." or "./x") through an "exports" value
// under conds, returning the package-relative target ("./dist/x.js").
func resolveExports(ex ordered, subpath string, conds []string) (string, bool) {
	if !(ex.isObj && len(ex.keys) > 0 && strings.HasPrefix(ex.keys[0], ".")) {
		if subpath != "." {
			return "", false
		}
		return resolveTarget(ex, "", conds)
	}
	for i, k := range ex.keys {
		if k == subpath && !strings.Contains(k, "*") {
			return resolveTarget(ex.vals[i], "", conds)
		}
	}
	// Patterns: the longest matching prefix wins.
	best, bestMatch := -1, ""
	for i, k := range ex.keys {
		star := strings.Index(k, "*")
		if star < 0 {
			continue
		}
		pre, suf := k[:star], k[star+1:]
		if strings.HasPrefix(subpath, pre) && strings.HasSuffix(subpath, suf) && len(subpath) >= len(k)-1 {
			if best < 0 || len(pre) > len(strings.SplitN(ex.keys[best], "*", 2)[0]) {
				best, bestMatch = i, subpath[len(pre):len(subpath)-len(suf)]
			}
		}
	}
	if best >= 0 {
		return resolveTarget(ex.vals[best], bestMatch, conds)
	}
	return "", false
}

func resolveTarget(t ordered, match string, conds []string) (string, bool) {
	switch {
	case t.str != nil:
		s := *t.str
		if !strings.HasPrefix(s, "./") {
			return "", false
		}
		return strings.ReplaceAll(s, "*", match), true
	case t.arr != nil:
		for _, a := range t.arr {
			if r, ok := resolveTarget(a, match, conds); ok {
				return r, true
			}
		}
	case t.isObj:
		for i, k := range t.keys {
			for _, c := range conds {
				if k == c {
					if r, ok := resolveTarget(t.vals[i], match, conds); ok {
						return r, true
					}
					break
				}
			}
		}
	}
	return "", false
}

// resolveSpecifier resolves a bare specifier from a module in fromDir the
// way Node does under conds and returns the file, relative to the root.
func (t *tree) resolveSpecifier(fromDir, spec string, conds []string) (string, bool) {
	name := packageName(spec)
	pdir, ok := t.lookupPackage(fromDir, name)
	if !ok {
		return "", false
	}
	return t.resolveInPackage(pdir, "."+spec[len(name):], conds)
}

// resolveInPackage resolves subpath ("." or "./x") inside the package at pdir.
func (t *tree) resolveInPackage(pdir, subpath string, conds []string) (string, bool) {
	var pj *pkgJSON
	if pjf := path.Join(pdir, "package.json"); t.isSet[pjf] {
		pj = t.readPkgJSON(pjf)
	}
	if pj != nil {
		if ex, ok := parseOrdered(pj.Exports); ok && !ex.null {
			target, ok := resolveExports(ex, subpath, conds)
			if !ok {
				return "", false
			}
			f := path.Join(pdir, target)
			return f, t.isSet[f]
		}
	}
	if subpath == "." {
		if pj != nil && pj.Main != "" {
			if f, ok := t.fileLike(path.Join(pdir, pj.Main)); ok {
				return f, true
			}
		}
		return t.fileLike(path.Join(pdir, "index.js"))
	}
	return t.fileLike(path.Join(pdir, subpath))
}

// fileLike applies CommonJS file resolution: the path, then with .js,
// .json, .node, then as a directory (its package.json main, index.js).
func (t *tree) fileLike(p string) (string, bool) {
	if t.isSet[p] {
		return p, true
	}
	for _, ext := range []string{".js", ".json", ".node"} {
		if t.isSet[p+ext] {
			return p + ext, true
		}
	}
	if t.dirs[p] {
		if pj := path.Join(p, "package.json"); t.isSet[pj] {
			if v := t.readPkgJSON(pj); v != nil && v.Main != "" {
				if f, ok := t.fileLike(path.Join(p, v.Main)); ok && f != p {
					return f, true
				}
			}
		}
		for _, idx := range []string{"index.js", "index.json", "index.node"} {
			if f := path.Join(p, idx); t.isSet[f] {
				return f, true
			}
		}
	}
	return "", false
}

// binTargets returns the package-relative files named by a "bin" field,
// with their command names.
func binTargets(pj *pkgJSON) map[string][]string {
	out := map[string][]string{}
	if pj == nil || len(pj.Bin) == 0 {
		return out
	}
	var s string
	if json.Unmarshal(pj.Bin, &s) == nil {
		name := pj.Name
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		out[s] = append(out[s], name)
		return out
	}
	var m map[string]string
	if json.Unmarshal(pj.Bin, &m) == nil {
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			out[m[k]] = append(out[m[k]], k)
		}
	}
	return out
}
