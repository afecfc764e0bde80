// Package npm is what piship needs from node and npm on the build host:
// their versions (part of the runtime cache key), the host's node-style
// platform, architecture and libc (ditto), the registry npm is configured
// for (the release source gate), and `npm ci` to install a runtime's locked
// dependency tree into a runtime cache entry.
//
// node and npm are found on PATH. Nothing here talks to a registry itself;
// Ci runs npm with --prefer-offline, so a warm npm cache installs without
// the network.
package npm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"piship.dev/piship/stages/proc"
	"piship.dev/piship/tracing/phase"
)

// ciArgs are the arguments Ci gives npm.
var ciArgs = []string{"ci", "--omit=dev", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"}

var versions struct {
	mu        sync.Mutex
	node, npm string
	ok        bool
}

// Versions returns the major.minor versions of node and npm ("20.20",
// "11.19"), as `node --version` and `npm --version` report them. The first
// successful answer is memoised for the life of the process; a failure
// (no node, a cancelled ctx) is not, so a later call tries again.
//
// npm's version is read from the package.json of the npm that `npm` on
// PATH runs when that is the standard layout (npm -> .../node_modules/npm/
// bin/npm-cli.js, what `npm --version` prints), which saves starting npm
// (~0.3 s); otherwise npm is run.
func Versions(ctx context.Context) (node, npm string, err error) {
	versions.mu.Lock()
	defer versions.mu.Unlock()
	if versions.ok {
		return versions.node, versions.npm, nil
	}
	var nodeErr, npmErr error
	var wg sync.WaitGroup
	wg.Go(func() { node, nodeErr = nodeVersion(ctx) })
	wg.Go(func() { npm, npmErr = npmVersion(ctx) })
	wg.Wait()
	if err := errors.Join(nodeErr, npmErr); err != nil {
		return "", "", err
	}
	versions.node, versions.npm, versions.ok = node, npm, true
	return node, npm, nil
}

func nodeVersion(ctx context.Context) (string, error) {
	out, err := output(ctx, "node", "--version")
	if err != nil {
		return "", err
	}
	return majorMinor("node", out)
}

func npmVersion(ctx context.Context) (string, error) {
	if v, ok := npmVersionFromPackage(); ok {
		return majorMinor("npm", v)
	}
	out, err := output(ctx, "npm", "--version")
	if err != nil {
		return "", err
	}
	return majorMinor("npm", out)
}

// npmVersionFromPackage reads the version of the npm that `npm` on PATH
// runs, if it is a link to (or is) .../npm/bin/npm-cli.js of a package
// named npm.
func npmVersionFromPackage() (string, bool) {
	p, err := exec.LookPath("npm")
	if err != nil {
		return "", false
	}
	p, err = filepath.EvalSymlinks(p)
	if err != nil || filepath.Base(p) != "npm-cli.js" || filepath.Base(filepath.Dir(p)) != "bin" {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p)), "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct{ Name, Version string }
	if json.Unmarshal(data, &pkg) != nil || pkg.Name != "npm" || pkg.Version == "" {
		return "", false
	}
	return pkg.Version, true
}

// majorMinor turns "v20.20.2\n" or "11.19.1" into "20.20" / "11.19".
func majorMinor(tool, out string) (string, error) {
	v := strings.TrimPrefix(strings.TrimSpace(out), "v")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("%s --version printed %q: want a version such as 1.2.3", tool, strings.TrimSpace(out))
	}
	for _, p := range parts[:2] {
		if _, err := strconv.ParseUint(p, 10, 32); err != nil {
			return "", fmt.Errorf("%s --version printed %q: want a version such as 1.2.3", tool, strings.TrimSpace(out))
		}
	}
	return parts[0] + "." + parts[1], nil
}

// output runs a short command and returns its stdout.
func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := proc.Output(cmd)
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), ctx.Err())
		}
		return "", fmt.Errorf("%s %s: %v%s", name, strings.Join(args, " "), err, tailNote(stderr.Bytes()))
	}
	return string(out), nil
}

// env is the environment npm runs with: the process's, with npm's update
// check turned off (it would reach the registry and print advice).
func env() []string {
	return append(os.Environ(), "npm_config_update_notifier=false")
}

// Ci runs `npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit
// --no-fund` in dir, which holds package.json and package-lock.json, with
// the process's environment plus npm_config_update_notifier=false. npm's
// stdout and stderr are copied to log (nil: discarded) and their end is
// kept: a failure returns an error with the last lines. Cancelling ctx
// kills npm (on unix its whole process group, so no install script or
// child node outlives it; elsewhere npm itself) and returns an error that
// wraps ctx.Err(). On Linux npm also dies if piship is killed (see
// stages/proc).
//
// `file:` dependencies in the lock are resolved relative to dir: a
// dependency "file:vendor/x-1.0.0.tgz" is read from dir/vendor/x-1.0.0.tgz.
// So a caller that installs into a fresh directory (a runtime cache entry)
// copies every such tarball to the same relative path under dir first —
// and may delete it after Ci returns, so that the entry holds what npm
// installed rather than its inputs. Depend on tarballs (`npm pack`), not
// directories: npm installs a `file:` directory as a symbolic link to it,
// which points out of dir and which the runtime cache refuses.
func Ci(ctx context.Context, dir string, log io.Writer, extra ...string) (err error) {
	// npm ci is the runtime stage's main cost: its own span, which npm's
	// TRACEPARENT names.
	ctx, ph := phase.Start(ctx, "npm ci")
	defer func() { ph.End(err) }()
	cmd := exec.CommandContext(ctx, "npm", append(slices.Clone(ciArgs), extra...)...)
	cmd.Dir = dir
	cmd.Env = phase.ChildEnv(ctx, env())
	tail := &tailBuffer{limit: 64 << 10}
	var w io.Writer = tail
	if log != nil {
		w = io.MultiWriter(tail, log)
	}
	// One writer value for both: exec then writes from one goroutine at a
	// time.
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 10 * time.Second
	err = proc.Run(cmd)
	if ctx.Err() != nil {
		return fmt.Errorf("npm ci in %s: %w", dir, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("npm ci in %s failed: %v%s", dir, err, npmErrorNote(tail.Bytes()))
	}
	return nil
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.limit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.limit:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	if len(t.buf) > t.limit {
		return t.buf[len(t.buf)-t.limit:]
	}
	return t.buf
}

// npmErrorNote picks npm's error report out of its output for an error
// message: the block that starts at "npm error code" (npm 10+; "npm ERR!
// code" before) through the message after it, up to the next empty line,
// which is what went wrong (a usage error is followed by the whole usage
// text), and the line naming the debug log. Without such a block it is the tail of the output.
func npmErrorNote(out []byte) string {
	lines := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n")
	var note []string
	for i, l := range lines {
		prefix, ok := "", false
		for _, p := range []string{"npm error", "npm ERR!"} {
			if strings.HasPrefix(l, p+" code ") {
				prefix, ok = p, true
			}
		}
		if !ok {
			continue
		}
		note = append(note, l)
		body := false // inside the message that follows the code line
		for _, l := range lines[i+1:] {
			blank := strings.TrimSpace(strings.TrimPrefix(l, prefix)) == ""
			if !strings.HasPrefix(l, prefix) || blank && body || len(note) >= 20 {
				break
			}
			if !blank {
				body = true
				note = append(note, l)
			}
		}
		for _, l := range lines[i:] {
			if strings.Contains(l, "A complete log of this run can be found in") {
				note = append(note, l)
			}
		}
		return "\n" + strings.Join(note, "\n")
	}
	return tailNote(out)
}

// tailNote is the end of a command's output for an error message: its
// last 30 lines, at most 4 KiB.
func tailNote(out []byte) string {
	s := strings.TrimRight(string(out), "\n\r\t ")
	if s == "" {
		return ""
	}
	if len(s) > 4<<10 {
		s = s[len(s)-4<<10:]
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return "\n" + strings.Join(lines, "\n")
}
