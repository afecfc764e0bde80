package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// nameCases are trees that cannot exist, or not as themselves, on the
// file system of some target: each is refused by Extract and by Write
// with the same rule, naming the offending paths.
var nameCases = []struct {
	name  string
	paths []string // in archive order; the last one is refused
	rule  Rule
}{
	{"case twins", []string{"A.js", "a.js"}, RuleCollision},
	{"case twin directories", []string{"lib/x.js", "Lib/y.js"}, RuleCollision},
	{"case twin inside a directory", []string{"node_modules/p/README.md", "node_modules/p/readme.md"}, RuleCollision},
	{"NFC and NFD twins", []string{"caf\u00e9.js", "cafe\u0301.js"}, RuleCollision},
	{"NFD and NFC twin directories", []string{"e\u0301/a.js", "\u00e9/b.js"}, RuleCollision},
	{"case and normalisation twins", []string{"\u00c9.js", "e\u0301.js"}, RuleCollision},
	{"Kelvin sign and k", []string{"k.js", "\u212a.js"}, RuleCollision},
	{"trailing dot", []string{"ok.js", "a."}, RuleTrailingDotSpace},
	{"trailing dot directory", []string{"ok.js", "lib./x.js"}, RuleTrailingDotSpace},
	{"trailing dots", []string{"ok.js", "..."}, RuleTrailingDotSpace},
	{"trailing space", []string{"ok.js", "a "}, RuleTrailingDotSpace},
	{"trailing space directory", []string{"ok.js", "lib /x.js"}, RuleTrailingDotSpace},
	{"segment over 255 bytes", []string{"ok.js", "d/" + strings.Repeat("s", MaxSegmentBytes+1)}, RulePathLength},
}

func TestExtractRefusesNames(t *testing.T) {
	for _, c := range nameCases {
		t.Run(c.name, func(t *testing.T) {
			var es []ent
			for _, p := range c.paths {
				e := ent{name: p, data: "x"}
				if len(p) > 100 || strings.ContainsFunc(p, func(r rune) bool { return r >= 0x80 }) {
					es = append(es, ent{name: "PaxHeaders/x", typ: 'x', data: paxData("path", p)})
					e.name = "x"
				}
				es = append(es, e)
			}
			par := t.TempDir()
			os.WriteFile(filepath.Join(par, "sentinel"), []byte("s"), 0o644)
			dest := filepath.Join(par, "dest")
			_, err := Extract(context.Background(), bytes.NewReader(gz(tarBytes(es, nil))), dest, Limits{})
			ie, ok := IsIntegrity(err)
			if !ok || ie.Rule != c.rule {
				t.Fatalf("err = %v, want INTEGRITY_FAILED (%s)", err, c.rule)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "INTEGRITY_FAILED: ") || !strings.Contains(msg, string(c.rule)) {
				t.Errorf("message %q", msg)
			}
			mustName(t, msg, c.paths, c.rule)
			assertOnlyDest(t, par)
			if _, err := os.Lstat(filepath.Join(dest, filepath.FromSlash(c.paths[len(c.paths)-1]))); err == nil && c.rule != RuleCollision {
				t.Errorf("the refused path was written")
			}
			t.Log(msg)
		})
	}
}

func TestWriteRefusesNames(t *testing.T) {
	for _, c := range nameCases {
		if c.rule == RulePathLength {
			continue // no file system here holds such a name
		}
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range c.paths {
				abs := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(abs, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(readTree(t, dir)); n < len(c.paths) {
				t.Fatalf("this file system folds names itself (%d entries for %d paths): cannot build the tree", n, len(c.paths))
			}
			out := filepath.Join(t.TempDir(), "r.tar.gz")
			_, err := Create(context.Background(), out, dir, Options{})
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeInvalid || e.Rule != c.rule {
				t.Fatalf("err = %v, want CONFIG_INVALID (%s)", err, c.rule)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "CONFIG_INVALID: ") || !strings.Contains(msg, "every install would refuse it") {
				t.Errorf("message %q", msg)
			}
			// Write lists a directory in its order, not the archive's:
			// the collision names both paths, whichever came first.
			mustName(t, msg, c.paths, c.rule)
			if _, err := os.Stat(out); err == nil {
				t.Error("an archive was written")
			}
		})
	}
}

// mustName checks that msg names the refused path: for a collision both
// paths (or the two colliding directories), else the last path's bad
// segment.
func mustName(t *testing.T, msg string, paths []string, rule Rule) {
	t.Helper()
	if rule != RuleCollision {
		last := paths[len(paths)-1]
		seg := last
		for s := range strings.SplitSeq(last, "/") {
			if strings.HasSuffix(s, ".") || strings.HasSuffix(s, " ") || len(s) > MaxSegmentBytes {
				seg = s
				break
			}
		}
		if rule == RulePathLength {
			if !strings.Contains(msg, "segment of 256 bytes") {
				t.Errorf("message %q does not give the segment's length", msg)
			}
			return
		}
		if !strings.Contains(msg, strconv.Quote(seg)) {
			t.Errorf("message %q does not name %q", msg, seg)
		}
		return
	}
	for _, p := range paths {
		// The colliding component: the first segment that differs.
		first, _, _ := strings.Cut(p, "/")
		if !strings.Contains(msg, strconv.QuoteToASCII(p)) && !strings.Contains(msg, strconv.QuoteToASCII(first)) {
			t.Errorf("message %q does not name %q", msg, p)
		}
	}
}

// Paths that only look alike are not collisions: a tree of them archives
// and extracts.
func TestNamesAcceptDistinct(t *testing.T) {
	src := t.TempDir()
	files := map[string]file{
		"a.js": {data: "1"}, "b.js": {data: "2"}, "a.js.map": {data: "3"}, "a/b.js": {data: "4"},
		"caf\u00e9.js": {data: "5"}, "cafe.js": {data: "6"}, "stra\u00dfe.js": {data: "7"}, ".npmignore": {data: "8"},
		"x.d.ts": {data: "9"}, "lib/.keep": {data: "10"},
	}
	mkTree(t, src, keys(files), files)
	arch, _ := writeArchive(t, src, Options{})
	ex, err := Extract(context.Background(), bytes.NewReader(arch), filepath.Join(t.TempDir(), "d"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Files) != len(files) {
		t.Fatalf("%d files, want %d", len(ex.Files), len(files))
	}
}

// BenchmarkNames is the collision check of a 10,000-file npm-like tree
// (a few upper-case and non-ASCII names among them), the cost Extract
// and Write add per path.
func BenchmarkNames(b *testing.B) {
	order, _ := manySmall(10000)
	for i := range order {
		switch i % 100 {
		case 0:
			order[i] = strings.ToUpper(order[i])
		case 1:
			order[i] += "-caf\u00e9.js"
		}
	}
	b.Run("paths", func(b *testing.B) { // the rules Extract applied before
		for b.Loop() {
			for _, p := range order {
				if rule, _ := checkPath(p); rule != "" {
					b.Fatal(rule)
				}
			}
		}
	})
	b.Run("collisions", func(b *testing.B) { // what Names adds
		for b.Loop() {
			n := NewNames()
			for _, p := range order {
				if rule, _ := n.collides(p); rule != "" {
					b.Fatal(rule)
				}
			}
		}
	})
}
