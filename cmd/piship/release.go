package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"piship.dev/piship/engine"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/verify"
	"piship.dev/piship/tracing"
)

// cmdRelease runs the built-in release pipeline on a distribution.
func cmdRelease(e *env, args []string) int {
	fs := newFlags(e, "release")
	out := fs.String("out", "", "output directory (default: DIST/dist); releases go to <out>/releases/")
	rebuild := fs.Bool("rebuild", false, "ignore the runtime and bundle caches: run npm ci and the bundler again (also PISHIP_RELEASE_NO_CACHE=1)")
	channel := fs.String("channel", "stable", "update channel recorded in release.json")
	rc := runFlags(fs)
	g, distDir, outDir, code := builtinOnDist(e, fs, args, "release", "usage: piship release DIST [--out DIR] [--rebuild] [--channel c]", out)
	if g == nil {
		return code
	}
	noCache := *rebuild || e.getenv("PISHIP_RELEASE_NO_CACHE") == "1"
	values := map[string]cty.Value{
		"distribution": cty.StringVal(distDir), "out": cty.StringVal(outDir),
		"channel": cty.StringVal(*channel), "no_cache": cty.BoolVal(noCache),
	}
	o := execute(e, g, values, *rc)
	res, total, code := o.res, o.total, o.code
	if res == nil || res.Err() != nil {
		return code
	}
	outs := stageOutputs(res)
	line := runtimeCacheLine(res, noCache)
	fmt.Fprintln(e.stderr, line)
	if err := writeBuildInfo(outs, res, line, o.spans, g.Name, g.DepNames()); err != nil {
		fmt.Fprintf(e.stderr, "piship: build-info: %v\n", err)
	}
	fmt.Fprintf(e.stderr, "%s: %s (%d files, archive %s, sha256 %s) in %.2f s\n",
		str(outs["inputs"]["name"]), str(outs["publish"]["path"]), num(outs["inventory"]["files"]),
		humanBytes(num(outs["archive"]["bytes"])), str(outs["archive"]["sha256"]), total.Seconds())
	return code
}

func stageOutputs(res *engine.Result) map[string]map[string]cty.Value {
	out := map[string]map[string]cty.Value{}
	for _, r := range res.Stages {
		out[r.Stage.Name] = r.Outputs
	}
	return out
}

// runtimeCacheLine says where the release's runtime came from: this line,
// the timings and build-info.json are the only places cache provenance is
// recorded (release.json is the same whether the cache hit or not).
func runtimeCacheLine(res *engine.Result, noCache bool) string {
	if noCache {
		return "runtime cache: off (cold release)"
	}
	outs := stageOutputs(res)
	entry := outs["runtime_entry"]
	if !entry["hit"].True() {
		return "runtime cache: miss"
	}
	bundleState := "off"
	for _, r := range res.Stages {
		if r.Stage.Name == "bundle" && r.Status == engine.Succeeded {
			bundleState = hitMiss(r.Outputs["hit"])
		}
	}
	return fmt.Sprintf("runtime cache: hit (entry %s, linked %d, copied %d, bundle %s)",
		str(entry["digest"]), num(outs["runtime"]["linked"]), num(outs["runtime"]["copied"]), bundleState)
}

// BuildInfo is the unsigned <name>.build-info.json beside a release:
// cache provenance and stage timings, outside everything a release signs.
type BuildInfo struct {
	Schema       string `json:"schema"`
	Release      string `json:"release"`
	RuntimeCache string `json:"runtimeCache"`
	Entry        string `json:"entry"`
	EntryDigest  string `json:"entryDigest"`
	Linked       int64  `json:"linked"`
	Copied       int64  `json:"copied"`
	Bundle       string `json:"bundle"`
	// Tools are the piship binaries shipped in the release directory
	// (outside the archive and checksums.txt); verify-release checks them.
	Tools  []release.ToolDigest `json:"tools,omitempty"`
	Timing json.RawMessage      `json:"timing"`
}

func writeBuildInfo(outs map[string]map[string]cty.Value, res *engine.Result, line string, spans []sdktrace.ReadOnlySpan, pipeline string, deps map[string][]string) error {
	name := str(outs["inputs"]["name"])
	releases := str(outs["inputs"]["releases"])
	bi := BuildInfo{
		Schema: "piship-build-info/v1", Release: name, RuntimeCache: strings.TrimPrefix(line, "runtime cache: "),
		Entry: str(outs["runtime_entry"]["entry"]), EntryDigest: str(outs["runtime_entry"]["digest"]),
		Linked: num(outs["runtime"]["linked"]), Copied: num(outs["runtime"]["copied"]), Bundle: "off",
		Timing: tracing.Summarize(spans, pipeline, deps).JSON,
	}
	for _, r := range res.Stages {
		if r.Stage.Name == "bundle" && r.Status == engine.Succeeded {
			bi.Bundle = hitMiss(r.Outputs["hit"])
		}
	}
	publish, err := stage.DecodeOutputs[stages.ReleasePublishOutputs](outs["publish"])
	if err != nil {
		return err
	}
	bi.Tools = publish.Tools // hashed as they were copied
	data, err := payload.CanonicalJSON(bi)
	if err != nil {
		return err
	}
	return payload.WriteFile(filepath.Join(releases, name+".build-info.json"), data, 0o644)
}

// cmdVerifyRelease checks a release archive or directory.
func cmdVerifyRelease(e *env, args []string) int {
	fs := newFlags(e, "verify-release")
	sum := fs.String("sha256", "", "expected sha256 of the archive")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship verify-release ARCHIVE|DIR [--sha256 HEX] [--json]")
	}
	start := time.Now()
	rep, err := verify.Release(e.ctx, pos[0], verify.Options{SHA256: *sum})
	if err != nil {
		return usageErr(e, "%v", err)
	}
	if *asJSON {
		data, _ := payload.CanonicalJSON(rep)
		writeAll(e.stdout, string(data))
	} else {
		for _, c := range rep.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			line := fmt.Sprintf("%s %-24s %s", mark, c.Name, c.File)
			if c.Detail != "" {
				line += ": " + c.Detail
			}
			fmt.Fprintln(e.stdout, strings.TrimRight(line, " "))
		}
	}
	if err := rep.Err(); err != nil {
		fmt.Fprintln(e.stderr, err)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "verified %s (%d checks) in %.2f s\n", rep.Release, len(rep.Checks), time.Since(start).Seconds())
	return exitOK
}
