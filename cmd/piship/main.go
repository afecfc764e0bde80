// Command piship runs HCL-defined pipelines of typed stages: validate, graph,
// run, document kinds, format files and manage the action cache. This
// package only parses flags, calls a typed function and prints; the runs
// and the built-in pipelines' results live in pipelines, the rest in graph,
// engine, stages, cache and tracing.
//
// The command tree is github.com/spf13/cobra's (GNU-style --flags from
// pflag, per-command help, `help CMD`, suggestions, shell completion).
// Every command's constructor is listed in commands; each returns its exit
// code through done, and dispatch turns every error into the exit code of
// pipelines.ExitCode, the one rule.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/stage/errcode"
)

// Exit codes.
const (
	exitOK     = pipelines.ExitOK
	exitFailed = pipelines.ExitFailed // a pipeline (or a check) failed
	exitUsage  = pipelines.ExitUsage  // usage or configuration error
)

func main() {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	os.Exit(realMain(exe)) // releases for this platform ship exe
}

// realMain runs piship on the process's arguments and environment; self
// is the piship binary releases for this platform ship (empty: none; a
// test binary run as piship passes "").
func realMain(self string) int {
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
	e := &env{ctx: ctx, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, self: self}
	code := dispatch(e, os.Args[1:])
	signal.Stop(sigs)
	close(finished)
	// piship launch exits with the app's own code (it forwards signals to
	// the app, which decides what they mean).
	if s, ok := received.Load().(os.Signal); ok && e.ran != "piship launch" {
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

// env is what a command sees of the process.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	self   string                   // the piship binary releases ship (pipelines.Config.SelfBinary)
	spans  []sdktrace.SpanProcessor // also get every run's spans (tests)

	// json is set for a command line with --json: stderr is kept in it
	// for the failure's code; printed is set once a document went out.
	json    *pipelines.FailureLog
	printed bool
	// ran is the command path of the command that ran ("piship build"),
	// empty when none was found.
	ran string
}

// printJSON prints a command's --json document, the only thing on stdout.
func printJSON(e *env, doc any) {
	e.printed = true
	pipelines.WriteJSON(e.stdout, doc)
}

// jsonFlag adds --json to a command that prints a document of schema
// piship-<command>/v1 (docs/json.md).
func jsonFlag(c *cobra.Command, asJSON *bool) {
	c.Flags().BoolVar(asJSON, "json", false, "print one JSON document of schema "+pipelines.Schema(strings.TrimPrefix(c.CommandPath(), "piship "))+
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

// config is the pipelines configuration of a command's runs.
func (e *env) config(rc runConfig) pipelines.Config {
	return pipelines.Config{Stderr: e.stderr, Getenv: e.getenv, Parallelism: rc.parallelism, TraceFile: rc.traceFile, Timings: rc.timings,
		SelfBinary: e.self, SpanProcessors: e.spans, ServiceVersion: serviceVersion(),
		Progress: string(rc.progress), ResultOnly: rc.resultOnly}
}

// devConfig is config for the developer commands (run, build, release):
// every run is recorded for piship explain, also one without cacheable
// stages, so explain always explains the last run.
func (e *env) devConfig(rc runConfig) pipelines.Config {
	c := e.config(rc)
	c.RecordEveryRun = true
	return c
}

// The command groups of `piship help`.
const (
	groupDist     = "dist"
	groupConsumer = "consumer"
	groupPipeline = "pipeline"
)

// commands returns every piship command in the order `piship help` lists
// them within their groups. A new command is one more constructor here:
// func xCmd(e *env) *cobra.Command whose RunE returns done(code) (see
// initCmd in init.go).
func commands(e *env) []*cobra.Command {
	return []*cobra.Command{
		// Building and shipping a distribution.
		initCmd(e), lockCmd(e), buildCmd(e), releaseCmd(e), verifyReleaseCmd(e), keygenCmd(e), repoCmd(e),
		// Installing and running one.
		installCmd(e), updateCmd(e), rollbackCmd(e), doctorCmd(e), uninstallCmd(e), purgeCmd(e), repairCmd(e), launchCmd(e),
		// Pipelines.
		runCmd(e), validateCmd(e), graphCmd(e), stagesCmd(e), fmtCmd(e), cacheCmd(e), explainCmd(e),
		versionCmd(e),
		timingsCmd(e), // in groupPipeline: help lists it with run
	}
}

// runMain runs one piship command and returns its exit code. Its releases
// ship no piship binary (tests run it in-process from a test binary).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return dispatch(&env{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}, args)
}

func init() {
	// piship help lists the commands in the order of commands, grouped.
	cobra.EnableCommandSorting = false
}

// newRoot returns piship's command tree, writing to e's streams.
func newRoot(e *env) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "piship",
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
		// No Args: cobra's own check of the root's arguments is the one
		// that suggests a command for a typo (relase -> release).
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: false},
		RunE: func(c *cobra.Command, args []string) error {
			if showVersion {
				return done(printVersion(e))
			}
			// piship alone: the overview, and the usage error it is.
			c.SetOut(e.stderr)
			_ = c.Help()
			return errors.New("piship needs a command: piship COMMAND [flags]")
		},
	}
	root.Flags().BoolVarP(&showVersion, "version", "v", false, "print the version (as piship version)")
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetIn(strings.NewReader(""))
	root.AddGroup(
		&cobra.Group{ID: groupDist, Title: "Building and shipping a distribution:"},
		&cobra.Group{ID: groupConsumer, Title: "Installing and running one:"},
		&cobra.Group{ID: groupPipeline, Title: "Pipelines and everything else:"},
	)
	root.SetHelpCommandGroupID(groupPipeline)
	root.SetCompletionCommandGroupID(groupPipeline)
	for _, c := range commands(e) {
		if c.GroupID == "" {
			c.GroupID = groupPipeline
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
		GroupID: groupPipeline,
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
				return fmt.Errorf("unknown help topic %q%s", strings.Join(args, " "), suggestFor(target, rest))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// suggestFor words cobra's command suggestions for the first of rest.
func suggestFor(c *cobra.Command, rest []string) string {
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

// done is the error a command's RunE returns for its exit code: nil for
// exitOK.
func done(code int) error {
	if code == exitOK {
		return nil
	}
	return exitCode(code)
}

// codeUsage is the error code of a command line piship cannot take: an
// unknown command or flag, a missing or extra argument, a bad flag value.
const codeUsage = errcode.UsageInvalid

// dispatch runs the command line args and returns piship's exit code. A
// command's own outcome is its exit code; anything cobra refuses (the
// command line) is a USAGE_INVALID line on stderr with the command's help
// hint; every error maps to an exit code through pipelines.ExitCode.
func dispatch(e *env, args []string) int {
	if !wantsJSON(args) {
		_, code := dispatchText(e, args)
		return code
	}
	// --json: a command that failed without printing its document prints
	// the error document of its schema, with the code it printed last.
	e.json = &pipelines.FailureLog{W: e.stderr}
	e.stderr = e.json
	c, code := dispatchText(e, args)
	if code != exitOK && !e.printed {
		name := "piship"
		if c != nil {
			name = c.CommandPath()
		}
		printJSON(e, pipelines.ErrorDoc{Schema: pipelines.Schema(strings.TrimPrefix(strings.TrimPrefix(name, "piship"), " ")),
			Error: e.json.Error(code, "piship "+strings.Join(args, " ")+" failed")})
	}
	return code
}

// dispatchText runs the command line args and returns the command that ran
// (nil when none was found) and piship's exit code.
func dispatchText(e *env, args []string) (*cobra.Command, int) {
	root := newRoot(e)
	root.SetArgs(args)
	if c, err := singleDashFlag(root, args); err != nil {
		return c, usageFailure(e, c, err)
	}
	c, err := root.ExecuteC()
	if c != nil {
		e.ran = c.CommandPath()
	}
	if err == nil {
		return c, exitOK
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return c, int(ec)
	}
	if errcode.Of(err) != "" {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
		return c, pipelines.ExitCode(err)
	}
	return c, usageFailure(e, c, err)
}

// usageFailure prints a command line piship cannot take and returns its
// exit code (ExitUsage).
func usageFailure(e *env, c *cobra.Command, err error) int {
	if c == nil {
		c = newRoot(e)
	}
	err = errcode.Newf(codeUsage, "%w", err)
	msg := strings.TrimRight(err.Error(), "\n")
	if strings.Contains(msg, "\n") {
		msg += "\n" // after a suggestion list
	}
	fmt.Fprintf(e.stderr, "piship: %s\nRun '%s --help' for usage.\n", msg, c.CommandPath())
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

// exactArgs accepts exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
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

// rangeArgs accepts min to max positional arguments (max < 0: any number).
func rangeArgs(minN, maxN int) cobra.PositionalArgs {
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

// usageErr prints a usage or configuration error with its code (USAGE_INVALID,
// CONFIG_INVALID or LOCK_INVALID) and returns exitUsage.
func usageErr(e *env, code, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "piship: %v\n", errcode.Newf(code, format, a...))
	return exitUsage
}

// usageErrOf is usageErr for an error that carries its code.
func usageErrOf(e *env, err error) int {
	fmt.Fprintf(e.stderr, "piship: %v\n", err)
	return exitUsage
}

// fail prints err and returns its exit code (pipelines.ExitCode).
func fail(e *env, err error) int {
	fmt.Fprintf(e.stderr, "piship: %v\n", err)
	return pipelines.ExitCode(err)
}

// failIn is fail for what's error.
func failIn(e *env, what string, err error) int {
	fmt.Fprintf(e.stderr, "piship: %s: %v\n", what, err)
	return pipelines.ExitCode(err)
}
