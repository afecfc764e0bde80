package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/channel"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
)

func cmdInstall(e *env, args []string) int {
	fs := newFlags(e, "install")
	sum := fs.String("sha256", "", "expected sha256 of the archive")
	expectKey := fs.String("expect-key", "", "refuse the release unless it trusts this key for updates (sha256:<hex> fingerprint)")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship install SOURCE [--sha256 HEX] [--expect-key sha256:FP]   (SOURCE: archive, release directory or payload directory)")
	}
	source, _ := filepath.Abs(pos[0])
	in, code := pipelines.Install(e.ctx, e.config(*rc), pipelines.InstallArgs{Source: source, SHA256: *sum, ExpectKey: *expectKey})
	if in == nil {
		return code
	}
	if in.Reused {
		// The same bytes were installed before: nothing was written.
		fmt.Fprintf(e.stderr, "%s %s was already installed from the same release: activated it, nothing written, in %s; run it as `%s`\n",
			in.ID, in.Version, in.Total.Round(time.Millisecond), in.Command)
		return code
	}
	linked := ""
	if in.Linked > 0 {
		linked = fmt.Sprintf(", %d linked from the store", in.Linked)
	}
	fmt.Fprintf(e.stderr, "installed %s %s (%d files%s, %s) in %s; run it as `%s`\n", in.ID, in.Version,
		in.Files, linked, humanBytes(in.Bytes), in.Total.Round(time.Millisecond), in.Command)
	return code
}

func cmdUpdate(e *env, args []string) int {
	fs := newFlags(e, "update")
	from := fs.String("from", "", "channel source: a directory or an http(s) URL (default: the one the release names)")
	ch := fs.String("channel", "", "channel (default: the one the release names)")
	check := fs.Bool("check", false, "report what an update would do; change nothing")
	timeout := fs.String("timeout", "", "the longest wait for a connection, the response headers or the next byte, e.g. 30s (default: connect 10s, headers and idle 30s)")
	maxTime := fs.String("max-time", "", "the overall budget of each file fetched, e.g. 5m (default: 2m for a channel file, 10m for an archive)")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship update ID [--from DIR|URL] [--check] [--channel c] [--timeout D] [--max-time D]")
	}
	if _, err := channel.ParseLimits(*timeout, *maxTime); err != nil {
		return usageErr(e, "update: %v", err)
	}
	if *from != "" {
		if _, err := os.Stat(*from); err == nil {
			*from, _ = filepath.Abs(*from)
		}
	}
	u, code := pipelines.Update(e.ctx, e.config(*rc), pipelines.UpdateArgs{ID: pos[0], From: *from, Channel: *ch, Check: *check,
		Timeout: *timeout, MaxTime: *maxTime})
	if u == nil {
		return code
	}
	switch {
	case !u.Available:
		fmt.Fprintf(e.stdout, "%s %s is up to date (channel %s, sequence %d)\n", pos[0], u.Current, u.Channel, u.Sequence)
	case *check:
		fmt.Fprintf(e.stdout, "%s: update available %s -> %s (channel %s, sequence %d, %s)\n", pos[0], u.Current, u.Version,
			u.Channel, u.Sequence, humanBytes(u.Bytes))
	default:
		linked := ""
		if u.Linked > 0 {
			linked = fmt.Sprintf(", %d files linked from the store", u.Linked)
		}
		fmt.Fprintf(e.stdout, "%s updated %s -> %s (channel %s, sequence %d%s) in %s\n", pos[0], u.Current, u.Version, u.Channel,
			u.Sequence, linked, u.Total.Round(time.Millisecond))
	}
	return code
}

func cmdRollback(e *env, args []string) int {
	fs := newFlags(e, "rollback")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship rollback ID")
	}
	r, code := pipelines.Rollback(e.ctx, e.config(*rc), pos[0])
	if r == nil {
		return code
	}
	fmt.Fprintf(e.stdout, "%s rolled back from %s to %s\n", pos[0], r.From, r.Active)
	return code
}

func cmdDoctor(e *env, args []string) int {
	fs := newFlags(e, "doctor")
	asJSON := fs.Bool("json", false, "print the report as JSON, schema piship-doctor/v1 (an array of reports without ID)")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 1 {
		return usageErr(e, "usage: piship doctor [ID] [--json]")
	}
	id := ""
	if len(pos) == 1 {
		id = pos[0]
	}
	return pipelines.DoctorAll(e.ctx, e.config(*rc), e.stdout, id, *asJSON)
}

func cmdUninstall(e *env, args []string) int {
	fs := newFlags(e, "uninstall")
	purge := fs.Bool("purge", false, "also remove the distribution's state directory")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship uninstall ID [--purge]")
	}
	homes, err := receipt.ResolveHomes(e.getenv)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	res, err := home.Uninstall(e.ctx, home.Options{Homes: homes, Log: e.stderr}, pos[0], *purge)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: uninstall %s: %v\n", pos[0], err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "uninstalled %s: removed %d paths, kept %d\n", pos[0], len(res.Removed), len(res.Kept))
	return exitOK
}

// cmdLaunch runs the active release of ID; the command shims normally run
// the smaller piship-launch binary, which does the same.
func cmdLaunch(e *env, args []string) int {
	if len(args) == 0 {
		return usageErr(e, "usage: piship launch ID [--] ARGS...")
	}
	id, rest := args[0], args[1:]
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	homes, err := receipt.ResolveHomes(e.getenv)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	code, tr, err := launch.Run(e.ctx, homes.Install, id, rest, launch.Options{Stdout: e.stdout, Stderr: e.stderr})
	if e.getenv("PISHIP_DEBUG_TIMING") == "1" {
		tr.Format(e.stderr)
	}
	if xerr := tr.Export(id); xerr != nil {
		fmt.Fprintf(e.stderr, "%s: cannot write the launch trace: %v\n", id, xerr)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "%s: %v\n", id, err)
		if code == 0 {
			code = exitFailed
		}
	}
	return code
}
