package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/updatesource"
)

// ConsumerCommands are the commands an end user runs, in the order `piship
// help` lists them: installing, updating, checking, removing and running
// an installed distribution.
func ConsumerCommands(e *Env) []*cobra.Command {
	return []*cobra.Command{InstallCmd(e), UpdateCmd(e), RollbackCmd(e), DoctorCmd(e), UninstallCmd(e), PurgeCmd(e), RepairCmd(e), LaunchCmd(e)}
}

// InstallCmd is `piship install`.
func InstallCmd(e *Env) *cobra.Command {
	var sum, expectKey string
	var asJSON bool
	var rc RunConfig
	c := &cobra.Command{
		Use:     "install SOURCE",
		GroupID: GroupConsumer,
		Short:   "install a release archive, release directory or payload directory",
		Long: `Installs SOURCE (a release archive, a release directory or a built payload directory) into
the install home: the archive is verified while it is extracted, held to the release rules,
and made active by the receipt, committed under the launch gate. The command shim goes to
the bin home (PISHIP_BIN_HOME, default ~/.local/bin); when that is not on PATH the last
lines say which line to add for your shell.`,
		Example: `  piship install /tmp/out/releases/hello-1.0.0-linux-x64.tar.zst
  piship install ./hello-1.0.0-linux-x64.tar.zst --sha256 0f3a... --expect-root sha256:9c1e...`,
		Args: ExactArgs("SOURCE"),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(runInstall(e, args[0], sum, expectKey, rc, asJSON))
		},
	}
	JSONFlag(c, &asJSON)
	c.Flags().StringVar(&sum, "sha256", "", "expected sha256 of the archive (`HEX`)")
	c.Flags().StringVar(&expectKey, "expect-root", "", "refuse the release unless its lock pins this TUF root for updates (its `DIGEST`, sha256:<hex>)")
	ConsumerRunFlags(c.Flags(), &rc)
	return c
}

func runInstall(e *Env, src, sum, expectKey string, rc RunConfig, asJSON bool) int {
	source, _ := filepath.Abs(src)
	in, err := pipelines.Install(e.Ctx, e.Config(rc), pipelines.InstallArgs{Source: source, SHA256: sum, ExpectKey: expectKey})
	code := pipelines.ExitCode(err)
	if in == nil {
		return code
	}
	run, hint := in.Command, ""
	if homes, err := receipt.ResolveHomes(e.Getenv); err == nil {
		if hint = home.PathHint(homes.Bin, e.Getenv("PATH"), e.Getenv("SHELL"), runtime.GOOS); hint != "" {
			run = filepath.Join(homes.Bin, in.Command)
		}
	}
	// The result goes to stdout; with --json the document is stdout's
	// and the same lines go to stderr.
	out := e.Stdout
	if asJSON {
		PrintJSON(e, InstallJSON(in, hint))
		out = e.Stderr
	}
	if in.Reused {
		// The same bytes were installed before: nothing was written.
		fmt.Fprintf(out, "%s %s was already installed from the same release: activated it, nothing written, in %s; run it as `%s`\n",
			in.ID, in.Version, in.Total.Round(time.Millisecond), run)
	} else {
		linked := ""
		if in.Linked > 0 {
			linked = fmt.Sprintf(", %d linked from the store", in.Linked)
		}
		fmt.Fprintf(out, "installed %s %s (%s%s, %s) into %s in %s; run it as `%s`\n", in.ID, in.Version,
			canon.Count(in.Files, "file"), linked, pipelines.HumanBytes(in.Bytes), filepath.Dir(in.Payload), in.Total.Round(time.Millisecond), run)
	}
	if hint != "" {
		fmt.Fprintln(out, hint)
	}
	return code
}

// UpdateCmd is `piship update`.
func UpdateCmd(e *Env) *cobra.Command {
	var o updateOpts
	var rc RunConfig
	c := &cobra.Command{
		Use:               "update ID",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "update from the distribution's TUF repository",
		Long: `Brings the trusted TUF metadata of the installed distribution ID (trust/<id>/ of the install
home; the first time, the root its lock pins) up to date from its repository (the one the
release names, or --from: a directory or an http(s) URL): the root chain walk, timestamp,
snapshot and targets, each checked for signatures by a threshold of trusted keys, expiry
and rollback. Then picks the newest release for this platform on the channel, refuses a
downgrade, downloads it into .downloads with the length and sha256 the targets role
signs, and installs it. The trusted metadata changes only when all of that verified.
--check reports what an update would do and changes nothing.`,
		Example: `  piship update hello --check
  piship update hello --from https://example.com/hello/ --timeout 30s --max-time 10m`,
		Args: ExactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(runUpdate(e, args[0], o, rc))
		},
	}
	JSONFlag(c, &o.json)
	c.Flags().StringVar(&o.from, "from", "", "the TUF repository: a directory or an http(s) `URL` (default: the one the release names)")
	c.Flags().StringVar(&o.ch, "channel", "", "`CHANNEL` (default: the one the release names)")
	c.Flags().BoolVar(&o.check, "check", false, "report what an update would do; change nothing")
	c.Flags().StringVar(&o.timeout, "timeout", "", "the longest wait (a `DURATION`) for a connection, the response headers or the next byte, e.g. 30s (default: connect 10s, headers and idle 30s)")
	c.Flags().StringVar(&o.maxTime, "max-time", "", "the overall budget (a `DURATION`) of each file fetched, e.g. 5m (default: 2m for a channel file, 10m for an archive)")
	ConsumerRunFlags(c.Flags(), &rc)
	return c
}

// updateOpts are update's flags.
type updateOpts struct {
	from, ch, timeout, maxTime string
	check, json                bool
}

func runUpdate(e *Env, id string, o updateOpts, rc RunConfig) int {
	if _, err := updatesource.ParseLimits(o.timeout, o.maxTime); err != nil {
		return FailIn(e, "update", err)
	}
	if o.from != "" {
		if _, err := os.Stat(o.from); err == nil {
			o.from, _ = filepath.Abs(o.from)
		}
	}
	u, err := pipelines.Update(e.Ctx, e.Config(rc), pipelines.UpdateArgs{ID: id, From: o.from, Channel: o.ch, Check: o.check,
		Timeout: o.timeout, MaxTime: o.maxTime})
	code := pipelines.ExitCode(err)
	if u == nil {
		return code
	}
	if o.json {
		PrintJSON(e, UpdateJSON(u, id, o.check))
		return code
	}
	switch {
	case !u.Available:
		fmt.Fprintf(e.Stdout, "%s %s is up to date (channel %s, root %d, timestamp %d)\n", id, u.Current, u.Channel, u.Root, u.Timestamp)
	case o.check:
		fmt.Fprintf(e.Stdout, "%s: update available %s -> %s (channel %s, root %d, timestamp %d, %s)\n", id, u.Current, u.Version,
			u.Channel, u.Root, u.Timestamp, downloadWords(u))
		printNotes(e.Stdout, u.Version, u.Notes, "piship update --check --json has them all")
	default:
		linked := ""
		if u.Linked > 0 {
			linked = fmt.Sprintf(", %s linked from the store", canon.Count(u.Linked, "file"))
		}
		fmt.Fprintf(e.Stdout, "%s updated %s -> %s (channel %s, root %d, timestamp %d, %s%s) in %s; `piship rollback %s` goes back to %s\n", id, u.Current, u.Version, u.Channel,
			u.Root, u.Timestamp, downloadWords(u), linked, u.Total.Round(time.Millisecond), id, u.Current)
		if code == ExitOK {
			printNotes(e.Stdout, u.Version, u.Notes, "piship update --json carries them whole")
		}
	}
	return code
}

// downloadWords says what an update downloads: the delta and its share
// of the archive, or the archive.
func downloadWords(u *pipelines.Updated) string {
	switch {
	case u.Download == "delta":
		return fmt.Sprintf("a %s delta from %s instead of the %s archive", pipelines.HumanBytes(u.DownloadBytes), u.DeltaFrom, pipelines.HumanBytes(u.Bytes))
	case u.DeltaFallback != "":
		return fmt.Sprintf("the %s archive after the delta from %s%s", pipelines.HumanBytes(u.Bytes), u.DeltaFrom, fromRegistry(u.Registry))
	}
	return "the " + pipelines.HumanBytes(u.Bytes) + " archive" + fromRegistry(u.Registry)
}

// fromRegistry names the registry an archive came from (its host and
// repository, from the blob URL): "" when it came from the TUF repository.
func fromRegistry(blob string) string {
	if repo := updatesource.BlobRepository(blob); repo != "" {
		return " from the registry " + repo
	}
	if blob != "" {
		return " from a registry"
	}
	return ""
}

// MaxNotesLines is how many lines of a new version's release notes
// update and update --check print (--json carries them whole).
const MaxNotesLines = 20

// printNotes prints the release notes of version under the check's (or
// the update's) line, indented, at most MaxNotesLines of them, then where
// the rest is (more); nothing when there are none.
func printNotes(w io.Writer, version, notes, more string) {
	notes = strings.TrimRight(notes, "\n")
	if notes == "" {
		return
	}
	lines := strings.Split(notes, "\n")
	fmt.Fprintf(w, "release notes of %s:\n", version)
	for i, l := range lines {
		if i == MaxNotesLines {
			fmt.Fprintf(w, "  ... %s more (%s)\n", canon.Count(len(lines)-i, "line"), more)
			break
		}
		fmt.Fprintf(w, "  %s\n", strings.Map(printable, l))
	}
}

// printable drops control characters from a line of notes: they come from
// commit subjects, and a terminal must not take them for escapes.
func printable(r rune) rune {
	if r == '\t' || !unicode.IsControl(r) {
		return r
	}
	return -1
}

// RollbackCmd is `piship rollback`.
func RollbackCmd(e *Env) *cobra.Command {
	var rc RunConfig
	var asJSON bool
	c := &cobra.Command{
		Use:               "rollback ID",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "switch back to the previous release",
		Long: `Makes the previous release of the installed distribution ID active again (after checking
it). The release rolled back from is no longer kept as the previous one: a second rollback
is refused, piship doctor reclaims it, and piship update (or install) moves forward again.`,
		Example: "  piship rollback hello",
		Args:    ExactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			r, err := pipelines.Rollback(e.Ctx, e.Config(rc), args[0])
			code := pipelines.ExitCode(err)
			if r == nil {
				return Done(code)
			}
			if asJSON {
				PrintJSON(e, RollbackJSON(r, args[0]))
				return Done(code)
			}
			fmt.Fprintf(e.Stdout, "%s rolled back from %s to %s; `piship update %s` moves forward again\n", args[0], r.From, r.Active, args[0])
			return Done(code)
		},
	}
	JSONFlag(c, &asJSON)
	ConsumerRunFlags(c.Flags(), &rc)
	return c
}

// DoctorCmd is `piship doctor`.
func DoctorCmd(e *Env) *cobra.Command {
	var asJSON bool
	var rc RunConfig
	c := &cobra.Command{
		Use:               "doctor [ID]",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "verify and repair an installation (every one without ID); exit 1 when it found damage",
		Long: `Checks the active release of ID (every installed distribution without ID) against what
its receipt recorded: payload, inventory, lock, release.json, modes; repairs the command
shim, the launcher and the launch gate; reclaims old versions, leftovers of killed installs
and store objects nothing links. It reports what it found apart from what it did and exits
1 (INTEGRITY_FAILED) when it found damage, even repaired. With trusted TUF metadata
(trust/ID/ in the install home) it reports each role's version and expiry and warns
(TRUST_EXPIRING, TRUST_EXPIRED; exit 0) when the timestamp or snapshot expires within
a week: the publisher must refresh the repository (piship repo refresh).`,
		Example: `  piship doctor
  piship doctor hello --json`,
		Args: RangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				id = args[0]
			}
			out := &countingWriter{w: e.Stdout}
			code := DoctorAll(e.Ctx, e.Config(rc), out, id, asJSON)
			// A report went out unless the run failed before one.
			e.Printed = e.Printed || asJSON && out.n > 0
			return Done(code)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON, schema piship-doctor/v1 (an array of reports without ID)")
	ConsumerRunFlags(c.Flags(), &rc)
	return c
}

// UninstallCmd is `piship uninstall`.
func UninstallCmd(e *Env) *cobra.Command {
	var purge, asJSON bool
	var progress ProgressFlag
	c := &cobra.Command{
		Use:               "uninstall ID",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "remove an installed distribution",
		Long: `Removes the installed distribution ID: its command shim, its versions and its receipt, under
the install lock (a running launch keeps its files until it ends). --purge also removes
its state directory, channel trust state and lock files, and the search tools its starts
placed in Pi's agent bin directory: what piship purge does.`,
		Example: `  piship uninstall hello
  piship uninstall hello --purge`,
		Args: ExactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(runUninstall(e, args[0], purge, asJSON, progress))
		},
	}
	JSONFlag(c, &asJSON)
	homeProgressFlag(c, &progress)
	c.Flags().BoolVar(&purge, "purge", false, "also remove the distribution's state directory, trust state and placed search tools (piship purge)")
	return c
}

// RepairCmd is `piship repair`.
func RepairCmd(e *Env) *cobra.Command {
	var from string
	var asJSON bool
	var progress ProgressFlag
	c := &cobra.Command{
		Use:               "repair ID [--from ARCHIVE|DIR]",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "restore the files doctor finds changed or missing",
		Long: `Restores the active release of ID to what was installed: every file of its version
directory that is missing or changed (the payload against its inventory; the inventory, the
lock and release.json against the receipt; the other release files against checksums.txt) is
written again, and a payload file the release does not list is removed. The good copies come
from the release's archive: the one an update kept in apps/ID/.downloads, else the one its
TUF repository (the lock's updates block) publishes, fetched there and verified as an
update's download, or --from, an archive or a directory (a release directory, or a
payload). Each file is checked against its digest before it is placed beside the damaged
one and renamed over it, so an interrupted repair leaves the installation launchable or
repairable; the state directory is not touched. While ID runs, a repair that only restores
missing files goes ahead and one that would replace or remove a present file is refused.`,
		Example: `  piship repair pi --from pi-1.6.0-linux-x64.tar.zst
  piship repair pi     # from the archive an update kept, or from the TUF repository`,
		Args: ExactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(runRepair(e, args[0], from, asJSON, progress))
		},
	}
	JSONFlag(c, &asJSON)
	homeProgressFlag(c, &progress)
	c.Flags().StringVar(&from, "from", "", "the release archive or directory to take the files from (default: the archive kept in apps/ID/.downloads, else fetched from the TUF repository)")
	return c
}

func runRepair(e *Env, id, from string, asJSON bool, progress ProgressFlag) int {
	if from != "" {
		var err error
		if from, err = filepath.Abs(from); err != nil {
			return Fail(e, err)
		}
	}
	res, err := pipelines.Repair(e.Ctx, e.Config(RunConfig{Progress: progress}), id, from)
	if err != nil {
		return Fail(e, err)
	}
	if asJSON {
		PrintJSON(e, RepairJSON(res))
		return ExitOK
	}
	if len(res.Restored)+len(res.Removed)+len(res.Modes)+len(res.Records) == 0 {
		fmt.Fprintf(e.Stdout, "%s %s: nothing to repair\n", id, res.Version)
		return ExitOK
	}
	if len(res.Restored)+len(res.Removed) > 0 {
		fmt.Fprintf(e.Stdout, "repaired %s %s: restored %s, removed %d, from %s\n", id, res.Version, canon.Count(len(res.Restored), "file"), len(res.Removed), res.Source)
	}
	var parts []string
	if n := len(res.Modes); n > 0 {
		parts = append(parts, "the mode of "+canon.Count(n, "path"))
	}
	if n := len(res.Records); n > 0 {
		parts = append(parts, canon.Count(n, "receipt record")+" from the lock")
	}
	if len(parts) > 0 {
		fmt.Fprintf(e.Stdout, "repaired %s %s: restored %s\n", id, res.Version, strings.Join(parts, " and "))
	}
	return ExitOK
}

// PurgeCmd is `piship purge`.
func PurgeCmd(e *Env) *cobra.Command {
	var asJSON bool
	var progress ProgressFlag
	c := &cobra.Command{
		Use:               "purge ID",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "remove an installed distribution with its state and caches",
		Long: `Removes everything piship keeps for ID: the installation (as uninstall, refused while
it runs), its state directory (<state home>/ID, with the launches' compile cache), its
channel trust state and lock files, and the search tools (fd, rg) its starts placed in Pi's
agent bin directory, when they still have the bundled bytes (files piship did not place are
left). The same as piship uninstall ID --purge.`,
		Example: `  piship purge pi`,
		Args:    ExactArgs("ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(runUninstall(e, args[0], true, asJSON, progress))
		},
	}
	JSONFlag(c, &asJSON)
	homeProgressFlag(c, &progress)
	return c
}

func runUninstall(e *Env, id string, purge, asJSON bool, progress ProgressFlag) int {
	res, err := pipelines.Uninstall(e.Ctx, e.Config(RunConfig{Progress: progress}), id, purge)
	if err != nil {
		return Fail(e, err)
	}
	if asJSON {
		PrintJSON(e, UninstallJSON(id, purge, res))
		return ExitOK
	}
	fmt.Fprintf(e.Stdout, "uninstalled %s: removed %s, kept %d\n", id, canon.Count(len(res.Removed), "path"), len(res.Kept))
	return ExitOK
}

// LaunchCmd is `piship launch`.
func LaunchCmd(e *Env) *cobra.Command {
	c := &cobra.Command{
		Use:               "launch ID [--] [ARGS...]",
		ValidArgsFunction: installedIDs(e),
		GroupID:           GroupConsumer,
		Short:             "run the active release (what the command shims do)",
		Long: `Runs the active release of the installed distribution ID with ARGS and exits with the
app's exit code. Everything after ID goes to the app untouched, flags included
(piship launch hello --help shows hello's help); a "--" right after ID is dropped. The
command shims run the smaller piship-launch binary, which does the same.`,
		Example: `  piship launch hello
  piship launch hello -- --verbose input.txt`,
		Args: RangeArgs(1, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return Done(RunLaunch(e, args))
		},
	}
	// Flags before ID are piship's (--help), everything after it the app's.
	c.Flags().SetInterspersed(false)
	return c
}

// RunLaunch runs the active release of ID; the command shims normally run
// the smaller piship-launch binary, which does the same.
func RunLaunch(e *Env, args []string) int {
	id, rest := args[0], args[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	homes, err := receipt.ResolveHomes(e.Getenv)
	if err != nil {
		return Fail(e, err)
	}
	code, tr, err := launch.Run(e.Ctx, homes.Install, id, rest, launch.Options{Stdout: e.Stdout, Stderr: e.Stderr, StateDir: homes.StateDir(id), Getenv: e.Getenv})
	if e.Getenv("PISHIP_DEBUG_TIMING") == "1" {
		tr.Format(e.Stderr)
	}
	if xerr := tr.Export(id); xerr != nil {
		fmt.Fprintf(e.Stderr, "%s: cannot write the launch trace: %v\n", id, xerr)
	}
	if err != nil {
		// The start was refused: node did not run, so the exit-code rule
		// decides (2 for a usage or configuration error such as an id
		// that is no id, 1 otherwise).
		fmt.Fprintf(e.Stderr, "%s: %v\n", id, err)
		code = pipelines.ExitCode(err)
	}
	return code
}

// homeProgressFlag is --progress of the consumer commands that run no
// pipeline (repair, uninstall, purge): any mode shows the lines of what
// the command is doing on stderr, as a pipeline's stage messages; without
// it only the result prints.
func homeProgressFlag(c *cobra.Command, progress *ProgressFlag) {
	c.Flags().Var(progress, "progress", "show what the command is doing on stderr: auto (tty on a terminal, plain otherwise), tty, plain or json (default: none, only the result)")
}

// installedIDs completes an ID argument with the distributions installed
// in the install home.
func installedIDs(e *Env) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveDefault
		}
		homes, err := receipt.ResolveHomes(e.Getenv)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids, _ := receipt.IDs(homes.Install)
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

// countingWriter counts what went through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
