//go:build unix

package npm

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in its own process group, so that
// cancelling kills npm and everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
