package archive

import "strings"

// split returns the directory of a slash path ("" at the top) and its base.
func split(name string) (dir, base string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return "", name
}
