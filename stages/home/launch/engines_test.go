package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/stages/home/receipt"
)

func TestSatisfies(t *testing.T) {
	for _, c := range []struct {
		v, rng string
		ok     bool
	}{
		{"22.19.0", ">=22.19.0", true}, {"22.18.9", ">=22.19.0", false}, {"22.23.5", ">=22.19", true},
		{"20.11.1", "^20.11 || >=22", true}, {"21.0.0", "^20.11 || >=22", false}, {"18.0.0", "^18", true},
		{"19.0.0", "^18", false}, {"0.2.5", "^0.2.3", true}, {"0.3.0", "^0.2.3", false},
		{"1.2.9", "~1.2.3", true}, {"1.3.0", "~1.2.3", false}, {"20.5.0", "20.x", true},
		{"21.0.0", "20.x", false}, {"18.5.0", "18 - 20", true}, {"20.9.0", "18 - 20", true},
		{"21.0.0", "18 - 20", false}, {"16.0.0", ">=14 <18", true}, {"18.0.0", ">=14 <18", false},
		{"22.1.0", "*", true}, {"20.0.0", "<=20", true}, {"21.0.0", "<=20", false},
		{"22.0.0-pre", ">=22", true},
	} {
		ok, valid := satisfies(c.v, c.rng)
		if !valid || ok != c.ok {
			t.Errorf("satisfies(%s, %q) = %v (valid %v), want %v", c.v, c.rng, ok, valid, c.ok)
		}
	}
	if _, valid := satisfies("22.0.0", ">=banana"); valid {
		t.Error("an unreadable range was judged")
	}
}

// fakeNode writes a node that prints version, and a payload whose entry
// package declares engines.
func fakeNode(t *testing.T, dir, version string) string {
	t.Helper()
	p := filepath.Join(dir, "node")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho v"+version+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckEnginesRemembersTheNode(t *testing.T) {
	payload := t.TempDir()
	pkg := filepath.Join(payload, "node_modules", "@scope", "app")
	if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@scope/app","engines":{"node":">=22.19.0"}}`), 0o644)
	rel := &receipt.Release{Version: "1.6.0", Payload: payload, Entry: "node_modules/@scope/app/dist/cli.js"}
	if got := entryEngines(payload, rel.Entry); got != ">=22.19.0" {
		t.Fatalf("entryEngines = %q", got)
	}
	bin, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	node := fakeNode(t, bin, "20.11.1")
	_, asked, err := CheckEngines("app", rel, node, state)
	if err == nil || !asked || !strings.Contains(err.Error(), "needs Node >=22.19.0") || !strings.Contains(err.Error(), "20.11.1") || receipt.CodeOf(err) != receipt.CodeConfigInvalid {
		t.Fatalf("an old node: %v (asked %v)", err, asked)
	}
	// The same node again: its version is remembered, not asked.
	if _, asked, err = CheckEngines("app", rel, node, state); err == nil || asked {
		t.Fatalf("second check: %v (asked %v)", err, asked)
	}
	// Replaced by a newer one at the same path: asked again, and accepted.
	os.Remove(node)
	node = fakeNode(t, bin, "22.23.5")
	v, asked, err := CheckEngines("app", rel, node, state)
	if err != nil || !asked || v != "22.23.5" {
		t.Fatalf("a new node: %q %v %v", v, asked, err)
	}
	if _, asked, err = CheckEngines("app", rel, node, state); err != nil || asked {
		t.Fatalf("remembered: %v %v", asked, err)
	}
	// A node that prints no version is not judged; an entry without
	// engines asks nothing.
	os.WriteFile(filepath.Join(bin, "odd"), []byte("#!/bin/sh\necho hello\n"), 0o755)
	if v, _, err := CheckEngines("app", rel, filepath.Join(bin, "odd"), ""); err != nil || v != "" {
		t.Fatalf("odd node: %q %v", v, err)
	}
	rel.Entry = "cli.js"
	if v, asked, err := CheckEngines("app", rel, node, state); err != nil || asked || v != "" {
		t.Fatalf("no engines: %q %v %v", v, asked, err)
	}
}
