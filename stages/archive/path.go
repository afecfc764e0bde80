package archive

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Path bounds, beyond the rules of the reference: they keep a hostile
// archive from making the extractor walk or create arbitrarily deep trees
// (every file is opened one component at a time under os.Root), and stay
// far above what npm trees need (Linux PATH_MAX is 4096).
const (
	MaxPathBytes = 4096
	MaxDepth     = 128
)

// checkPath applies the path rules to name, an archive path without the
// trailing "/" of a directory. It returns "" when the path is acceptable,
// else the rule broken and a detail.
func checkPath(name string) (Rule, string) {
	if name == "" {
		return RuleEmptyPath, "empty path"
	}
	if len(name) > MaxPathBytes {
		return RulePathLength, fmt.Sprintf("path of %d bytes is longer than %d", len(name), MaxPathBytes)
	}
	if d := strings.Count(name, "/") + 1; d > MaxDepth {
		return RulePathLength, fmt.Sprintf("path of %d segments is deeper than %d", d, MaxDepth)
	}
	if name[0] == '/' {
		return RuleAbsolute, "absolute path"
	}
	if len(name) >= 2 && name[1] == ':' && isASCIILetter(name[0]) {
		return RuleDrive, "drive prefix " + name[:2]
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return RuleControl, "control character in path"
		case c == '\\':
			return RuleBackslash, "backslash in path"
		case strings.IndexByte(`<>:"|?*`, c) >= 0:
			return RuleReservedChar, "Windows-reserved character " + string(c) + " in path"
		}
	}
	if !utf8.ValidString(name) {
		return RuleEncoding, "path is not valid UTF-8"
	}
	for _, r := range name {
		if r >= 0x80 && r <= 0x9f {
			return RuleControl, "C1 control character in path"
		}
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return RuleEmptyPath, "empty path segment"
		case ".", "..":
			return RuleDotSegment, "path has a " + seg + " segment"
		}
		if reservedName(seg) {
			return RuleReservedName, "Windows-reserved name " + seg
		}
	}
	return "", ""
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// reservedName reports whether seg is a Windows device name: CON, PRN,
// AUX, NUL, COM0-9 or LPT0-9 (also with the superscript digits Windows
// treats alike), in any case, alone or followed by an extension, with any
// trailing spaces before the extension ("con .txt").
func reservedName(seg string) bool {
	stem := seg
	if i := strings.IndexByte(stem, '.'); i >= 0 {
		stem = stem[:i]
	}
	stem = strings.TrimRight(stem, " ")
	if len(stem) < 3 || len(stem) > 5 {
		return false
	}
	head := strings.ToUpper(stem[:3])
	rest := stem[3:]
	switch head {
	case "CON", "PRN", "AUX", "NUL":
		return rest == ""
	case "COM", "LPT":
		switch rest {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return true
		}
	}
	return false
}
