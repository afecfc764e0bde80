package errcode

import (
	"errors"
	"fmt"
	"go/build"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docRows reads the table of docs/errors.md: code -> its row.
func docRows(t *testing.T) map[string]Info {
	t.Helper()
	b, err := os.ReadFile("../../../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Info{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("docs/errors.md: a row of %d cells, want 4 (code, exit, meaning, what to do): %s", len(cells), line)
		}
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		code := strings.Trim(cells[0], "`")
		exit, err := strconv.Atoi(cells[1])
		if err != nil {
			t.Fatalf("docs/errors.md: %s: exit %q is not a number", code, cells[1])
		}
		if _, dup := rows[code]; dup {
			t.Errorf("docs/errors.md lists %s twice", code)
		}
		rows[code] = Info{Code: code, Exit: exit, Meaning: cells[2], Do: cells[3]}
	}
	return rows
}

// docs/errors.md lists every declared code with its exit code, meaning and
// what to do, and nothing else: checked both ways.
func TestErrorsMatchDocs(t *testing.T) {
	rows := docRows(t)
	seen := map[string]bool{}
	for _, d := range All() {
		if seen[d.Code] {
			t.Errorf("%s is declared twice", d.Code)
		}
		seen[d.Code] = true
		if d.Exit != ExitFailed && d.Exit != ExitUsage {
			t.Errorf("%s: exit %d, want %d or %d", d.Code, d.Exit, ExitFailed, ExitUsage)
		}
		if d.Meaning == "" || d.Do == "" {
			t.Errorf("%s: declared without a meaning or what to do", d.Code)
		}
		r, ok := rows[d.Code]
		if !ok {
			t.Errorf("%s is declared (stages/stage/errcode) but not in docs/errors.md", d.Code)
			continue
		}
		if r != d {
			t.Errorf("%s: docs/errors.md says\n  %+v\nthe declaration says\n  %+v", d.Code, r, d)
		}
	}
	for code := range rows {
		if !seen[code] {
			t.Errorf("docs/errors.md lists %s, which is not declared in stages/stage/errcode", code)
		}
	}
}

// The package links nothing but the standard library, on every GOOS: the
// engine, the graph and the launcher import it.
func TestStandardLibraryOnly(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
		ctx := build.Default
		ctx.GOOS = goos
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
				t.Errorf("errcode (%s) imports %s", goos, imp)
			}
		}
	}
}

type coded struct{ code string }

func (c coded) Error() string     { return c.code + ": something" }
func (c coded) ErrorCode() string { return c.code }

// The exit code comes from the code a value carries, through any wrapping,
// and never from the words of a message.
func TestExitReadsTheCodeNotTheMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{coded{ConfigInvalid}, ExitUsage},
		{fmt.Errorf("in x.hcl: %w", coded{LockInvalid}), ExitUsage},
		{coded{IntegrityFailed}, ExitFailed},
		{Errorf(UsageInvalid, "give one"), ExitUsage},
		{Errorf(UpdateFailed, "download: %w", coded{ConfigInvalid}), ExitFailed},
		{errors.New("CONFIG_INVALID: a message that only looks coded"), ExitFailed},
	} {
		if got := Exit(c.err); got != c.want {
			t.Errorf("Exit(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Errorf says a code once and keeps a different inner one.
func TestErrorfSaysTheCodeOnce(t *testing.T) {
	inner := New(IntegrityFailed, "archive refused at entry 1 (truncated): it ends early")
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{Errorf(IntegrityFailed, "%w", inner), "INTEGRITY_FAILED: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(ConfigInvalid, "%v", inner), "CONFIG_INVALID: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(IntegrityFailed, "x.tar.gz: %w", inner), "INTEGRITY_FAILED: x.tar.gz: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(UpdateFailed, "download: %w", inner), "UPDATE_FAILED: download: INTEGRITY_FAILED: archive refused at entry 1 (truncated): it ends early"},
		{Errorf(UpdateFailed, "%s", "INTEGRITY_FAILED: a string, not an error"), "UPDATE_FAILED: INTEGRITY_FAILED: a string, not an error"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// No code is written as a literal outside this package: a Go file (tests
// and comments aside) that spells "CONFIG_INVALID" or "CONFIG_INVALID: ..."
// in a string names errcode.ConfigInvalid instead, so every code has one
// declaration, one exit code and one line in docs/errors.md.
func TestCodesAreDeclaredOnlyHere(t *testing.T) {
	var alt []string
	for _, d := range All() {
		alt = append(alt, d.Code)
	}
	// A code in a string literal: the whole string, a string that starts
	// with "CODE: " (a message errcode should carry), or one that prints
	// "piship: CODE: " (a failure line). Prose naming a code ("a stale lock
	// is LOCK_INVALID") is not one; comments and identifiers are not
	// strings (go/scanner).
	codes := strings.Join(alt, "|")
	lit := regexp.MustCompile(`^(` + codes + `)($|: )|piship: (` + codes + `): `)
	root := "../../.."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Dir(p) == filepath.Join(root, "stages", "stage", "errcode") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		var sc scanner.Scanner
		sc.Init(fset.AddFile(p, -1, len(src)), src, nil, 0)
		for {
			pos, tok, text := sc.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.STRING {
				continue
			}
			if s, err := strconv.Unquote(text); err == nil && lit.MatchString(s) {
				t.Errorf("%s writes a code in a string literal: use stages/stage/errcode's constant (errcode.Newf, usageErr)\n\t%s", fset.Position(pos), text)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
