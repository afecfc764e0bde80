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

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/proc"
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

func (Exec) Attrs() []Attr {
	return []Attr{
		{Name: "command", Type: cty.List(cty.String), Required: true, Doc: "program and arguments, e.g. [\"go\", \"build\", \"./...\"]"},
		{Name: "env", Type: cty.Map(cty.String), Doc: "variables added to the inherited environment"},
		{Name: "dir", Type: cty.String, Doc: "working directory, relative to the pipeline file (default: its directory)"},
		{Name: "timeout", Type: cty.String, Doc: "Go duration, e.g. \"90s\"; the command is killed when it passes"},
		{Name: "inputs", Type: cty.List(cty.String), Doc: "files, directories or globs (** allowed) whose contents are part of the cache key"},
		{Name: "outputs", Type: cty.List(cty.String), Doc: "files the command writes, relative to dir; hashed into the outputs output and restored on a cache hit"},
		{Name: "cache", Type: cty.Bool, Doc: "serve the result from the action cache when nothing it depends on changed (default false)"},
		{Name: "echo", Type: cty.Bool, Doc: "also show the command's output as it runs, each line prefixed with the stage name (default false)"},
	}
}

func (Exec) Outputs() []Output {
	return []Output{
		{Name: "exit_code", Type: cty.Number, Doc: "the command's exit status"},
		{Name: "stdout", Type: cty.String, Doc: "standard output, trimmed, at most 1 MiB"},
		{Name: "stderr", Type: cty.String, Doc: "standard error, at most its last 1 MiB"},
		{Name: "outputs", Type: cty.Map(cty.String), Doc: "declared output path -> sha256"},
	}
}

type execConfig struct {
	command []string
	env     map[string]string
	dir     string
	timeout time.Duration
	inputs  []string
	outputs []string
	cache   bool
	echo    bool
}

func decodeExec(inv *Invocation) (*execConfig, error) {
	c := &execConfig{
		command: stringList(inv.Get("command")),
		env:     stringMap(inv.Get("env")),
		dir:     Resolve(inv.Dir, stringOr(inv.Get("dir"), ".")),
		inputs:  stringList(inv.Get("inputs")),
		outputs: stringList(inv.Get("outputs")),
	}
	if len(c.command) == 0 || c.command[0] == "" {
		return nil, errors.New("CONFIG_INVALID: command is empty: give at least the program, e.g. command = [\"make\"]")
	}
	if t := stringOr(inv.Get("timeout"), ""); t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("CONFIG_INVALID: timeout %q is not a positive duration such as \"30s\" or \"5m\"", t)
		}
		c.timeout = d
	}
	if v := inv.Get("cache"); !v.IsNull() && v.True() {
		c.cache = true
	}
	if v := inv.Get("echo"); !v.IsNull() && v.True() {
		c.echo = true
	}
	return c, nil
}

// CacheSpec implements Cacheable.
func (Exec) CacheSpec(inv *Invocation) (CacheSpec, bool, error) {
	c, err := decodeExec(inv)
	if err != nil || !c.cache {
		return CacheSpec{}, false, err
	}
	files, err := ExpandFiles(c.dir, c.inputs)
	if err != nil {
		return CacheSpec{}, false, fmt.Errorf("CONFIG_INVALID: inputs: %v", err)
	}
	outs := make([]string, len(c.outputs))
	for i, o := range c.outputs {
		outs[i] = path.Clean(filepath.ToSlash(o))
	}
	return CacheSpec{Inputs: files, Outputs: outs, Dir: c.dir}, true, nil
}

// Run implements Kind.
func (Exec) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	c, err := decodeExec(inv)
	if err != nil {
		return nil, err
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, c.command[0], c.command[1:]...)
	cmd.Dir = c.dir
	cmd.Env = os.Environ()
	keys := make([]string, 0, len(c.env))
	for k := range c.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+c.env[k])
	}
	stdout := &headBuffer{limit: maxCapture}
	stderr := &tailBuffer{limit: maxCapture}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.echo && inv.Log != nil {
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
			return nil, fmt.Errorf("%s timed out after %s%s", c.command[0], c.timeout, tailNote(stderr.String()))
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s was stopped", c.command[0])
		case errors.As(runErr, &exitErr):
			return nil, fmt.Errorf("%s exited with status %d%s", c.command[0], code, tailNote(stderr.String()))
		default:
			return nil, fmt.Errorf("cannot run %s: %v", c.command[0], runErr)
		}
	}
	hashes := map[string]string{}
	for _, o := range c.outputs {
		sum, err := cache.HashFile(Resolve(c.dir, o))
		if err != nil {
			return nil, fmt.Errorf("declared output %s was not written by the command: %v", o, err)
		}
		hashes[o] = sum
	}
	return map[string]cty.Value{
		"exit_code": cty.NumberIntVal(int64(code)),
		"stdout":    cty.StringVal(strings.TrimSpace(stdout.String())),
		"stderr":    cty.StringVal(stderr.String()),
		"outputs":   mapVal(hashes),
	}, nil
}

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
