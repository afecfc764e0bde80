package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/home/launch"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage"
)

// runBuiltin runs a built-in consumer pipeline. The result is nil when it
// failed (the failure is printed); total is the run span's duration.
func runBuiltin(e *env, name string, values map[string]cty.Value, rc runConfig) (res *engine.Result, code int, total time.Duration) {
	src, err := findPipeline(name, "")
	if err != nil {
		return nil, usageErr(e, "%v", err), 0
	}
	g, ok := loadOne(e, src)
	if !ok {
		return nil, exitUsage, 0
	}
	o := execute(e, g, values, rc)
	if o.res == nil || o.res.Err() != nil {
		return nil, o.code, 0
	}
	return o.res, o.code, o.total
}

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
	res, code, total := runBuiltin(e, "install", map[string]cty.Value{"source": cty.StringVal(source), "sha256": cty.StringVal(*sum), "expect_key": cty.StringVal(*expectKey)}, *rc)
	if res == nil {
		return code
	}
	out := stageOutputs(res)["install"]
	if out["reused"].True() {
		// The same bytes were installed before: nothing was written.
		fmt.Fprintf(e.stderr, "%s %s was already installed from the same release: activated it, nothing written, in %s; run it as `%s`\n",
			str(out["id"]), str(out["version"]), total.Round(time.Millisecond), str(out["command"]))
		return code
	}
	linked := ""
	if n := num(out["linked"]); n > 0 {
		linked = fmt.Sprintf(", %d linked from the store", n)
	}
	fmt.Fprintf(e.stderr, "installed %s %s (%d files%s, %s) in %s; run it as `%s`\n", str(out["id"]), str(out["version"]),
		num(out["files"]), linked, humanBytes(num(out["bytes"])), total.Round(time.Millisecond), str(out["command"]))
	return code
}

func cmdUpdate(e *env, args []string) int {
	fs := newFlags(e, "update")
	from := fs.String("from", "", "channel source: a directory or an http(s) URL (default: the one the release names)")
	ch := fs.String("channel", "", "channel (default: the one the release names)")
	check := fs.Bool("check", false, "report what an update would do; change nothing")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship update ID [--from DIR|URL] [--check] [--channel c]")
	}
	if *from != "" {
		if _, err := os.Stat(*from); err == nil {
			*from, _ = filepath.Abs(*from)
		}
	}
	res, code, total := runBuiltin(e, "update", map[string]cty.Value{
		"id": cty.StringVal(pos[0]), "from": cty.StringVal(*from), "channel": cty.StringVal(*ch), "check": cty.BoolVal(*check),
	}, *rc)
	if res == nil {
		return code
	}
	c := stageOutputs(res)["check"]
	switch {
	case !c["update"].True():
		fmt.Fprintf(e.stdout, "%s %s is up to date (channel %s, sequence %d)\n", pos[0], str(c["current"]), str(c["channel"]), num(c["sequence"]))
	case *check:
		fmt.Fprintf(e.stdout, "%s: update available %s -> %s (channel %s, sequence %d, %s)\n", pos[0], str(c["current"]), str(c["version"]),
			str(c["channel"]), num(c["sequence"]), humanBytes(num(c["bytes"])))
	default:
		linked := ""
		if n := num(stageOutputs(res)["install"]["linked"]); n > 0 {
			linked = fmt.Sprintf(", %d files linked from the store", n)
		}
		fmt.Fprintf(e.stdout, "%s updated %s -> %s (channel %s, sequence %d%s) in %s\n", pos[0], str(c["current"]), str(c["version"]), str(c["channel"]),
			num(c["sequence"]), linked, total.Round(time.Millisecond))
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
	res, code, _ := runBuiltin(e, "rollback", map[string]cty.Value{"id": cty.StringVal(pos[0])}, *rc)
	if res == nil {
		return code
	}
	out := stageOutputs(res)["rollback"]
	fmt.Fprintf(e.stdout, "%s rolled back from %s to %s\n", pos[0], str(out["from"]), str(out["active"]))
	return code
}

func cmdDoctor(e *env, args []string) int {
	fs := newFlags(e, "doctor")
	asJSON := fs.Bool("json", false, "print the report as JSON (an array of reports without ID)")
	rc := runFlags(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) > 1 {
		return usageErr(e, "usage: piship doctor [ID] [--json]")
	}
	if len(pos) == 1 {
		rep, code := doctorOne(e, pos[0], *rc)
		if rep != nil {
			if *asJSON {
				data, _ := rep.JSON()
				writeAll(e.stdout, string(data))
			} else {
				printDoctor(e, rep)
			}
		}
		return code
	}
	// Every distribution the install home knows, one after another.
	homes, err := receipt.ResolveHomes(e.getenv)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	ids, err := receipt.IDs(homes.Install)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: doctor: %v\n", err)
		return exitFailed
	}
	code := exitOK
	var reps []json.RawMessage
	for _, id := range ids {
		rep, c := doctorOne(e, id, *rc)
		code = max(code, c)
		switch {
		case rep == nil:
		case *asJSON:
			data, _ := rep.JSON()
			reps = append(reps, json.RawMessage(data))
		default:
			printDoctor(e, rep)
		}
	}
	if *asJSON {
		if reps == nil {
			reps = []json.RawMessage{}
		}
		out, _ := json.Marshal(reps)
		writeAll(e.stdout, string(out)+"\n")
	} else if len(ids) == 0 {
		fmt.Fprintf(e.stdout, "nothing is installed in %s\n", homes.Install)
	}
	return code
}

// doctorOutputs is what the CLI reads of the doctor stage's outputs.
type doctorOutputs struct {
	Report home.DoctorReport `cty:"report"`
}

// doctorOne runs the doctor pipeline for id and returns its report (nil
// when the pipeline failed) and exit code.
func doctorOne(e *env, id string, rc runConfig) (*home.DoctorReport, int) {
	res, code, _ := runBuiltin(e, "doctor", map[string]cty.Value{"id": cty.StringVal(id)}, rc)
	if res == nil {
		return nil, code
	}
	out, err := stage.DecodeOutputs[doctorOutputs](stageOutputs(res)["doctor"])
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: doctor report: %v\n", err)
		return nil, max(code, exitFailed)
	}
	return &out.Report, code
}

// printDoctor prints a doctor report for people.
func printDoctor(e *env, r *home.DoctorReport) {
	w := e.stdout
	if r.NotInstalled {
		fmt.Fprintf(w, "%s: not installed; apps/%s held leftovers of a failed install\n", r.ID, r.ID)
	} else {
		fmt.Fprintf(w, "%s: verified, nothing to repair\n", r.ID)
		fmt.Fprintf(w, "  active %s, previous %s\n", r.Active, cmp.Or(r.Previous, "none"))
	}
	if r.ShimRefreshed {
		fmt.Fprintf(w, "  command shim: rewritten (it ran an outdated launcher or homes)\n")
	}
	if r.LauncherReplaced {
		fmt.Fprintf(w, "  launcher: replaced by the piship-launch of this piship (it was outdated)\n")
	}
	fmt.Fprintf(w, "  reclaimed: %d", len(r.Reclaimed))
	if len(r.Remaining) > 0 {
		fmt.Fprintf(w, " (%d left for the next doctor: time budget)", len(r.Remaining))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  leases: %d live", len(r.Leases))
	for _, l := range r.Leases {
		fmt.Fprintf(w, "; %s pid %d on %s since %s", l.Version, l.PID, l.Host, l.StartTime().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if !r.NotInstalled {
		fmt.Fprintf(w, "  trust: %s\n", r.Trust)
	}
	if r.TrustFile != "" {
		fmt.Fprintf(w, "  trust state file: %s\n", r.TrustFile)
	}
	if r.DiskBytes > 0 || !r.NotInstalled {
		fmt.Fprintf(w, "  disk: %s in apps/%s\n", humanBytes(r.DiskBytes), r.ID)
	}
	if s := r.Store; s != nil {
		fmt.Fprintf(w, "  store: %s: %d objects, %d no longer linked removed (%s)", s.Dir, s.Objects, s.Removed, humanBytes(s.Bytes))
		switch {
		case s.Problem != "":
			fmt.Fprintf(w, "; %s", s.Problem)
		case s.Exhausted:
			fmt.Fprintf(w, "; the rest waits for the next doctor (time budget)")
		}
		fmt.Fprintln(w)
	}
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
