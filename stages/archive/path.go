package archive

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Path bounds, beyond the rules of the reference: they keep a hostile
// archive from making the extractor walk or create arbitrarily deep trees
// (every file is opened one component at a time under os.Root), and stay
// far above what npm trees need (Linux PATH_MAX is 4096).
const (
	MaxPathBytes = 4096
	MaxDepth     = 128
	// MaxSegmentBytes bounds one path segment: 255 bytes is what ext4,
	// APFS and (in UTF-16 units, never fewer than UTF-8 bytes / 3) NTFS
	// allow, so a longer name cannot be created on some target.
	MaxSegmentBytes = 255
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
		if len(seg) > MaxSegmentBytes {
			return RulePathLength, fmt.Sprintf("path segment of %d bytes is longer than %d", len(seg), MaxSegmentBytes)
		}
		if c := seg[len(seg)-1]; c == '.' || c == ' ' {
			// Windows drops a trailing dot or space: "a." and "a " are
			// "a" there, or cannot be opened at all.
			return RuleTrailingDotSpace, fmt.Sprintf("segment %q ends in a %s (Windows drops it)", seg, map[byte]string{'.': "dot", ' ': "space"}[c])
		}
		if reservedName(seg) {
			return RuleReservedName, "Windows-reserved name " + seg
		}
	}
	return "", ""
}

// Names finds the paths of one tree that name the same file on a file
// system of some target: macOS (APFS, HFS+) and Windows (NTFS) compare
// names case-insensitively, and macOS also compares them up to Unicode
// normalisation, so "A.js" and "a.js", or "é" precomposed (U+00E9) and
// "e" + U+0301, are one file there and two on Linux. Each path is folded
// (Unicode full case folding between canonical decompositions, then NFC:
// the canonical caseless match of the Unicode standard, which is at least
// as wide as what any of these file systems folds); two different paths
// with one folded form collide. Exact repeats are not Names' business
// (the extractor says "duplicate" for those). Check is the one rule that
// Write (for the release), Extract (for an install or a verify-release)
// and the directory install (stages/home) apply, whatever the archive's
// target: a release must install on every target alike.
//
// A Names is not safe for concurrent use.
type Names struct {
	seen map[string]string // folded -> the first path of that fold
	fold cases.Caser
}

// NewNames returns an empty set.
func NewNames() *Names { return &Names{seen: make(map[string]string), fold: cases.Fold()} }

// Check applies the path rules (checkPath) and the collision rule to
// name, an archive path ("a/b", a directory without its trailing "/"),
// and records it. A refusal is an *Error with Code CodeIntegrity and
// Entry name; the caller sets Index or changes Code to suit.
func (n *Names) Check(name string) error {
	if rule, detail := n.check(name); rule != "" {
		return &Error{Code: CodeIntegrity, Rule: rule, Entry: name, Detail: detail}
	}
	return nil
}

func (n *Names) check(name string) (Rule, string) {
	if rule, detail := checkPath(name); rule != "" {
		return rule, detail
	}
	return n.collides(name)
}

// collides records name (already checked by checkPath) and returns
// RuleCollision when another path of the same fold was recorded.
func (n *Names) collides(name string) (Rule, string) {
	key := n.key(name)
	if other, ok := n.seen[key]; ok {
		if other != name {
			// %+q: twins that only differ in normalisation look alike.
			return RuleCollision, fmt.Sprintf("%+q and %+q are one file on a case-insensitive or normalising file system (macOS, Windows)", other, name)
		}
		return "", ""
	}
	n.seen[key] = name
	return "", ""
}

// key is the folded form of name. ASCII, all that npm trees hold but for
// a handful of files, folds by lowering letters (no other code point
// folds to ASCII but K U+212A and ſ U+017F, which take the slow path and
// come out as the same ASCII); anything else is decomposed, case-folded
// and composed.
func (n *Names) key(name string) string {
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 {
			return norm.NFC.String(n.fold.String(norm.NFD.String(name)))
		}
		if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	if !upper {
		return name
	}
	return strings.ToLower(name)
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
