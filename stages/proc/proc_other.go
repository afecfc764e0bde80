//go:build !unix

package proc

import "os/exec"

// Configure keeps the default: cancelling kills the started process (on
// Windows a .cmd's cmd.exe; a process it started may finish on its own).
func Configure(cmd *exec.Cmd) {}
