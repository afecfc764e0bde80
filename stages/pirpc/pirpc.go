// Package pirpc drives Pi through its RPC mode (--mode rpc: JSON requests
// on stdin, one JSON answer a line on stdout) to prove that a release's
// vendored Pi packages load: CheckPackages starts the payload's command,
// which hands every package to Pi with -e as the installed launcher does,
// asks for the command list (get_commands, which needs no model) and
// wants, for every package, a command whose source file lies in the
// package's directory. The smoke stage runs it as the pi-packages test.
package pirpc

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

// Timeout bounds the check: Pi compiles every extension (jiti).
const Timeout = 120 * time.Second

// Args start Pi in RPC mode without a session file.
var Args = []string{"--mode", "rpc", "--no-session"}

// Run is the check's command as a report shows it.
func Run(bin string) string {
	return filepath.Base(bin) + " " + strings.Join(Args, " ") + " <<< get_commands"
}

// Failure is why the check failed: what happened, Pi's output (trimmed
// stdout, then stderr) and what to do.
type Failure struct {
	Why, Output, Fix string
}

// CheckPackages proves each of pkgs (rooted in payload) loaded in the Pi
// that bin starts: offline (PI_OFFLINE=1), in a throwaway home whose
// environment env gives, within Timeout. Pi reports an extension that
// fails to load on stderr ("Failed to load extension"), which fails the
// check too. A package that registers no command cannot be proven loaded
// this way and fails, saying so. It returns nil when every package loaded.
func CheckPackages(ctx context.Context, bin, payload string, pkgs []distribution.LockPiPackage, env func(home string) []string) *Failure {
	home, err := os.MkdirTemp("", "piship-smoke-*")
	if err != nil {
		return &Failure{Why: err.Error(), Fix: "Check the temporary directory (TMPDIR) is writable."}
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, Args...)
	cmd.Env = phase.ChildEnv(ctx, append(env(home), "PI_OFFLINE=1"))
	cmd.Dir = home
	cmd.Stdin = strings.NewReader(`{"id":"piship","type":"get_commands"}` + "\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	runErr := proc.Run(cmd)
	both := strings.TrimSpace(out.String() + "\n" + errb.String())
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return &Failure{Why: fmt.Sprintf("timed out after %s", Timeout), Output: both, Fix: "Check that Pi starts in RPC mode with these packages."}
	case runErr != nil:
		return &Failure{Why: runErr.Error(), Output: both, Fix: "Pi did not start with the vendored packages: see its output."}
	case strings.Contains(errb.String(), "Failed to load extension"):
		return &Failure{Why: "Pi failed to load an extension", Output: both, Fix: "Fix or remove the package whose extension fails to load."}
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
		return &Failure{Why: "Pi did not answer get_commands", Output: both, Fix: "The program must be Pi (1.6 or later), which has an RPC mode."}
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
		return &Failure{Why: "no command of Pi's comes from " + strings.Join(missing, ", "), Output: both,
			Fix: "Each vendored package must load and register at least one command (that is how the release proves it loaded)."}
	}
	return nil
}
