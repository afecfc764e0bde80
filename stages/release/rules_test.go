package release

import (
	"errors"
	"strings"
	"testing"
)

func TestValidPath(t *testing.T) {
	for p, want := range map[string]bool{
		"a": true, "node_modules/x/cli.js": true, "a/.b": true,
		"": false, ".": false, "..": false, "../../x": false, "a/../b": false, "./a": false, "/etc/passwd": false,
		"a//b": false, "a/": false, `a\b`: false, "C:x": false,
	} {
		if got := ValidPath(p); got != want {
			t.Errorf("ValidPath(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestParseSidecar(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for line, ok := range map[string]bool{
		sum + "  x.tar.gz\n": true, sum + " *x.tar.gz": true, sum + "  dist/releases/x.tar.gz": true,
		strings.ToUpper(sum) + "  x.tar.gz": true,
		sum:                                 false, // names no file
		sum + "  y.tar.gz":                  false,
		sum[:60] + "  x.tar.gz":             false,
		sum + "  x.tar.gz extra":            false,
	} {
		got, err := ParseSidecar([]byte(line), "x.tar.gz")
		if (err == nil) != ok || ok && got != sum {
			t.Errorf("ParseSidecar(%q) = %q, %v", line, got, err)
		}
	}
}

// Check keeps going past a failed rule where the later rules' inputs are
// known, so verify-release reports every problem, and its first failure
// is the one install and doctor report.
func TestCheckReportsEveryRuleItCan(t *testing.T) {
	files := map[string]string{}
	c := Check(Input{Files: files, Read: func(string) ([]byte, error) { return nil, errors.New("unreachable") }})
	e, ok := AsError(c.Err())
	if !ok || e.Rule != RuleRequired || !strings.Contains(e.Detail, "missing checksums.txt") {
		t.Fatalf("first failure %v", c.Err())
	}
	var rules []string
	for _, r := range c.Results {
		if r.Err != nil {
			rules = append(rules, string(r.Rule))
		}
	}
	if got := strings.Join(rules, " "); got != "required-files checksums release-json inventory-path lock target" {
		t.Fatalf("failed rules %s", got)
	}
}
