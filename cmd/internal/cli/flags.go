package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"piship.dev/piship/pipelines"
)

// RunConfig holds the run options of `run` and the commands that run a
// built-in pipeline (`build`).
type RunConfig struct {
	Timings     string // --timings FILE.html
	Parallelism int
	TraceFile   string
	Progress    ProgressFlag
	// ResultOnly: a consumer command (ConsumerRunFlags), which prints no
	// progress without --progress (pipelines.Config.ResultOnly).
	ResultOnly bool
}

// ProgressFlag is --progress: one of pipelines.ProgressModes, checked
// when the command line is parsed, so a bad value is USAGE_INVALID (exit
// 2) before anything runs.
type ProgressFlag string

func (f *ProgressFlag) String() string { return string(*f) }
func (f *ProgressFlag) Type() string   { return "MODE" }

func (f *ProgressFlag) Set(s string) error {
	if !slices.Contains(pipelines.ProgressModes, s) {
		return fmt.Errorf("use auto (tty on a terminal, plain otherwise), tty, plain or json")
	}
	*f = ProgressFlag(s)
	return nil
}

// RunFlags adds the run options every pipeline command takes.
func RunFlags(fs *pflag.FlagSet, rc *RunConfig) {
	runFlagsWith(fs, rc, "progress on stderr: auto (tty on a terminal, plain otherwise), tty, plain or json (default: PISHIP_PROGRESS=1/0, else auto)")
}

// ConsumerRunFlags are RunFlags for the consumer commands that run a
// pipeline (install, update, rollback, doctor): they print a short result
// and no stage progress unless --progress asks for it.
func ConsumerRunFlags(fs *pflag.FlagSet, rc *RunConfig) {
	rc.ResultOnly = true
	runFlagsWith(fs, rc, "show the stages' progress on stderr: auto (tty on a terminal, plain otherwise), tty, plain or json (default: none, only the result)")
}

func runFlagsWith(fs *pflag.FlagSet, rc *RunConfig, progressHelp string) {
	fs.StringVar(&rc.Timings, "timings", "", "write the run's timings report to `FILE` (one self-contained HTML page: stages on a time axis, the critical path, cache hits and failures)")
	fs.IntVar(&rc.Parallelism, "parallelism", 0, "`N` stages that may run at once, 1 to 1024 (default: number of CPUs)")
	fs.StringVar(&rc.TraceFile, "trace-file", "", "write the run's spans to `FILE` as OTLP JSON")
	fs.Var(&rc.Progress, "progress", progressHelp)
}
