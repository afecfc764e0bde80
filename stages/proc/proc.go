// Package proc starts the child processes stages run (npm, exec commands,
// smoke tests) so that none outlives its stage: each runs in its own
// process group, which cancelling kills as a whole, and on Linux the child
// is also killed by the kernel when piship dies without cancelling
// (SIGKILL, a crash), so an orphan never keeps writing into a cache entry
// or staging directory piship abandoned.
//
// It also tells whether a process still runs without starting one (Exists,
// StartTime: the launcher's runtime leases rely on them, so this package
// imports only the standard library), and prefixes the lines a child
// writes (LinePrefixer).
package proc

import "os/exec"

// Run configures cmd (see Configure) and runs it to completion.
func Run(cmd *exec.Cmd) error {
	Configure(cmd)
	return pinned(cmd.Run)
}

// Output configures cmd (see Configure), runs it and returns its stdout.
func Output(cmd *exec.Cmd) ([]byte, error) {
	Configure(cmd)
	var out []byte
	err := pinned(func() (err error) {
		out, err = cmd.Output()
		return err
	})
	return out, err
}
