package main

import (
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"

	"piship.dev/piship/cache"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage"
)

func cmdValidate(e *env, args []string) int {
	fs := newFlags(e, "validate")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	srcs, err := pipelines.Collect(pos)
	if err != nil {
		return usageErr(e, "%v", err)
	}
	if len(srcs) == 0 {
		return usageErr(e, "CONFIG_INVALID: no pipeline files found; pass files or directories")
	}
	count, failed := pipelines.Validate(e.stderr, e.getenv, srcs)
	if failed > 0 {
		fmt.Fprintf(e.stderr, "piship: CONFIG_INVALID: %d of %d files have errors; fix them and run `piship validate` again\n", failed, len(srcs))
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "ok: %d pipelines and distributions in %d files\n", count, len(srcs))
	return exitOK
}

func cmdGraph(e *env, args []string) int {
	fs := newFlags(e, "graph")
	format := fs.String("format", "dot", "output format: dot or mermaid")
	dir := fs.String("pipelines", "", "directory to look up pipeline names in")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	if len(pos) != 1 {
		return usageErr(e, "usage: piship graph PIPELINE [--format dot|mermaid]")
	}
	g := loadOne(e, pos[0], *dir)
	if g == nil {
		return exitUsage
	}
	switch *format {
	case "dot":
		err = g.WriteDOT(e.stdout)
	case "mermaid":
		err = g.WriteMermaid(e.stdout)
	default:
		return usageErr(e, "unknown --format %q: use dot or mermaid", *format)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func cmdStages(e *env, args []string) int {
	fs := newFlags(e, "stages")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return flagErr(err)
	}
	reg := stages.Default()
	var b strings.Builder
	switch len(pos) {
	case 0:
		for _, n := range reg.Names() {
			k, _ := reg.Lookup(n)
			fmt.Fprintf(&b, "%-10s %s\n", n, k.Doc())
		}
		b.WriteString("\nRun `piship stages KIND` for a kind's attributes and outputs, `piship stages distribution` for distribution.hcl.\n")
	case 1:
		if pos[0] == "distribution" {
			writeAll(e.stdout, distribution.Doc())
			return exitOK
		}
		k, ok := reg.Lookup(pos[0])
		if !ok {
			return usageErr(e, "unknown stage kind %q; kinds: %s", pos[0], strings.Join(reg.Names(), ", "))
		}
		fmt.Fprintf(&b, "stage %q \"<name>\" (version %s)\n  %s\n\nAttributes:\n", k.Name(), k.Version(), k.Doc())
		attrs := k.Attrs()
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Name < attrs[j].Name })
		for _, a := range attrs {
			req := "optional"
			if a.Required {
				req = "required"
			}
			fmt.Fprintf(&b, "  %-10s %-14s %-8s %s\n", a.Name, typeexpr.TypeString(a.Type), req, a.Doc)
		}
		b.WriteString("  depends_on list          optional stages that must finish first: [stage.a, ...]\n")
		b.WriteString("  always     bool          optional run even after a failure or interrupt (cleanup)\n")
		b.WriteString("\nOutputs (stage.<name>.<output>):\n")
		outs := k.Outputs()
		sort.Slice(outs, func(i, j int) bool { return outs[i].Name < outs[j].Name })
		for _, o := range outs {
			fmt.Fprintf(&b, "  %-10s %-14s %s\n", o.Name, typeexpr.TypeString(o.Type), o.Doc)
		}
		if _, ok := k.(stage.Cacheable); ok {
			b.WriteString("\nCacheable: results are served from the action cache under PISHIP_CACHE_HOME/actions.\n")
		}
	default:
		return usageErr(e, "usage: piship stages [KIND]")
	}
	writeAll(e.stdout, b.String())
	return exitOK
}

func cmdVersion(e *env, args []string) int {
	version := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	d := cache.ToolDigest()
	fmt.Fprintf(e.stdout, "piship %s (build %s)\n", version, d[:min(12, len(d))])
	return exitOK
}
