package main

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/spf13/cobra"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/stage"
	"piship.dev/piship/stages/stage/errcode"
)

func validateCmd(e *env) *cobra.Command {
	var builtin, asJSON bool
	c := &cobra.Command{
		Use:     "validate [FILE|DIR...]",
		GroupID: groupPipeline,
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
		Args: rangeArgs(0, -1),
		RunE: func(c *cobra.Command, args []string) error {
			return done(runValidate(e, args, builtin, asJSON))
		},
	}
	jsonFlag(c, &asJSON)
	c.Flags().BoolVar(&builtin, "builtin", false, "also check the pipelines built into piship (only those without arguments)")
	return c
}

func runValidate(e *env, args []string, builtin, asJSON bool) int {
	srcs, err := pipelines.Collect(args, builtin)
	if err != nil {
		return fail(e, err)
	}
	if len(srcs) == 0 {
		return usageErr(e, errcode.ConfigInvalid, "no pipeline files found in %s; pass files or directories that hold *.hcl", strings.Join(args, ", "))
	}
	v := pipelines.Validate(e.stderr, e.getenv, srcs)
	code := exitOK
	if v.Failed > 0 {
		fmt.Fprintf(e.stderr, "piship: %v\n", errcode.Newf(errcode.ConfigInvalid, "%s %s errors; fix them and run `piship validate` again",
			canon.Of(v.Failed, len(srcs), "file"), canon.Verb(v.Failed, "has", "have")))
		code = exitUsage
	}
	switch {
	case asJSON:
		// The document, with the diagnostics, whether valid or not.
		printJSON(e, pipelines.ValidateJSON(srcs, v))
	case code == exitOK:
		fmt.Fprintf(e.stdout, "ok: %s in %s\n", canon.Count(v.Count, "pipeline or distribution", "pipelines and distributions"), canon.Count(len(srcs), "file"))
	}
	return code
}

func graphCmd(e *env) *cobra.Command {
	var format, dir string
	var asJSON bool
	c := &cobra.Command{
		Use:     "graph PIPELINE",
		GroupID: groupPipeline,
		Short:   "print a pipeline's graph (Graphviz dot or Mermaid)",
		Long: `Prints the graph of PIPELINE (a file, or a name looked up in --pipelines DIR, ./pipelines
and the built-in pipelines): its stages, data and ordering edges and verdicts, as Graphviz
dot (pipe it to dot -Tsvg) or as Mermaid.`,
		Example: `  piship graph release | dot -Tsvg > release.svg
  piship graph pipelines/check.hcl --format mermaid`,
		Args:              exactArgs("PIPELINE"),
		ValidArgsFunction: pipelineNames,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				format = "json"
			}
			return done(runGraph(e, args[0], format, dir))
		},
	}
	jsonFlag(c, &asJSON)
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

func runGraph(e *env, arg, format, dir string) int {
	var err error
	g := loadOne(e, arg, dir)
	if g == nil {
		return exitUsage
	}
	switch format {
	case "json":
		printJSON(e, pipelines.GraphJSON(g))
	case "dot":
		err = g.WriteDOT(e.stdout)
	case "mermaid":
		err = g.WriteMermaid(e.stdout)
	default:
		return usageErr(e, codeUsage, "unknown --format %q: use dot or mermaid", format)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "piship: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func stagesCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "stages [KIND]",
		GroupID: groupPipeline,
		Short:   "document the stage kinds",
		Long: `Lists the stage kinds a pipeline can use; with KIND, documents that kind's attributes (type,
required or optional) and outputs. piship stages distribution documents distribution.hcl.`,
		Example: `  piship stages
  piship stages exec
  piship stages distribution`,
		Args: rangeArgs(0, 1),
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			out := []cobra.Completion{"distribution"}
			out = append(out, stages.Default().Names()...)
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return done(runStages(e, args, asJSON))
		},
	}
	jsonFlag(c, &asJSON)
	return c
}

func runStages(e *env, pos []string, asJSON bool) int {
	reg := stages.Default()
	if asJSON && len(pos) == 1 && pos[0] == "distribution" {
		return usageErr(e, codeUsage, "piship stages distribution has no JSON form; run it without --json")
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
				return usageErr(e, codeUsage, "unknown stage kind %q%s; kinds: %s", n, kindHint(n), strings.Join(reg.Names(), ", "))
			}
			kinds = append(kinds, k)
		}
		printJSON(e, pipelines.StagesJSON(kinds))
		return exitOK
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
			writeAll(e.stdout, distribution.Doc())
			return exitOK
		}
		k, ok := reg.Lookup(pos[0])
		if !ok {
			return usageErr(e, codeUsage, "unknown stage kind %q%s; kinds: %s", pos[0], kindHint(pos[0]), strings.Join(reg.Names(), ", "))
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
	writeAll(e.stdout, b.String())
	return exitOK
}

// writeColumns writes rows as a table: every column but the last padded
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

func versionCmd(e *env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "version",
		GroupID: groupPipeline,
		Short:   "print the version, commit, Go version and platform (also --version, -v)",
		Long: `Prints piship's module version, the VCS commit and its date it was built from (from the
build info, or stamped by make build; "commit unknown" when neither knows), the Go version,
the platform and the build digest (the sha256 of the executable, part of every cache key).`,
		Example: `  piship version
  piship --version`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				printJSON(e, versionDoc())
				return nil
			}
			return done(printVersion(e))
		},
	}
	jsonFlag(c, &asJSON)
	return c
}

// Set by make build with -ldflags -X (git rev-parse HEAD, the commit date
// and "true" for a tree with changes), for builds whose build info has no
// VCS fields (-buildvcs=false, as this machine's GOFLAGS has).
var (
	commit         string
	commitDate     string
	commitModified string
)

// printVersion prints the version lines.
func printVersion(e *env) int {
	v := versionDoc()
	vcs := "commit unknown"
	if v.Commit != "" {
		vcs = "commit " + v.Commit
		if v.CommitDate != "" {
			vcs += " (" + v.CommitDate + ")"
		}
		if v.Modified {
			vcs += ", modified"
		}
	}
	fmt.Fprintf(e.stdout, "piship %s\n%s\n%s %s/%s, build %s\n", v.Version, vcs, v.Go, v.OS, v.Arch, v.Build[:min(12, len(v.Build))])
	return exitOK
}

// versionDoc is piship's version, piship-version/v1.
func versionDoc() pipelines.VersionDoc {
	version, rev, date, modified := buildVersion()
	return pipelines.VersionDoc{Schema: pipelines.Schema("version"), Version: version, Commit: rev, CommitDate: date, Modified: modified,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, Build: cache.ToolDigest()}
}

// serviceVersion is the service.version of a run's spans: the module
// version and, when known, the commit ("(devel)+0123456789ab").
func serviceVersion() string {
	version, rev, _, _ := buildVersion()
	if rev != "" {
		version += "+" + rev[:min(12, len(rev))]
	}
	return version
}

// buildVersion is the module version and the VCS commit, its date and
// whether the tree was modified: from the build info, else what make
// build stamped (-ldflags -X).
func buildVersion() (version, rev, date string, modified bool) {
	version, rev, date, modified = "(devel)", commit, commitDate, commitModified == "true"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				date = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	return
}
