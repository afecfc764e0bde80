// Command piship runs HCL-defined pipelines of typed stages: validate, graph,
// run, document kinds, format files and manage the action cache. This
// package only parses flags, calls a typed function and prints; the runs
// and the built-in pipelines' results live in pipelines, the rest in graph,
// engine, stages, cache and tracing.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/pipelines"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first Ctrl-C cancels started stages and lets cleanup run;
		// restoring the default handler makes a second one end piship.
		<-ctx.Done()
		stop()
	}()
	code := dispatch(&env{ctx: ctx, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, self: self}, os.Args[1:])
	stop()
	return code
}

// env is what a command sees of the process.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	self   string                   // the piship binary releases ship (pipelines.Config.SelfBinary)
	spans  []sdktrace.SpanProcessor // also get every run's spans (tests)
}

// config is the pipelines configuration of a command's runs.
func (e *env) config(rc runConfig) pipelines.Config {
	return pipelines.Config{Stderr: e.stderr, Getenv: e.getenv, Parallelism: rc.parallelism, TraceFile: rc.traceFile,
		SelfBinary: e.self, SpanProcessors: e.spans}
}

type command struct {
	name    string
	usage   string
	summary string
	run     func(e *env, args []string) int
}

func commands() []command {
	return []command{
		{"build", "build DIST [--out DIR] [--rebuild]", "build a distribution's payload (the built-in build pipeline)", cmdBuild},
		{"release", "release DIST [--out DIR] [--rebuild] [--channel c]", "qualify and ship a distribution as a reproducible release", cmdRelease},
		{"verify-release", "verify-release ARCHIVE|DIR [--sha256 HEX] [--json]", "verify a release as a consumer would trust it", cmdVerifyRelease},
		{"keygen", "keygen FILE --id KEYID [--force]", "make an Ed25519 key for signing update channels", cmdKeygen},
		{"sign-channel", "sign-channel DIR ARCHIVE... --channel c --key FILE [--key FILE ...] [--sequence N] [--expires-days N]", "sign an update channel over release archives", cmdSignChannel},
		{"install", "install SOURCE [--sha256 HEX] [--expect-key sha256:FP]", "install a release archive, release directory or payload directory", cmdInstall},
		{"update", "update ID [--from DIR|URL] [--check] [--channel c] [--timeout D] [--max-time D]", "update from the signed channel", cmdUpdate},
		{"rollback", "rollback ID", "switch back to the previous release", cmdRollback},
		{"doctor", "doctor [ID] [--json]", "verify and repair an installation (every one without ID), reclaim old versions and leftovers; exit 1 when it found damage", cmdDoctor},
		{"uninstall", "uninstall ID [--purge]", "remove an installed distribution", cmdUninstall},
		{"launch", "launch ID [--] ARGS...", "run the active release (what the command shims do)", cmdLaunch},
		{"init", "init [DIR] [--id ID]", "scaffold a new distribution that lock, build and release accept at once", runInit},
		{"lock", "lock DIST", "write DIST/piship.lock from distribution.hcl, the npm lock, resources and tools", cmdLock},
		{"run", "run PIPELINE [--input k=v ...] [--parallelism N] [--dry-run] [--trace-file F] [--pipelines DIR]", "run a pipeline", cmdRun},
		{"validate", "validate [FILE|DIR ...]", "check pipeline files without running anything", cmdValidate},
		{"graph", "graph PIPELINE [--format dot|mermaid] [--pipelines DIR]", "print a pipeline's graph", cmdGraph},
		{"stages", "stages [KIND]", "document the stage kinds", cmdStages},
		{"fmt", "fmt [--check] [FILE ...]", "format pipeline files", cmdFmt},
		{"cache", "cache prune [--max-size SIZE] [--max-age AGE]", "prune the action cache (and collect the content-addressed store's unused objects)", cmdCache},
		{"version", "version", "print the version", cmdVersion},
	}
}

// runMain runs one piship command and returns its exit code. Its releases
// ship no piship binary (tests run it in-process from a test binary).
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	return dispatch(&env{ctx: ctx, stdout: stdout, stderr: stderr, getenv: getenv}, args)
}

// dispatch runs the command args[0] names on the rest of args.
func dispatch(e *env, args []string) int {
	stdout, stderr := e.stdout, e.stderr
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "piship: unknown command %q; run `piship help` for the list\n", args[0])
	return exitUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "piship: build, qualify and ship Node.js distributions with HCL pipelines")
	fmt.Fprintln(w, "\nUsage:")
	// Each command's synopsis, then what it does on the next line: the
	// synopses are too long for one column beside the summaries.
	for _, c := range commands() {
		fmt.Fprintf(w, "  piship %s\n      %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nExit codes: 0 success, 1 pipeline failed, 2 usage or configuration error.")
}

// newFlags returns a FlagSet whose errors go to e.stderr.
func newFlags(e *env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("piship "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

// parseInterleaved parses flags that may appear before or after positional
// arguments (`piship run demo --dry-run`) and returns the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// usageErr prints a usage error and returns exitUsage.
func usageErr(e *env, format string, a ...any) int {
	fmt.Fprintf(e.stderr, "piship: "+format+"\n", a...)
	return exitUsage
}

func flagErr(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}
