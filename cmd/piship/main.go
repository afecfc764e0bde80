// Command piship runs HCL-defined pipelines of typed stages: validate, graph,
// run, document kinds, format files and manage the action cache. This
// package only parses flags, calls a typed function and prints; the runs
// and the built-in pipelines' results live in pipelines, the rest in graph,
// engine, stages, cache and tracing.
//
// The command tree is github.com/spf13/cobra's (GNU-style --flags from
// pflag, per-command help, `help CMD`, suggestions, shell completion).
// The shared command line (dispatch, exit codes, the consumer commands and
// their output) is cmd/internal/cli, which the end-user installer
// (cmd/piship-install) is made of alone; this package adds the developer
// commands. Every command's constructor is listed in commands; each returns
// its exit code through cli.Done, and cli.Dispatch turns every error into
// the exit code of pipelines.ExitCode, the one rule.
package main

import (
	"context"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages"
	"piship.dev/piship/tracing/otlp"
)

func main() {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	os.Exit(cli.Main(program, exe)) // releases for this platform ship the installer beside exe (or exe)
}

// program is piship: every command, every kind, and the OTLP exporters
// (http/protobuf, grpc, http/json).
var program = cli.Program{
	Short: "build, qualify and ship Node.js distributions with HCL pipelines",
	Long: `piship builds, qualifies, signs, installs, updates and launches Node.js application
distributions. Release, build and install are HCL pipelines of typed stages run by one
concurrent scheduler, with verdicts in a declared order, keyed caches and an
OpenTelemetry span for every stage.

Flags are GNU-style: --flag value or --flag=value, before or after the arguments.

Exit codes: 0 success; 1 a pipeline, stage or check failed; 2 a usage or configuration
error (USAGE_INVALID, CONFIG_INVALID, LOCK_INVALID). piship launch exits with the app's code.`,
	Example: `  piship lock testdata/distributions/hello
  piship build testdata/distributions/hello --out /tmp/out
  piship help build`,
	Commands: commands,
	Kinds:    stages.Default,
	Exporter: otlp.Exporter,
}

// commands returns every piship command in the order `piship help` lists
// them within their groups. A new command is one more constructor here:
// func xCmd(e *env) *cobra.Command whose RunE returns cli.Done(code) (see
// initCmd in init.go).
func commands(e *env) []*cobra.Command {
	return slices.Concat(
		// Building and shipping a distribution.
		[]*cobra.Command{initCmd(e), lockCmd(e), buildCmd(e), releaseCmd(e), verifyReleaseCmd(e), publishCmd(e), budgetsCmd(e), keygenCmd(e), repoCmd(e)},
		// Installing and running one.
		cli.ConsumerCommands(e),
		// Pipelines.
		[]*cobra.Command{runCmd(e), validateCmd(e), graphCmd(e), stagesCmd(e), pipelinesCmd(e), fmtCmd(e), cacheCmd(e), explainCmd(e),
			cli.VersionCmd(e),
			timingsCmd(e)}, // in GroupPipeline: help lists it with run
	)
}

// env is what a command sees of the process (the shared CLI's).
type env = cli.Env

// runMain runs one piship command and returns its exit code. Its releases
// ship no piship binary (tests run it in-process from a test binary).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return cli.Dispatch(&env{Ctx: ctx, Stdout: stdout, Stderr: stderr, Getenv: getenv, Program: program}, args)
}
