// Command piship-install is the end-user installer: the consumer commands
// of piship (install, update, rollback, doctor, uninstall, purge, repair,
// launch) and nothing of the build side. It runs the same embedded install,
// update, rollback and doctor pipelines through the same engine as piship,
// with the consumer kinds only (stages/consumer), and exports its trace as
// OTLP/JSON (a --trace-file, or posted over HTTP by tracing.JSONExporter),
// so it links no esbuild, npm client, SBOM or audit code and no gRPC. A
// release directory ships it under the name piship (release_publish), so
// an end user runs `./piship install .` with the small binary.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"piship.dev/piship/cmd/internal/cli"
	"piship.dev/piship/stages/consumer"
	"piship.dev/piship/tracing"
)

func main() {
	os.Exit(cli.Main(program, ""))
}

// program is the installer: the consumer commands and the version.
var program = cli.Program{
	Short: "install, update and run a Node.js distribution shipped with piship",
	Long: `This piship installs, updates, checks and launches Node.js application distributions
released with piship: the install, update, rollback and doctor pipelines run as HCL graphs
of typed stages, each an OpenTelemetry span. It is the installer a release directory
carries; the full piship (building and releasing) has the same commands and more.

Flags are GNU-style: --flag value or --flag=value, before or after the arguments.

Exit codes: 0 success; 1 a pipeline, stage or check failed; 2 a usage or configuration
error (USAGE_INVALID, CONFIG_INVALID, LOCK_INVALID). piship launch exits with the app's code.`,
	Example: `  ./piship install .
  piship update hello --check
  piship help install`,
	Commands: func(e *cli.Env) []*cobra.Command {
		return append(cli.ConsumerCommands(e), cli.VersionCmd(e))
	},
	Kinds:    consumer.Registry,
	Exporter: tracing.JSONExporter,
}
