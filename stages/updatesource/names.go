package updatesource

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
)

// CheckName returns "" or what is wrong with a channel name, as a
// sentence. A channel name becomes the file name <channel>.json:
// 1-64 lowercase letters, digits, '.', '_' and '-', starting with a letter
// or digit, not ending with '.'.
func CheckName(s string) string {
	switch {
	case s == "":
		return "a channel name cannot be empty."
	case len(s) > 64:
		return "a channel name is at most 64 characters."
	case !nameRE().MatchString(s):
		return "a channel name holds lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, e.g. \"stable\"."
	case strings.HasSuffix(s, "."):
		return "a channel name cannot end with '.'."
	}
	return ""
}

// checkFileName refuses anything but one plain path element: what a
// channel may name as an archive, and what a Source fetches.
func checkFileName(name string) string {
	switch {
	case name == "" || name == "." || name == "..":
		return "not a file name"
	case len(name) > 255:
		return "longer than 255 bytes"
	case strings.ContainsAny(name, `/\:`):
		return "a plain file name has no '/', '\\' or ':'"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0:
		return "holds control characters or invalid UTF-8"
	case strings.HasPrefix(name, "."):
		return "starts with '.'"
	}
	return ""
}
