package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/dist"
	"piship.dev/piship/stages/payload"
)

// cmdLock writes DIST/piship.lock.
func cmdLock(e *env, args []string) int {
	fs := newFlags(e, "lock")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship lock DIST")
	}
	d, diags := dist.Load(pos[0])
	if diags.HasErrors() {
		printDiags(e, distFiles(pos[0]), diags)
		return exitUsage
	}
	l, err := dist.ComputeLock(d)
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
		return exitFailed
	}
	if err := dist.WriteLock(d, l); err != nil {
		fmt.Fprintf(e.stderr, "piship: cannot write the lock: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "locked %s %s: %s (%d packages, %d resource files, %d tools)\n",
		d.ID, d.Version, filepath.Join(d.Dir, "piship.lock"), l.Runtime.Packages, len(l.Resources), len(l.Tools))
	return exitOK
}

// cmdBuild runs the built-in build pipeline on a distribution and prints
// one summary line: files, bytes, cache hits, time (from the run's span).
func cmdBuild(e *env, args []string) int {
	fs := newFlags(e, "build")
	out := fs.String("out", "", "output directory (default: DIST/dist)")
	rebuild := fs.Bool("rebuild", false, "ignore the build stamp and rebuild the payload")
	rc := runFlags(fs)
	g, distDir, outDir, code := builtinOnDist(e, fs, args, "build", "usage: piship build DIST [--out DIR] [--rebuild]", out)
	if g == nil {
		return code
	}
	values := map[string]cty.Value{
		"distribution": cty.StringVal(distDir),
		"out":          cty.StringVal(outDir),
		"rebuild":      cty.BoolVal(*rebuild),
	}
	res, total, code := executeGraph(e, g, values, *rc)
	if res == nil || res.Err() != nil {
		return code
	}
	fmt.Fprintln(e.stderr, buildSummary(res, total))
	return code
}

// buildSummary words a finished build in one line.
func buildSummary(res *engine.Result, total time.Duration) string {
	out := map[string]map[string]cty.Value{}
	status := map[string]engine.Status{}
	for _, r := range res.Stages {
		out[r.Stage.Name] = r.Outputs
		status[r.Stage.Name] = r.Status
	}
	in := out["inputs"]
	id, version := str(in["id"]), str(in["version"])
	final := str(in["final"])
	var files, bytes int64
	var how []string
	switch str(in["reuse"]) {
	case "all":
		var st stages.Stamp
		if err := payload.ReadJSON(stages.StampPath(str(in["out"]), id), &st); err == nil {
			files, bytes = int64(st.Files), st.Bytes
		}
		how = append(how, "unchanged: payload reused")
	default:
		files, bytes = num(out["inventory"]["files"]), num(out["inventory"]["bytes"])
		if str(in["reuse"]) == "resources" {
			how = append(how, "runtime reused, resources refreshed")
		}
		if status["runtime"] == engine.Succeeded {
			how = append(how, "runtime cache "+hitMiss(out["runtime"]["hit"]))
		}
		if status["bundle"] == engine.Succeeded {
			how = append(how, "bundle cache "+hitMiss(out["bundle"]["hit"]))
		}
	}
	form := "unbundled"
	if b := in["bundle"]; b.True() {
		form = "bundled"
	}
	if s := in["strip"]; s.True() {
		form += ", stripped"
	}
	return fmt.Sprintf("%s %s: %s (%s): %d files, %s; %s; %.2f s",
		id, version, final, form, files, humanBytes(bytes), strings.Join(how, ", "), total.Seconds())
}

func str(v cty.Value) string {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

func num(v cty.Value) int64 {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.Number {
		return 0
	}
	i, _ := v.AsBigFloat().Int64()
	return i
}

func hitMiss(v cty.Value) string {
	if v != cty.NilVal && !v.IsNull() && v.True() {
		return "hit"
	}
	return "miss"
}

// distFiles returns distribution.hcl's source for diagnostic snippets.
func distFiles(dir string) map[string]*hcl.File {
	path := filepath.Join(dir, dist.FileName)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return map[string]*hcl.File{path: {Bytes: src}}
}

// runFlags adds the run options every pipeline command takes.
func runFlags(fs *flag.FlagSet) *runConfig {
	rc := &runConfig{}
	fs.IntVar(&rc.parallelism, "parallelism", 0, "stages that may run at once (default: number of CPUs)")
	fs.StringVar(&rc.traceFile, "trace-file", "", "write the run's spans to this file as OTLP JSON")
	return rc
}

// builtinOnDist parses a `COMMAND DIST` command line and loads the
// built-in pipeline it runs. It returns a nil graph and the exit code when
// it cannot go on; dist and out come back absolute (out empty if unset).
func builtinOnDist(e *env, fs *flag.FlagSet, args []string, pipeline, usage string, outFlag *string) (*graph.Graph, string, string, int) {
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, "", "", flagErr(err)
	}
	if len(pos) != 1 {
		return nil, "", "", usageErr(e, "%s", usage)
	}
	src, err := findPipeline(pipeline, "")
	if err != nil {
		return nil, "", "", usageErr(e, "%v", err)
	}
	g, ok := loadOne(e, src)
	if !ok {
		return nil, "", "", exitUsage
	}
	distDir, _ := filepath.Abs(pos[0])
	out := ""
	if *outFlag != "" {
		out, _ = filepath.Abs(*outFlag)
	}
	return g, distDir, out, exitOK
}
