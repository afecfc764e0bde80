//go:build unix

package proc

import (
	"os/exec"
	"syscall"
)

// Configure starts cmd in its own process group, so that cancelling its
// context kills everything it started, and (on Linux) gives it a death
// signal. Call Run or Output rather than cmd's own methods: they keep the
// starting thread alive while the child runs.
func Configure(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setDeathSignal(cmd.SysProcAttr)
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
