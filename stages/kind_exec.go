package stages

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/proc"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing/phase"
)

// maxCapture bounds what exec keeps of a command's stdout and stderr.
const maxCapture = 1 << 20

// Exec runs a command. It is cacheable when `cache = true`: the key covers
// the command, environment, directory and the contents of the declared
// input files, and a hit restores the declared output files.
type Exec struct{}

func (Exec) Name() string    { return "exec" }
func (Exec) Version() string { return "1" }
func (Exec) Doc() string {
	return "Runs a command (no shell unless you call one). A non-zero exit fails the stage with the end of stderr. " +
		"With cache = true the result is served from the action cache while the command, env, dir and the contents of `inputs` are unchanged; `outputs` are restored on a hit."
}

// ExecConfig is the configuration of an exec stage.
type ExecConfig struct {
	Command []string          `cty:"command" required:"true" doc:"program and arguments, e.g. [\"go\", \"build\", \"./...\"]"`
	Env     map[string]string `cty:"env" doc:"variables added to the inherited environment"`
	Dir     string            `cty:"dir" doc:"working directory, relative to the pipeline file (default: its directory)"`
	Timeout string            `cty:"timeout" doc:"Go duration, e.g. \"90s\"; the command is killed when it passes"`
	Inputs  []string          `cty:"inputs" doc:"files, directories or globs (** allowed) whose contents are part of the cache key"`
	Outputs []string          `cty:"outputs" doc:"files the command writes, relative to dir; hashed into the outputs output and restored on a cache hit"`
	Cache   bool              `cty:"cache" doc:"serve the result from the action cache when nothing it depends on changed (default false)"`
	Echo    bool              `cty:"echo" doc:"also show the command's output as it runs, each line prefixed with the stage name (default false)"`
}

// ExecOutputs are the outputs of an exec stage.
type ExecOutputs struct {
	ExitCode int               `cty:"exit_code" doc:"the command's exit status"`
	Stdout   string            `cty:"stdout" doc:"standard output, trimmed, at most 1 MiB"`
	Stderr   string            `cty:"stderr" doc:"standard error, at most its last 1 MiB"`
	Outputs  map[string]string `cty:"outputs" doc:"declared output path -> sha256"`
}

// checkExec validates c and resolves its working directory and timeout.
func checkExec(inv *stage.Invocation, c ExecConfig) (dir string, timeout time.Duration, err error) {
	if c.Dir == "" {
		c.Dir = "."
	}
	dir = stage.Resolve(inv.Dir, c.Dir)
	if len(c.Command) == 0 || c.Command[0] == "" {
		return "", 0, errcode.New(errcode.ConfigInvalid, "command is empty: give at least the program, e.g. command = [\"make\"]")
	}
	if t := c.Timeout; t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return "", 0, errcode.Newf(errcode.ConfigInvalid, "timeout %q is not a positive duration such as \"30s\" or \"5m\"", t)
		}
		timeout = d
	}
	return dir, timeout, nil
}

// CacheSwitch implements stage.CacheSwitch: without cache = true an exec
// stage is not cacheable, whatever its command.
func (Exec) CacheSwitch() string { return "cache" }

// CacheSpec implements stage.TypedCacheable.
func (Exec) CacheSpec(inv *stage.Invocation, c ExecConfig) (stage.CacheSpec, bool, error) {
	dir, _, err := checkExec(inv, c)
	if err != nil || !c.Cache {
		return stage.CacheSpec{}, false, err
	}
	files, err := ExpandFiles(dir, c.Inputs)
	if err != nil {
		return stage.CacheSpec{}, false, errcode.Newf(errcode.ConfigInvalid, "inputs: %v", err)
	}
	outs := make([]string, len(c.Outputs))
	for i, o := range c.Outputs {
		outs[i] = path.Clean(filepath.ToSlash(o))
	}
	return stage.CacheSpec{Inputs: files, Outputs: outs, Dir: dir}, true, nil
}

// Run implements stage.Typed.
func (Exec) Run(ctx context.Context, inv *stage.Invocation, c ExecConfig) (ExecOutputs, error) {
	dir, timeout, err := checkExec(inv, c)
	if err != nil {
		return ExecOutputs{}, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.Command[0], c.Command[1:]...)
	cmd.Dir = dir
	// The child joins the trace under this stage (TRACEPARENT); the
	// stage's own env may still set anything, that too.
	cmd.Env = phase.ChildEnv(ctx, os.Environ())
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+c.Env[k])
	}
	stdout := &headBuffer{limit: maxCapture}
	stderr := &tailBuffer{limit: maxCapture}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.Echo && inv.Log != nil {
		out := &proc.LinePrefixer{W: inv.Log, Prefix: inv.Name + " | "}
		defer out.Flush()
		cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout, out), io.MultiWriter(stderr, out)
	}
	// Children that keep the pipes open must not hold the stage forever.
	cmd.WaitDelay = 5 * time.Second
	runErr := proc.Run(cmd)
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if runErr != nil {
		var exitErr *exec.ExitError
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			return ExecOutputs{}, errcode.Newf(CodeExecTimeout, "%s timed out after %s%s: raise the stage's timeout, or find why it hangs", c.Command[0], timeout, tailNote(stderr.String()))
		case ctx.Err() != nil:
			return ExecOutputs{}, fmt.Errorf("%s was stopped", c.Command[0])
		case errors.As(runErr, &exitErr):
			return ExecOutputs{}, errcode.Newf(CodeExecFailed, "%s exited with status %d%s", c.Command[0], code, tailNote(stderr.String()))
		default:
			return ExecOutputs{}, errcode.Newf(CodeExecFailed, "cannot run %s: %v: install it, or give its path as the first word of command", c.Command[0], runErr)
		}
	}
	hashes := map[string]string{}
	for _, o := range c.Outputs {
		sum, err := cache.HashFile(stage.Resolve(dir, o))
		if err != nil {
			return ExecOutputs{}, errcode.Newf(CodeExecFailed, "declared output %s was not written by the command: %v: write it, or take it out of outputs", o, err)
		}
		hashes[o] = sum
	}
	return ExecOutputs{
		ExitCode: code,
		Stdout:   strings.TrimSpace(stdout.String()),
		Stderr:   stderr.String(),
		Outputs:  hashes,
	}, nil
}

// The codes of an exec stage's failure, first on the run's last line: the
// command failed (a non-zero status, it could not start, an output it
// declares is missing), or it ran past its timeout.
const (
	CodeExecFailed  = errcode.ExecFailed
	CodeExecTimeout = errcode.ExecTimeout
)

// tailNote returns the last lines of stderr for an error message.
func tailNote(stderr string) string {
	s := strings.TrimSpace(stderr)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	t := strings.Join(lines, " | ")
	if len(t) > 600 {
		t = "..." + t[len(t)-600:]
	}
	return ": " + t
}

// headBuffer keeps the first limit bytes written to it.
type headBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *headBuffer) String() string { return strings.ToValidUTF8(b.buf.String(), "\uFFFD") }

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string { return strings.ToValidUTF8(string(b.buf), "\uFFFD") }
