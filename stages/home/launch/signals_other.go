//go:build !unix

package launch

import "os"

// On Windows, Ctrl-C and Ctrl-Break go to every process of the console,
// node included: they are caught here only so this process outlives node
// and removes the lease. There is nothing to forward.
var caughtSignals = []os.Signal{os.Interrupt}

func deliver(*os.Process, os.Signal) {}

func terminate(p *os.Process) { _ = p.Kill() }

func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }
