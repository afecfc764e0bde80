package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"piship.dev/piship/cache/parallel"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
)

// Smoke runs the distribution's smoke tests against a payload, in parallel,
// each with its own throwaway HOME and state directory.
type Smoke struct{}

func (Smoke) Name() string    { return "smoke" }
func (Smoke) Version() string { return "1" }
func (Smoke) Doc() string {
	return "Runs each `smoke \"<name>\" { args expect timeout }` test of distribution.hcl: the payload's bin/<command> with args, in its own throwaway HOME, " +
		"XDG and PISHIP_STATE_HOME directories, all tests in parallel; the trimmed combined output must match expect. Any failure fails the stage."
}

// SmokeConfig is smoke's configuration.
type SmokeConfig struct {
	Payload      string `cty:"payload" required:"true" doc:"the payload root"`
	Distribution string `cty:"distribution" required:"true"`
}

// SmokeOutputs are smoke's outputs.
type SmokeOutputs struct {
	Results string `cty:"results" doc:"JSON list of {name, result} in declaration order"`
	Passed  int    `cty:"passed"`
	Failed  int    `cty:"failed"`
}

// Run implements stage.Typed.
func (Smoke) Run(ctx context.Context, inv *stage.Invocation, cfg SmokeConfig) (SmokeOutputs, error) {
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, cfg.Distribution))
	if err != nil {
		return SmokeOutputs{}, err
	}
	bin := filepath.Join(cfg.Payload, "bin", d.Command)
	results := make([]release.TestResult, len(d.Smoke))
	problems := make([]string, len(d.Smoke))
	// Every test runs, each in its own worker, whatever the others do.
	_ = parallel.ForEach(context.Background(), len(d.Smoke), len(d.Smoke), func(i int) error {
		t := d.Smoke[i]
		results[i] = release.TestResult{Name: t.Name, Result: "passed"}
		if msg := runSmoke(ctx, bin, t.Args, t.Expect, t.Timeout); msg != "" {
			results[i].Result = "failed"
			problems[i] = fmt.Sprintf("smoke test %s failed: %s", t.Name, msg)
		}
		return nil
	})
	data, _ := json.Marshal(results)
	failed := 0
	var first string
	for _, p := range problems {
		if p != "" {
			failed++
			if first == "" {
				first = p
			}
		}
	}
	if failed > 0 {
		return SmokeOutputs{}, fmt.Errorf("%s (%d of %d smoke tests failed)", first, failed, len(results))
	}
	return SmokeOutputs{Results: string(data), Passed: len(results) - failed, Failed: failed}, nil
}

// runSmoke runs one test and returns why it failed, or "".
func runSmoke(ctx context.Context, bin string, args []string, expect string, timeout time.Duration) string {
	if timeout <= 0 {
		timeout = 300 * time.Second
	}
	re, err := regexp.Compile(expect)
	if err != nil {
		return fmt.Sprintf("expect %q is not a valid regular expression: %v", expect, err)
	}
	home, err := os.MkdirTemp("", "piship-smoke-*")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = smokeEnv(home)
	cmd.Dir = home
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.WaitDelay = 5 * time.Second
	runErr := proc.Run(cmd)
	got := strings.TrimSpace(buf.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return fmt.Sprintf("timed out after %s", timeout)
	case runErr != nil:
		return fmt.Sprintf("%v: %s", runErr, clip(got))
	case !re.MatchString(got):
		return fmt.Sprintf("output %q does not match %q", clip(got), expect)
	}
	return ""
}

// smokeEnv is the parent environment with every per-user location moved
// into home, so tests neither read nor change the user's state.
func smokeEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "USERPROFILE", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "PISHIP_STATE_HOME", "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "USERPROFILE="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"PISHIP_STATE_HOME="+filepath.Join(home, "state"), "TMPDIR="+home)
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
