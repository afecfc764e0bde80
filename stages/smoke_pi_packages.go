package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/proc"
	"piship.dev/piship/tracing/phase"
)

// PiPackagesTest names the smoke test a release with vendored Pi packages
// runs besides its own: each package's extensions must load in Pi.
const PiPackagesTest = "pi-packages"

// piPackagesTimeout bounds the test: Pi compiles every extension (jiti).
const piPackagesTimeout = 120 * time.Second

// smokePiPackages proves each vendored Pi package's extensions loaded: it
// starts the payload's bin/<command> (which hands every package to Pi
// with -e, as the installed launcher does) in Pi's RPC mode, offline, in
// a throwaway home, asks for the command list (get_commands: no model is
// needed) and wants, for every package, a command whose source file lies
// in the package's directory. Pi reports an extension that fails to load
// on stderr ("Failed to load extension"), which fails the test too. A
// package that registers no command cannot be proven loaded this way and
// fails, saying so.
func smokePiPackages(ctx context.Context, bin, payload string, pkgs []distribution.LockPiPackage) *smokeFailure {
	run := filepath.Base(bin) + " --mode rpc --no-session <<< get_commands"
	home, err := os.MkdirTemp("", "piship-smoke-*")
	if err != nil {
		return &smokeFailure{why: err.Error(), run: run, fix: "Check the temporary directory (TMPDIR) is writable."}
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, piPackagesTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--mode", "rpc", "--no-session")
	cmd.Env = phase.ChildEnv(ctx, append(smokeEnv(home), "PI_OFFLINE=1"))
	cmd.Dir = home
	cmd.Stdin = strings.NewReader(`{"id":"piship","type":"get_commands"}` + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	runErr := proc.Run(cmd)
	both := strings.TrimSpace(out.String() + "\n" + errb.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return &smokeFailure{why: fmt.Sprintf("timed out after %s", piPackagesTimeout), output: both, run: run, fix: "Check that Pi starts in RPC mode with these packages."}
	case runErr != nil:
		return &smokeFailure{why: runErr.Error(), output: both, run: run, fix: "Pi did not start with the vendored packages: see its output."}
	case strings.Contains(errb.String(), "Failed to load extension"):
		return &smokeFailure{why: "Pi failed to load an extension", output: both, run: run, fix: "Fix or remove the package whose extension fails to load."}
	}
	var resp struct {
		Command string
		Success bool
		Data    struct {
			Commands []struct {
				Source     string
				SourceInfo struct{ Path string }
			}
		}
	}
	found := false
	for line := range strings.Lines(out.String()) {
		if json.Unmarshal([]byte(line), &resp) == nil && resp.Command == "get_commands" {
			found = true
			break
		}
	}
	if !found || !resp.Success {
		return &smokeFailure{why: "Pi did not answer get_commands", output: both, run: run, fix: "The program must be Pi (1.6 or later), which has an RPC mode."}
	}
	var missing []string
	for _, p := range pkgs {
		root := filepath.Join(payload, filepath.FromSlash(p.Root)) + string(filepath.Separator)
		ok := false
		for _, c := range resp.Data.Commands {
			if c.Source == "extension" && strings.HasPrefix(c.SourceInfo.Path, root) {
				ok = true
				break
			}
		}
		if !ok {
			missing = append(missing, p.Name+" "+p.Version)
		}
	}
	if len(missing) > 0 {
		return &smokeFailure{why: "no command of Pi's comes from " + strings.Join(missing, ", "), output: both, run: run,
			fix: "Each vendored package must load and register at least one command (that is how the release proves it loaded)."}
	}
	return nil
}
