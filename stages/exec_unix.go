//go:build unix

package stages

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in its own process group so that
// cancelling the stage stops the whole tree a shell script may have started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
