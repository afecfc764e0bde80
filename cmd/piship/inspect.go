package main

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/spf13/cobra"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

func validateCmd(e *cli.Env) *cobra.Command {
	var builtin, asJSON bool
	c := &cobra.Command{
		Use:     "validate [FILE|DIR...]",
		GroupID: cli.GroupPipeline,
		Short:   "check pipeline files and distribution.hcl without running anything",
		Long: `Checks pipeline files (and distribution.hcl files) before anything runs: unknown kinds and
attributes with a did-you-mean, types, duplicate names, references to unknown stages or
outputs, cycles and verdicts, each error as file:line:col with the line and what to do.
Without arguments it checks the current directory's *.hcl files and ./pipelines/*.hcl, as
terraform validate takes the current directory (none there is CONFIG_INVALID, exit 2);
--builtin checks the pipelines built into piship.`,
		Example: `  piship validate
  piship validate pipelines/ testdata/distributions/hello
  piship validate --builtin`,
		Args: cli.RangeArgs(0, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runValidate(e, args, builtin, asJSON))
		},
	}
	cli.JSONFlag(c, &asJSON)
	c.Flags().BoolVar(&builtin, "builtin", false, "also check the pipelines built into piship (only those without arguments)")
	return c
}

func runValidate(e *cli.Env, args []string, builtin, asJSON bool) int {
	srcs, err := pipelines.Collect(args, builtin)
	if err != nil {
		return cli.Fail(e, err)
	}
	if len(srcs) == 0 {
		return cli.UsageErr(e, errcode.ConfigInvalid, "no pipeline files found in %s; pass files or directories that hold *.hcl", strings.Join(args, ", "))
	}
	v := pipelines.Validate(e.Stderr, e.Getenv, e.Program.Kinds(), srcs)
	code := cli.ExitOK
	if v.Failed > 0 {
		fmt.Fprintf(e.Stderr, "piship: %v\n", errcode.Newf(errcode.ConfigInvalid, "%s %s errors; fix them and run `piship validate` again",
			canon.Of(v.Failed, len(srcs), "file"), canon.Verb(v.Failed, "has", "have")))
		code = cli.ExitUsage
	}
	switch {
	case asJSON:
		// The document, with the diagnostics, whether valid or not.
		cli.PrintJSON(e, ValidateJSON(srcs, v))
	case code == cli.ExitOK:
		fmt.Fprintf(e.Stdout, "ok: %s in %s\n", canon.Count(v.Count, "pipeline or distribution", "pipelines and distributions"), canon.Count(len(srcs), "file"))
	}
	return code
}

func graphCmd(e *cli.Env) *cobra.Command {
	var format, dir string
	var asJSON bool
	c := &cobra.Command{
		Use:     "graph PIPELINE",
		GroupID: cli.GroupPipeline,
		Short:   "print a pipeline's graph (Graphviz dot or Mermaid)",
		Long: `Prints the graph of PIPELINE (a file, or a name looked up in --pipelines DIR, ./pipelines
and the built-in pipelines): its stages, data and ordering edges and verdicts, as Graphviz
dot (pipe it to dot -Tsvg) or as Mermaid.`,
		Example: `  piship graph release | dot -Tsvg > release.svg
  piship graph pipelines/check.hcl --format mermaid`,
		Args:              cli.ExactArgs("PIPELINE"),
		ValidArgsFunction: pipelineNames,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				format = "json"
			}
			return cli.Done(runGraph(e, args[0], format, dir))
		},
	}
	cli.JSONFlag(c, &asJSON)
	c.Flags().StringVar(&format, "format", "dot", "output `FORMAT`: dot or mermaid")
	c.Flags().StringVar(&dir, "pipelines", "", "`DIR` to look up pipeline names in")
	_ = c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]cobra.Completion{"dot", "mermaid"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// pipelineNames completes a PIPELINE argument with the built-in names
// (and files).
func pipelineNames(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, n := range pipelines.EmbeddedNames() {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveDefault
}

func runGraph(e *cli.Env, arg, format, dir string) int {
	var err error
	g := loadOne(e, arg, dir)
	if g == nil {
		return cli.ExitUsage
	}
	switch format {
	case "json":
		cli.PrintJSON(e, GraphJSON(g))
	case "dot":
		err = g.WriteDOT(e.Stdout)
	case "mermaid":
		err = g.WriteMermaid(e.Stdout)
	default:
		return cli.UsageErr(e, cli.CodeUsage, "unknown --format %q: use dot or mermaid", format)
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "piship: %v\n", err)
		return cli.ExitFailed
	}
	return cli.ExitOK
}

func stagesCmd(e *cli.Env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "stages [KIND]",
		GroupID: cli.GroupPipeline,
		Short:   "document the stage kinds",
		Long: `Lists the stage kinds a pipeline can use; with KIND, documents that kind's attributes (type,
required or optional) and outputs. piship stages distribution documents distribution.hcl.`,
		Example: `  piship stages
  piship stages exec
  piship stages distribution`,
		Args: cli.RangeArgs(0, 1),
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			out := []cobra.Completion{"distribution"}
			out = append(out, stages.Default().Names()...)
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runStages(e, args, asJSON))
		},
	}
	cli.JSONFlag(c, &asJSON)
	return c
}

func runStages(e *cli.Env, pos []string, asJSON bool) int {
	reg := stages.Default()
	if asJSON && len(pos) == 1 && pos[0] == "distribution" {
		return cli.UsageErr(e, cli.CodeUsage, "piship stages distribution has no JSON form; run it without --json")
	}
	if asJSON {
		var kinds []stage.Kind
		names := reg.Names()
		if len(pos) == 1 {
			names = pos
		}
		for _, n := range names {
			k, ok := reg.Lookup(n)
			if !ok {
				return cli.UsageErr(e, cli.CodeUsage, "unknown stage kind %q%s; kinds: %s", n, kindHint(n), strings.Join(reg.Names(), ", "))
			}
			kinds = append(kinds, k)
		}
		cli.PrintJSON(e, StagesJSON(kinds))
		return cli.ExitOK
	}
	var b strings.Builder
	switch len(pos) {
	case 0:
		var rows [][]string
		for _, n := range reg.Names() {
			k, _ := reg.Lookup(n)
			rows = append(rows, []string{n, k.Doc()})
		}
		writeColumns(&b, "", rows)
		b.WriteString("\nRun `piship stages KIND` for a kind's attributes and outputs, `piship stages distribution` for distribution.hcl.\n")
	case 1:
		if pos[0] == "distribution" {
			pipelines.WriteAll(e.Stdout, distribution.Doc())
			return cli.ExitOK
		}
		k, ok := reg.Lookup(pos[0])
		if !ok {
			return cli.UsageErr(e, cli.CodeUsage, "unknown stage kind %q%s; kinds: %s", pos[0], kindHint(pos[0]), strings.Join(reg.Names(), ", "))
		}
		fmt.Fprintf(&b, "stage %q \"<name>\" (version %s)\n  %s\n\nAttributes (then those every stage takes):\n", k.Name(), k.Version(), k.Doc())
		// Copies: sorting must not reorder the kind's own declarations.
		attrs := append([]stage.Attr{}, k.Attrs()...)
		sort.Slice(attrs, func(i, j int) bool { return attrs[i].Name < attrs[j].Name })
		var rows [][]string
		for _, a := range append(attrs, graph.MetaAttrs...) {
			req := "optional"
			if a.Required {
				req = "required"
			}
			rows = append(rows, []string{a.Name, typeexpr.TypeString(a.Type), req, a.Doc})
		}
		writeColumns(&b, "  ", rows)
		b.WriteString("\nOutputs (stage.<name>.<output>):\n")
		outs := append([]stage.Output{}, k.Outputs()...)
		sort.Slice(outs, func(i, j int) bool { return outs[i].Name < outs[j].Name })
		rows = nil
		for _, o := range outs {
			rows = append(rows, []string{o.Name, typeexpr.TypeString(o.Type), o.Doc})
		}
		if len(rows) == 0 {
			b.WriteString("  none\n")
		}
		writeColumns(&b, "  ", rows)
		if _, ok := k.(stage.Cacheable); ok {
			b.WriteString("\nCacheable: results are served from the action cache under PISHIP_CACHE_HOME/actions.\n")
		}
	}
	pipelines.WriteAll(e.Stdout, b.String())
	return cli.ExitOK
}

// cli.WriteColumns writes rows as a table: every column but the last padded
// to its widest cell plus two spaces, so the columns line up whatever the
// longest name (dist_inputs, release_metadata).
func writeColumns(w io.Writer, indent string, rows [][]string) {
	b := bufio.NewWriter(w)
	defer b.Flush()
	var widths []int
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range rows {
		b.WriteString(indent)
		for i, c := range r[:len(r)-1] {
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteString(r[len(r)-1])
		b.WriteByte('\n')
	}
}

// kindHint is the did-you-mean of an unknown stage kind.
func kindHint(kind string) string {
	if s := diag.Suggest(kind, stages.Default().Names()); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}
