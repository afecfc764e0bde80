//go:build unix

package launch

import (
	"os"
	"syscall"
)

// SIGQUIT is caught too, so Ctrl-\ does not kill this process with a
// goroutine dump while node handles it.
var caughtSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// deliver forwards s to node. SIGINT and SIGQUIT typed at the terminal
// reach the whole foreground process group, node included (it is in ours):
// forwarding them again would make one Ctrl-C two, which a runtime that
// exits on a second interrupt would take as "exit now". They are forwarded
// only when this process is not in the terminal's foreground group, i.e.
// when someone sent them to this process alone.
func deliver(p *os.Process, s os.Signal) {
	if (s == syscall.SIGINT || s == syscall.SIGQUIT) && foregroundTTY() {
		return
	}
	_ = p.Signal(s)
}

func terminate(p *os.Process) { _ = p.Signal(syscall.SIGTERM) }

func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
