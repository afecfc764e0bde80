// Package cli is the command line both piship binaries share: the command
// tree and its dispatch (cobra), exit codes, signals, --json documents and
// their failure form, the run flags, and the consumer commands (install,
// update, rollback, doctor, uninstall, purge, repair, launch) with how
// their results print. cmd/piship adds the developer commands; the
// end-user installer (cmd/piship-install) is these alone, so it links no
// build side. Commands parse flags, make one typed call (pipelines, home)
// and print what comes back: rendering lives here, not in pipelines.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
	"piship.dev/piship/tracing"
)

// Exit codes.
const (
	ExitOK     = pipelines.ExitOK
	ExitFailed = pipelines.ExitFailed // a pipeline (or a check) failed
	ExitUsage  = pipelines.ExitUsage  // usage or configuration error
)

// Main runs the program p on the process's arguments and environment and
// returns its exit code; self is the piship binary releases for this
// platform ship (piship passes its executable; the installer, which
// releases nothing, and a test binary run as piship pass "").
func Main(p Program, self string) int {
	// piship is a short-lived process that builds large graphs (the HCL
	// parser allocates heavily); trading memory for fewer GC cycles cuts
	// validation of a 10,000-stage file by about a fifth.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var received atomic.Value // the os.Signal that interrupted the command
	finished := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			// The first Ctrl-C cancels started stages and lets cleanup
			// run; restoring the default handler makes a second one end
			// piship.
			received.Store(s)
			signal.Stop(sigs)
			cancel()
		case <-finished:
		}
	}()
	e := &Env{Ctx: ctx, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Self: self, Program: p}
	code := Dispatch(e, os.Args[1:])
	signal.Stop(sigs)
	close(finished)
	// piship launch exits with the app's own code (it forwards signals to
	// the app, which decides what they mean).
	if s, ok := received.Load().(os.Signal); ok && e.Ran != "piship launch" {
		return signalExit(s)
	}
	return code
}

// signalExit is the exit code of a command a signal interrupted, the shell's
// convention 128 + the signal's number: 130 for Ctrl-C (SIGINT), 143 for
// SIGTERM. The interrupted command has finished its cleanup by then.
func signalExit(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return 128 + int(n)
	}
	return 128 + 2 // os.Interrupt where signals are not numbered
}

// Env is what a command sees of the process.
type Env struct {
	Ctx    context.Context
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Self   string                   // the piship binary releases ship (pipelines.Config.SelfBinary)
	Spans  []sdktrace.SpanProcessor // also get every run's spans (tests)
	// Program is the binary's command tree: piship's or the installer's.
	Program Program

	// JSONLog is set for a command line with --json: stderr is kept in it
	// for the failure's code; Printed is set once a document went out.
	JSONLog *FailureLog
	Printed bool
	// Ran is the command path of the command that ran ("piship build"),
	// empty when none was found.
	Ran string
}

// Program is what tells the two binaries apart: piship (every command,
// every kind, the OTLP exporters) and the end-user installer (the consumer
// commands, the consumer kinds, OTLP/JSON only). The command shape,
// dispatch, exit codes and messages are the same.
type Program struct {
	// Short, Long and Example are the root command's help.
	Short, Long, Example string
	// Commands returns the binary's commands in the order `piship help`
	// lists them within their groups.
	Commands func(e *Env) []*cobra.Command
	// Kinds resolves pipelines' stage blocks (pipelines.Config.Kinds).
	Kinds func() *stage.Registry
	// Exporter sends the runs' spans (pipelines.Config.Exporter).
	Exporter tracing.ExporterFunc
}

// PrintJSON prints a command's --json document, the only thing on stdout.
func PrintJSON(e *Env, doc any) {
	e.Printed = true
	WriteJSON(e.Stdout, doc)
}

// JSONFlag adds --json to a command that prints a document of schema
// piship-<command>/v1 (docs/json.md).
func JSONFlag(c *cobra.Command, asJSON *bool) {
	c.Flags().BoolVar(asJSON, "json", false, "print one JSON document of schema "+Schema(strings.TrimPrefix(c.CommandPath(), "piship "))+
		" on stdout, a failure as {\"error\": ...} (docs/json.md)")
}

// wantsJSON reports whether args ask for --json (piship's own flags: none
// after "--").
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// Config is the pipelines configuration of a command's runs.
func (e *Env) Config(rc RunConfig) pipelines.Config {
	return pipelines.Config{Stderr: e.Stderr, Getenv: e.Getenv, Parallelism: rc.Parallelism, TraceFile: rc.TraceFile, Timings: rc.Timings,
		SelfBinary: e.Self, SpanProcessors: e.Spans, ServiceVersion: ServiceVersion(),
		Progress: string(rc.Progress), ResultOnly: rc.ResultOnly, Kinds: e.Program.Kinds(), Exporter: e.Program.Exporter}
}

// DevConfig is Config for the developer commands (run, build, release):
// every run is recorded for piship explain, also one without cacheable
// stages, so explain always explains the last run; the first line says
// which pipeline file runs (ShowFile).
func (e *Env) DevConfig(rc RunConfig) pipelines.Config {
	c := e.Config(rc)
	c.RecordEveryRun = true
	c.ShowFile = true
	return c
}

// The command groups of `piship help`.
const (
	GroupDist     = "dist"
	GroupConsumer = "consumer"
	GroupPipeline = "pipeline"
)

func init() {
	// piship help lists the commands in the order of commands, grouped.
	cobra.EnableCommandSorting = false
}

// NewRoot returns piship's command tree, writing to e's streams.
func NewRoot(e *Env) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:     "piship",
		Short:   e.Program.Short,
		Long:    e.Program.Long,
		Example: e.Program.Example,
		// No Args: cobra's own check of the root's arguments is the one
		// that suggests a command for a typo (relase -> release).
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		RunE: func(c *cobra.Command, args []string) error {
			if showVersion {
				return Done(PrintVersion(e))
			}
			// piship alone: the overview, and the usage error it is.
			c.SetOut(e.Stderr)
			_ = c.Help()
			return errors.New("piship needs a command: piship COMMAND [flags]")
		},
	}
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "print the version (as piship version)")
	root.SetOut(e.Stdout)
	root.SetErr(e.Stderr)
	root.SetIn(strings.NewReader(""))
	// The groups of `piship help`, those the binary has commands in (the
	// installer has no building ones); help and completion are pipeline's.
	cmds := e.Program.Commands(e)
	groups := []*cobra.Group{
		{ID: GroupDist, Title: "Building and shipping a distribution:"},
		{ID: GroupConsumer, Title: "Installing and running one:"},
		{ID: GroupPipeline, Title: "Pipelines and everything else:"},
	}
	if !slices.ContainsFunc(cmds, func(c *cobra.Command) bool { return c.GroupID == GroupDist }) {
		// The installer's titles stand on their own.
		groups[1].Title, groups[2].Title = "Installing and running a distribution:", "Everything else:"
	}
	for _, g := range groups {
		if g.ID == GroupPipeline || slices.ContainsFunc(cmds, func(c *cobra.Command) bool { return c.GroupID == g.ID }) {
			root.AddGroup(g)
		}
	}
	root.SetHelpCommandGroupID(GroupPipeline)
	root.SetCompletionCommandGroupID(GroupPipeline)
	for _, c := range cmds {
		if c.GroupID == "" {
			c.GroupID = GroupPipeline
		}
		root.AddCommand(c)
	}
	root.SetHelpCommand(helpCmd(root))
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() != "completion" {
			continue
		}
		c.Example = "  piship completion bash > ~/.local/share/bash-completion/completions/piship\n" +
			"  piship completion zsh > \"${fpath[1]}/_piship\""
		for _, s := range c.Commands() {
			switch s.Name() {
			case "bash":
				s.Example = "  source <(piship completion bash)\n" +
					"  piship completion bash > ~/.local/share/bash-completion/completions/piship"
			case "zsh":
				s.Example = "  piship completion zsh > \"${fpath[1]}/_piship\""
			case "fish":
				s.Example = "  piship completion fish > ~/.config/fish/completions/piship.fish"
			case "powershell":
				s.Example = "  piship completion powershell | Out-String | Invoke-Expression"
			}
		}
	}
	root.SetFlagErrorFunc(flagError)
	return root
}

// helpCmd is `piship help [COMMAND]`: exactly what `piship COMMAND --help`
// prints; an unknown command is a usage error with suggestions.
func helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:     "help [COMMAND...]",
		GroupID: GroupPipeline,
		Short:   "show the help of piship or of one command (as COMMAND --help)",
		Long:    "Prints the help of a command: its usage, arguments, description, examples and flags, the same bytes `piship COMMAND --help` prints.",
		Example: `  piship help build
  piship help cache prune`,
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var names []cobra.Completion
			for _, s := range root.Commands() {
				if s.IsAvailableCommand() && strings.HasPrefix(s.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 && len(target.Commands()) > 0 || target == root && len(args) > 0 {
				return fmt.Errorf("unknown help topic %q%s", strings.Join(args, " "), SuggestFor(target, rest))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// SuggestFor words cobra's command suggestions for the first of rest.
func SuggestFor(c *cobra.Command, rest []string) string {
	if len(rest) == 0 {
		return ""
	}
	if s := c.SuggestionsFor(rest[0]); len(s) > 0 {
		return "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return ""
}

// flagError adds a did-you-mean to an unknown flag: the closest of the
// command's flags (graph/diag.Suggest, the validator's rule for kinds and
// attributes), and for a single-dash long flag (`-out`, Go's flag style)
// its GNU spelling.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	var typed string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		typed, _, _ = strings.Cut(strings.TrimPrefix(msg, "unknown flag: --"), "=")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// "unknown shorthand flag: 'o' in -out"
		if _, word, ok := strings.Cut(msg, " in -"); ok {
			typed, _, _ = strings.Cut(word, "=")
		}
	}
	if typed == "" {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	best := diag.Suggest(typed, names)
	if best == "" {
		best = diag.Suggest(strings.ToLower(typed), names)
	}
	if best == "" {
		return err
	}
	return fmt.Errorf("%s\n\nDid you mean this?\n\t--%s", msg, best)
}

// exitCode is a command's exit code, the outcome already printed.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit %d", int(c)) }

// Done is the error a command's RunE returns for its exit code: nil for
// ExitOK.
func Done(code int) error {
	if code == ExitOK {
		return nil
	}
	return exitCode(code)
}

// CodeUsage is the error code of a command line piship cannot take: an
// unknown command or flag, a missing or extra argument, a bad flag value.
const CodeUsage = errcode.UsageInvalid

// Dispatch runs the command line args and returns piship's exit code. A
// command's own outcome is its exit code; anything cobra refuses (the
// command line) is a USAGE_INVALID line on stderr with the command's help
// hint; every error maps to an exit code through pipelines.ExitCode.
func Dispatch(e *Env, args []string) int {
	if !wantsJSON(args) {
		_, code := dispatchText(e, args)
		return code
	}
	// --json: a command that failed without printing its document prints
	// the error document of its schema, with the code it printed last.
	e.JSONLog = &FailureLog{W: e.Stderr}
	e.Stderr = e.JSONLog
	c, code := dispatchText(e, args)
	if code != ExitOK && !e.Printed {
		name := "piship"
		if c != nil {
			name = c.CommandPath()
		}
		PrintJSON(e, ErrorDoc{Schema: Schema(strings.TrimPrefix(strings.TrimPrefix(name, "piship"), " ")),
			Error: e.JSONLog.Error(code, "piship "+strings.Join(args, " ")+" failed")})
	}
	return code
}

// dispatchText runs the command line args and returns the command that ran
// (nil when none was found) and piship's exit code.
func dispatchText(e *Env, args []string) (*cobra.Command, int) {
	root := NewRoot(e)
	root.SetArgs(args)
	if c, err := singleDashFlag(root, args); err != nil {
		return c, UsageFailure(e, c, err)
	}
	c, err := root.ExecuteC()
	if c != nil {
		e.Ran = c.CommandPath()
	}
	if err == nil {
		return c, ExitOK
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return c, int(ec)
	}
	if errcode.Of(err) != "" {
		fmt.Fprintf(e.Stderr, "piship: %v\n", err)
		return c, pipelines.ExitCode(err)
	}
	return c, UsageFailure(e, c, err)
}

// UsageFailure prints a command line piship cannot take and returns its
// exit code (ExitUsage).
func UsageFailure(e *Env, c *cobra.Command, err error) int {
	if c == nil {
		c = NewRoot(e)
	}
	err = errcode.Newf(CodeUsage, "%w", err)
	msg := strings.TrimRight(err.Error(), "\n")
	if strings.Contains(msg, "\n") {
		msg += "\n" // after a suggestion list
	}
	fmt.Fprintf(e.Stderr, "piship: %s\nRun '%s --help' for usage.\n", msg, c.CommandPath())
	return pipelines.ExitCode(err)
}

// singleDashFlag refuses a Go-style single-dash long flag (`-out`) before
// pflag reads it as a run of shorthands: piship's flags are GNU-style.
// Everything after `--` and after launch's ID is not piship's.
func singleDashFlag(root *cobra.Command, args []string) (*cobra.Command, error) {
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return nil, nil
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	names = append(names, "help")
	seenCmd := false
	for _, a := range args {
		if a == "--" {
			return nil, nil
		}
		if !strings.HasPrefix(a, "-") {
			if seenCmd && c.Name() == "launch" {
				return nil, nil // the app's arguments
			}
			if a == c.Name() {
				seenCmd = true
			}
			continue
		}
		if len(a) < 3 || a[1] == '-' || a[1] >= '0' && a[1] <= '9' {
			continue
		}
		word, _, _ := strings.Cut(a[1:], "=")
		for _, n := range names {
			if n == word {
				return c, fmt.Errorf("%s is not a flag: piship's flags are GNU-style, write --%s", a, word)
			}
		}
	}
	return nil, nil
}

// ExactArgs accepts exactly the named positional arguments.
func ExactArgs(names ...string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(args) < len(names) {
			return fmt.Errorf("%s needs %s: usage: %s", c.CommandPath(), strings.Join(names[len(args):], " "), c.UseLine())
		}
		return fmt.Errorf("%s takes %d argument(s), got %d (%q): usage: %s", c.CommandPath(), len(names), len(args),
			strings.Join(args[len(names):], " "), c.UseLine())
	}
}

// RangeArgs accepts min to max positional arguments (max < 0: any number).
func RangeArgs(minN, maxN int) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) < minN {
			return fmt.Errorf("%s needs at least %d argument(s): usage: %s", c.CommandPath(), minN, c.UseLine())
		}
		if maxN >= 0 && len(args) > maxN {
			return fmt.Errorf("%s takes at most %d argument(s), got %d: usage: %s", c.CommandPath(), maxN, len(args), c.UseLine())
		}
		return nil
	}
}

// UsageErr prints a usage or configuration error with its code (USAGE_INVALID,
// CONFIG_INVALID or LOCK_INVALID) and returns ExitUsage.
func UsageErr(e *Env, code, format string, a ...any) int {
	fmt.Fprintf(e.Stderr, "piship: %v\n", errcode.Newf(code, format, a...))
	return ExitUsage
}

// UsageErrOf is UsageErr for an error that carries its code.
func UsageErrOf(e *Env, err error) int {
	fmt.Fprintf(e.Stderr, "piship: %v\n", err)
	return ExitUsage
}

// Fail prints err and returns its exit code (pipelines.ExitCode).
func Fail(e *Env, err error) int {
	fmt.Fprintf(e.Stderr, "piship: %v\n", err)
	return pipelines.ExitCode(err)
}

// FailIn is Fail for what's error.
func FailIn(e *Env, what string, err error) int {
	fmt.Fprintf(e.Stderr, "piship: %s: %v\n", what, err)
	return pipelines.ExitCode(err)
}
