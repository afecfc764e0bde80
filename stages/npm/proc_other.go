//go:build !unix

package npm

import "os/exec"

// setProcessGroup keeps the default: cancelling kills the started process
// (on Windows npm.cmd's cmd.exe; a node it started may finish on its own).
func setProcessGroup(cmd *exec.Cmd) {}
