package stages

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"piship.dev/piship/stages/stage"
)

// ExpandFiles expands file patterns relative to dir into a sorted list of
// slash-separated paths (relative to dir where the pattern was relative).
// A pattern may be a file, a directory (every file below it), or a glob where
// `*`, `?` and `[...]` match within a path segment and `**` matches any
// number of segments. A pattern that matches no file is an error: a typo
// would otherwise make a digest or a cache key silently ignore inputs.
func ExpandFiles(dir string, patterns []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	matched := 0
	add := func(p string) {
		matched++
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, pat := range patterns {
		matched = 0
		if err := expandOne(dir, filepath.ToSlash(pat), add); err != nil {
			return nil, err
		}
		if matched == 0 {
			return nil, fmt.Errorf("%q matched no files in %s: check the path (patterns are relative to the pipeline file's directory unless dir is set)", pat, dir)
		}
	}
	sort.Strings(out)
	return out, nil
}

func expandOne(dir, pat string, add func(string)) error {
	if !hasMeta(pat) {
		full := stage.Resolve(dir, pat)
		info, err := os.Stat(full)
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !info.IsDir() {
			add(path.Clean(pat))
			return nil
		}
		return walkFiles(full, func(rel string) { add(path.Join(path.Clean(pat), rel)) })
	}
	// Walk from the longest literal prefix and match the rest segment-wise.
	segs := strings.Split(pat, "/")
	i := 0
	for i < len(segs)-1 && !hasMeta(segs[i]) {
		i++
	}
	prefix := strings.Join(segs[:i], "/")
	if strings.HasPrefix(pat, "/") && prefix == "" {
		prefix = "/"
	}
	root := dir
	if prefix != "" {
		root = stage.Resolve(dir, prefix)
	}
	rest := segs[i:]
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil
	}
	return walkFiles(root, func(rel string) {
		if matchSegments(rest, strings.Split(rel, "/")) {
			if prefix == "" {
				add(rel)
			} else {
				add(path.Join(prefix, rel))
			}
		}
	})
}

// walkFiles calls fn with the slash-separated path, relative to root, of
// every regular file below root, in lexical order.
func walkFiles(root string, fn func(rel string)) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		fn(filepath.ToSlash(rel))
		return nil
	})
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

func matchSegments(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(segs); k++ {
			if matchSegments(pat[1:], segs[k:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], segs[0])
	return err == nil && ok && matchSegments(pat[1:], segs[1:])
}
