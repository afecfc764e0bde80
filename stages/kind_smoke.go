package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"go.opentelemetry.io/otel/attribute"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/pirpc"
	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing/phase"
	"piship.dev/piship/tracing/spankey"
)

// Smoke runs the distribution's smoke tests against a payload, in parallel,
// each with its own throwaway HOME and state directory.
type Smoke struct{}

func (Smoke) Name() string    { return "smoke" }
func (Smoke) Version() string { return "2" }
func (Smoke) Doc() string {
	return "Runs each `smoke \"<name>\" { args expect timeout }` test of distribution.hcl: the payload's bin/<command> with args, in its own throwaway HOME, " +
		"XDG and PISHIP_STATE_HOME directories, all tests in parallel; the trimmed combined output must match expect (${version} in it is the release version, matched literally; the program gets it as PISHIP_APP_VERSION). With vendored Pi packages, one more test, " +
		"pi-packages: Pi in RPC mode, offline, must list a command from each package's directory (get_commands), proving its extensions loaded. Any failure fails the stage."
}

// SmokeConfig is smoke's configuration.
type SmokeConfig struct {
	Payload      string `cty:"payload" required:"true" doc:"the payload root"`
	Distribution string `cty:"distribution" required:"true" doc:"the distribution directory (its smoke tests)"`
	Version      string `cty:"version" doc:"the release version (release_inputs' version): the program's PISHIP_APP_VERSION, and what ${version} in expect stands for; empty: resolved as release_inputs resolves it without flags"`
	Target       string `cty:"target" doc:"the payload's target; one this host cannot run records every test not-run with the reason; empty: the host's"`
}

// SmokeOutputs are smoke's outputs.
type SmokeOutputs struct {
	Results string `cty:"results" doc:"JSON list of {name, result} in declaration order"`
	Passed  int    `cty:"passed" doc:"smoke tests that passed"`
	NotRun  int    `cty:"not_run" doc:"smoke tests not run: the payload is for a target this host cannot run"`
	Failed  int    `cty:"failed" doc:"smoke tests that failed"`
}

// Run implements stage.Typed.
func (Smoke) Run(ctx context.Context, inv *stage.Invocation, cfg SmokeConfig) (SmokeOutputs, error) {
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, cfg.Distribution))
	if err != nil {
		return SmokeOutputs{}, err
	}
	version, err := releaseVersion(ctx, d, cfg.Version)
	if err != nil {
		return SmokeOutputs{}, err
	}
	target, err := configTarget(cfg.Target)
	if err != nil {
		return SmokeOutputs{}, err
	}
	bin := filepath.Join(cfg.Payload, "bin", d.Command)
	tests := d.Smoke
	// With vendored Pi packages, one more: each package's extensions load.
	var pkgs []distribution.LockPiPackage
	if len(d.Packages) > 0 {
		lock, _, err := distribution.ReadLock(d.Dir)
		if err != nil {
			return SmokeOutputs{}, err
		}
		pkgs = lock.Packages
		tests = append(slices.Clone(tests), distribution.Smoke{Name: PiPackagesTest, Args: slices.Clone(pirpc.Args)})
	}
	results := make([]releasejson.TestResult, len(tests))
	if host := distribution.HostTarget(); target != host {
		// Never passed for a test that did not run.
		why := fmt.Sprintf("the payload is for %s and this host is %s", target, host)
		for i, t := range tests {
			results[i] = releasejson.TestResult{Name: t.Name, Result: releasejson.TestNotRun, Reason: why}
		}
		fmt.Fprintf(inv.Log, "%s: %s not run: %s\n", inv.Name, canon.Count(len(tests), "smoke test"), why)
		data, _ := json.Marshal(results)
		return SmokeOutputs{Results: string(data), NotRun: len(tests)}, nil
	}
	problems := make([]*smokeFailure, len(tests))
	// Every test runs, each in its own worker, whatever the others do.
	_ = parallel.ForEach(context.Background(), len(tests), len(tests), func(i int) error {
		t := tests[i]
		results[i] = releasejson.TestResult{Name: t.Name, Result: releasejson.TestPassed}
		// One span per test, whose TRACEPARENT the program receives.
		tctx, ph := phase.Start(ctx, "smoke "+t.Name)
		var f *smokeFailure
		code := 0
		if i >= len(d.Smoke) {
			f = smokePiPackages(tctx, bin, cfg.Payload, pkgs)
		} else {
			f, code = runSmoke(tctx, bin, version, t.Args, receipt.ExpandExpect(t.Expect, version), t.Timeout)
		}
		var ferr error
		if f != nil {
			results[i].Result = releasejson.TestFailed
			problems[i] = f
			ferr = errors.New(f.why)
		}
		ph.Set(attribute.String(spankey.Verdict, results[i].Result), attribute.StringSlice(spankey.SmokeArgs, t.Args),
			attribute.Int(spankey.ExitCode, code))
		ph.End(ferr)
		return nil
	})
	data, _ := json.Marshal(results)
	failed := 0
	for _, f := range problems {
		if f != nil {
			failed++
		}
	}
	var diags hcl.Diagnostics
	for i, f := range problems {
		if f != nil {
			diags = append(diags, f.diagnostic(d, tests[i], canon.Of(failed, len(tests), "smoke test")+" failed"))
		}
	}
	if len(diags) > 0 {
		return SmokeOutputs{}, diag.NewError(errcode.SmokeFailed, diags)
	}
	return SmokeOutputs{Results: string(data), Passed: len(results), Failed: 0}, nil
}

// PiPackagesTest names the smoke test a release with vendored Pi packages
// runs besides its own: each package's extensions must load in Pi.
const PiPackagesTest = "pi-packages"

// smokePiPackages is the pi-packages test: pirpc.CheckPackages in a
// smoke test's throwaway home, its failure reported as a smoke test's.
func smokePiPackages(ctx context.Context, bin, payload string, pkgs []distribution.LockPiPackage) *smokeFailure {
	f := pirpc.CheckPackages(ctx, bin, payload, pkgs, smokeEnv)
	if f == nil {
		return nil
	}
	return &smokeFailure{why: f.Why, output: f.Output, run: pirpc.Run(bin), fix: f.Fix}
}

// smokeFailure is why one smoke test failed: what happened and the
// output the program printed.
type smokeFailure struct {
	why    string // "its output does not match \"...\"", "exit status 3", "timed out after 5m0s"
	output string // trimmed combined stdout and stderr
	run    string // the command as run, for the report
	fix    string
}

// diagnostic is f at the test's smoke block in distribution.hcl: the
// output as indented lines (not a quoted string), then what to do.
func (f *smokeFailure) diagnostic(d *distribution.Distribution, t distribution.Smoke, tally string) *hcl.Diagnostic {
	var b strings.Builder
	if f.output == "" {
		fmt.Fprintf(&b, "%s printed nothing.\n", f.run)
	} else {
		fmt.Fprintf(&b, "%s printed:\n", f.run)
		for _, l := range strings.Split(clip(f.output), "\n") {
			fmt.Fprintf(&b, "    | %s\n", strings.TrimRight(l, "\r"))
		}
	}
	b.WriteString(f.fix)
	r := d.Range("smoke." + t.Name)
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("smoke test %s failed: %s (%s)", t.Name, f.why, tally),
		Detail:   b.String(),
		Subject:  &r,
	}
}

// runSmoke runs one test and returns why it failed, or nil, and the
// program's exit code (-1 when it did not run or was killed).
func runSmoke(ctx context.Context, bin, version string, args []string, expect string, timeout time.Duration) (*smokeFailure, int) {
	f, cmd := runSmokeCmd(ctx, bin, version, args, expect, timeout)
	if cmd == nil || cmd.ProcessState == nil {
		return f, -1
	}
	return f, cmd.ProcessState.ExitCode()
}

func runSmokeCmd(ctx context.Context, bin, version string, args []string, expect string, timeout time.Duration) (*smokeFailure, *exec.Cmd) {
	if timeout <= 0 {
		timeout = 300 * time.Second
	}
	run := strings.Join(append([]string{filepath.Base(bin)}, args...), " ")
	re, err := regexp.Compile(expect)
	if err != nil {
		return &smokeFailure{why: fmt.Sprintf("expect %q is not a valid regular expression: %v", expect, err), run: run,
			fix: "Write expect as an RE2 regular expression."}, nil
	}
	home, err := os.MkdirTemp("", "piship-smoke-*")
	if err != nil {
		return &smokeFailure{why: err.Error(), run: run, fix: "Check the temporary directory (TMPDIR) is writable."}, nil
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// The program is given its release version as an installed copy's
	// launcher gives it.
	cmd.Env = phase.ChildEnv(ctx, append(smokeEnv(home), receipt.EnvAppVersion+"="+version))
	cmd.Dir = home
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 5 * time.Second
	runErr := proc.Run(cmd)
	got := strings.TrimSpace(buf.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return &smokeFailure{why: fmt.Sprintf("timed out after %s", timeout), output: got, run: run,
			fix: "Make the program finish, or give the test a longer timeout."}, cmd
	case runErr != nil:
		return &smokeFailure{why: runErr.Error(), output: got, run: run,
			fix: "Fix the program, or the test's args: a smoke test passes when the program exits 0 and its output matches expect."}, cmd
	case !re.MatchString(got):
		return &smokeFailure{why: fmt.Sprintf("its output does not match %q", expect), output: got, run: run,
			fix: "Fix the program, or the test's expect: an RE2 regular expression matched against the trimmed combined stdout and stderr."}, cmd
	}
	return nil, cmd
}

// smokeEnv is the parent environment with every per-user location moved
// into home, so tests neither read nor change the user's state.
func smokeEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "USERPROFILE", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "PISHIP_STATE_HOME", "TMPDIR", receipt.EnvAppVersion:
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "USERPROFILE="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"PISHIP_STATE_HOME="+filepath.Join(home, "state"), "TMPDIR="+home)
}

// clip keeps the first 40 lines and 4,000 bytes of a test's output.
func clip(s string) string {
	const maxLines, maxBytes = 40, 4000
	cut := false
	if lines := strings.SplitAfter(s, "\n"); len(lines) > maxLines {
		s, cut = strings.Join(lines[:maxLines], ""), true
	}
	if len(s) > maxBytes {
		s, cut = s[:maxBytes], true
	}
	if cut {
		s = strings.TrimRight(s, "\n") + "\n..."
	}
	return s
}
