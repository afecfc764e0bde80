//go:build !unix

package stages

import "os/exec"

// setProcessGroup keeps the default: cancelling kills the started process.
func setProcessGroup(cmd *exec.Cmd) {}
