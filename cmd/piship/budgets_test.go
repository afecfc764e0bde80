package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/stages/budgets"
)

// TestBudgetsCheckHello is make test's budgets check of the offline
// example: hello released as it is passes its checked-in budgets.hcl; a
// release with 20% more payload files fails with BUDGET_EXCEEDED naming
// the figure, and --record accepts it.
func TestBudgetsCheckHello(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	checkedIn, err := os.ReadFile(budgets.Path(filepath.Join("..", "..", "testdata", "distributions", "hello")))
	if err != nil {
		t.Fatalf("hello has no checked-in budgets: %v", err)
	}

	// No release yet: the check says to release first.
	code, _, stderr := piship(t, env, "budgets", "check", dir)
	if code != exitFailed || !strings.Contains(stderr, "CONFIG_UNAVAILABLE: no release of hello in "+filepath.Join(dir, "dist", "releases")) || !strings.Contains(stderr, "run piship release") {
		t.Fatalf("budgets check before a release: exit %d\n%s", code, stderr)
	}

	if code, _, stderr := piship(t, env, "release", dir); code != exitOK {
		t.Fatalf("release: %d\n%s", code, stderr)
	}
	code, out, stderr := piship(t, env, "budgets", "check", dir)
	if code != exitOK || !strings.Contains(stderr, "hello-1.0.0 within its budgets (1 target: linux-x64)") {
		t.Fatalf("budgets check of hello against its checked-in budgets: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"linux-x64: payload files   15, budget 15 (+0.0%): ok",
		"linux-x64: installed files 22, budget 22 (+0.0%): ok",
		"linux-x64: archive bytes   ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("budgets check lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^  linux-x64: timing release: \d+ ms, [0-9.]+x the recorded \d+ ms.*; reported, not gated$`).MatchString(out) {
		t.Errorf("budgets check reports no release timing ratio:\n%s", out)
	}
	if code, _, stderr := piship(t, env, "budgets", "check", dir, "--target", "darwin-arm64"); code != exitUsage || !strings.Contains(stderr, "CONFIG_INVALID: --target darwin-arm64") {
		t.Errorf("--target of a target the release lacks: exit %d\n%s", code, stderr)
	}

	// 20% more files: three more resources in a payload of 15.
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		writeFile(t, filepath.Join(dir, "resources"), n, "more "+n+"\n")
	}
	if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
		t.Fatalf("lock: %d\n%s", code, stderr)
	}
	if code, _, stderr := piship(t, env, "release", dir); code != exitOK {
		t.Fatalf("release with 20%% more files: %d\n%s", code, stderr)
	}
	code, out, stderr = piship(t, env, "budgets", "check", dir)
	if code != exitFailed || !strings.Contains(stderr, "BUDGET_EXCEEDED: ") ||
		!strings.Contains(stderr, "linux-x64 payload files 18, budget 15 (+20.0%)") || !strings.Contains(stderr, "piship budgets check --record") {
		t.Fatalf("budgets check of 20%% more files: exit %d, want 1 with BUDGET_EXCEEDED\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "linux-x64: payload files   18, budget 15 (+20.0%): OVER by more than 10%") {
		t.Errorf("the report does not mark the figure over:\n%s", out)
	}
	if b, _ := os.ReadFile(budgets.Path(dir)); string(b) != string(checkedIn) {
		t.Errorf("a failing check changed budgets.hcl:\n%s", b)
	}

	// --record accepts it: the file says 18, and the check passes again.
	if code, _, stderr := piship(t, env, "budgets", "check", dir, "--record"); code != exitOK || !strings.Contains(stderr, "recorded the budgets of 1 target (linux-x64) in "+budgets.Path(dir)) {
		t.Fatalf("--record: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(budgets.Path(dir)); !strings.Contains(string(b), "payload_files   = 18") {
		t.Errorf("--record wrote:\n%s", b)
	}
	if code, out, stderr := piship(t, env, "budgets", "check", dir); code != exitOK {
		t.Errorf("budgets check after --record: exit %d\n%s%s", code, out, stderr)
	}
}
