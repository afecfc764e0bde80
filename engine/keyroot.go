package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// rootToken stands for the checkout's root in a cache key, so that two
// clones at different paths compute the same keys and share entries
// (--remote-cache).
const rootToken = "${checkout}"

// keyRoot is the directory whose absolute path a cache key must not
// depend on: the checkout holding the pipeline's directory (the nearest
// directory up with a .git), else the pipeline's directory itself.
func keyRoot(dir string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return filepath.Clean(dir)
		}
		d = up
	}
}

// portablePath writes root as rootToken wherever it appears in s as a
// whole path or a leading part of one ("/a/repo", "/a/repo/x",
// "--out=/a/repo/x").
func portablePath(s, root string) string {
	if root == "" || root == string(filepath.Separator) || !strings.Contains(s, root) {
		return s
	}
	s = strings.ReplaceAll(s, root+string(filepath.Separator), rootToken+"/")
	if strings.HasSuffix(s, root) {
		s = strings.TrimSuffix(s, root) + rootToken
	}
	return s
}

// portableConfig is the canonical configuration with every string's
// absolute checkout path written as rootToken; the bytes are unchanged
// when no string holds it, so keys without paths stay what they were.
func portableConfig(canon []byte, root string) []byte {
	if root == "" || !bytes.Contains(canon, []byte(root)) {
		return canon
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return canon
	}
	out, err := json.Marshal(rewriteStrings(v, root))
	if err != nil {
		return canon
	}
	return out
}

func rewriteStrings(v any, root string) any {
	switch x := v.(type) {
	case string:
		return portablePath(x, root)
	case []any:
		for i := range x {
			x[i] = rewriteStrings(x[i], root)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = rewriteStrings(e, root)
		}
	}
	return v
}
