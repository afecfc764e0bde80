package semver

import "testing"

func TestCompareOrdersByPrecedence(t *testing.T) {
	// The SemVer 2.0 example chain, each smaller than the next.
	chain := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.9.0", "1.10.0", "2.0.0"}
	for i := 0; i+1 < len(chain); i++ {
		a, err := Parse(chain[i])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Parse(chain[i+1])
		if Compare(a, b) != -1 || Compare(b, a) != 1 || Compare(a, a) != 0 {
			t.Errorf("%s < %s not held", chain[i], chain[i+1])
		}
	}
	x, _ := Parse("1.0.0+a")
	y, _ := Parse("1.0.0+b")
	if Compare(x, y) != 0 {
		t.Error("build metadata has precedence")
	}
}

func TestParseIsStrict(t *testing.T) {
	for _, s := range []string{"1.0", "01.0.0", "1.0.0-01", "1.0.0-", "v1.0.0", "1.0.0+", "1.0.0-a..b"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}
