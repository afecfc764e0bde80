// Command piship-launch is the launcher every installed command shim runs:
// `piship-launch ID [--] ARGS...` starts the active release of ID (see
// package stages/home/launch). It is a separate, small binary because a
// start must cost almost nothing: it links neither the engine nor HCL nor
// telemetry, so the process starts in about 2 ms where the full piship
// binary needs about 10 ms for its package initialisation alone. Its
// timings come from spans of its own (launch.Trace): PISHIP_DEBUG_TIMING=1
// prints them, PISHIP_TRACE_FILE=F writes them as OTLP/JSON.
package main

import (
	"context"
	"fmt"
	"os"

	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage/errcode"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: piship-launch ID [--] ARGS...   (runs the active release of an installed distribution)")
		return 2
	}
	id, rest := args[0], args[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	homes, err := receipt.ResolveHomes(os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", id, err)
		return 2
	}
	code, tr, err := launch.Run(context.Background(), homes.Install, id, rest, launch.Options{StateDir: homes.StateDir(id)})
	if os.Getenv("PISHIP_DEBUG_TIMING") == "1" {
		tr.Format(os.Stderr)
	}
	if xerr := tr.Export(id); xerr != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot write the launch trace: %v\n", id, xerr)
	}
	if err != nil {
		// The start was refused: the exit-code rule decides (2 for a usage
		// or configuration error, as piship launch and every command).
		fmt.Fprintf(os.Stderr, "%s: %v\n", id, err)
		code = errcode.Exit(err)
	}
	return code
}
