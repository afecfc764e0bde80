package main

import (
	"fmt"
	"io/fs"
	"strings"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/spf13/cobra"

	"piship.dev/piship/graph/diag"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages"
	"piship.dev/piship/stages/stage/errcode"
)

func pipelinesCmd(e *cli.Env) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "pipelines",
		GroupID: cli.GroupPipeline,
		Short:   "list the pipelines and modules built into piship (pipelines show NAME prints one)",
		Long: `Lists the pipelines built into piship, each with its description, and the modules they are
made of (a pipeline of your own calls one with source = "builtin:NAME"). piship pipelines show
NAME prints one as it is built in, to start a pipeline of your own from: as
DIST/pipelines/NAME.hcl it replaces the built-in one for build and release on that
distribution, as ./pipelines/NAME.hcl for piship run NAME.`,
		Example: `  piship pipelines
  piship pipelines show release > mydist/pipelines/release.hcl
  piship pipelines show builtin:qualify`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q%s", args[0], c.CommandPath(), cli.SuggestFor(c, args))
			}
			return cli.Done(runPipelines(e, asJSON))
		},
	}
	cli.JSONFlag(c, &asJSON)
	show := &cobra.Command{
		Use:   "show NAME",
		Short: "print a built-in pipeline's or module's HCL as it is built in",
		Long: `Prints the built-in pipeline NAME, or the built-in module NAME (builtin:NAME), byte for byte
as piship runs it (piship pipelines lists them), to start a pipeline of your own from.`,
		Example: `  piship pipelines show build
  piship pipelines show release > mydist/pipelines/release.hcl`,
		Args:              cli.ExactArgs("NAME"),
		ValidArgsFunction: pipelineNames,
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Done(runPipelinesShow(e, args[0]))
		},
	}
	c.AddCommand(show)
	return c
}

// runPipelines lists the built-in pipelines: name and description, or
// piship-pipelines/v1.
func runPipelines(e *cli.Env, asJSON bool) int {
	doc := PipelinesDoc{Schema: cli.Schema("pipelines"), Pipelines: []PipelineDoc{}}
	for _, name := range pipelines.EmbeddedNames() {
		src, err := pipelines.FindBuiltin(name)
		if err != nil {
			return cli.Fail(e, err)
		}
		// The full registry: a built-in pipeline may use any kind.
		graphs, _, diags := src.Parse(stages.Default())
		if diags.HasErrors() || len(graphs) != 1 {
			return cli.Fail(e, errcode.Newf(errcode.ConfigInvalid, "the built-in pipeline %s does not load: %s; run piship validate --builtin", src.Name, diags.Error()))
		}
		g := graphs[0]
		p := PipelineDoc{Name: name, File: src.Name, Description: g.Description, Inputs: []string{}, Stages: len(g.Root.Stages)}
		for _, in := range g.Inputs {
			p.Inputs = append(p.Inputs, in.Name)
		}
		doc.Pipelines = append(doc.Pipelines, p)
	}
	doc.Modules = []ModuleDoc{}
	for _, name := range pipelines.ModuleNames() {
		m, err := moduleDoc(name)
		if err != nil {
			return cli.Fail(e, err)
		}
		doc.Modules = append(doc.Modules, m)
	}
	if asJSON {
		cli.PrintJSON(e, doc)
		return cli.ExitOK
	}
	var b strings.Builder
	rows := make([][]string, len(doc.Pipelines))
	for i, p := range doc.Pipelines {
		rows[i] = []string{p.Name, p.Description}
	}
	writeColumns(&b, "", rows)
	b.WriteString("\nModules (source = \"builtin:NAME\" in a module block):\n")
	rows = make([][]string, len(doc.Modules))
	for i, m := range doc.Modules {
		rows[i] = []string{m.Source, m.Description}
	}
	writeColumns(&b, "", rows)
	b.WriteString("\nRun `piship pipelines show NAME` to print one. A distribution's pipelines/build.hcl and pipelines/release.hcl\n" +
		"replace the built-in ones for piship build and release, ./pipelines/NAME.hcl for piship run NAME;\n" +
		"--builtin runs the built-in one. docs/pipelines.md says how to write and compose them.\n")
	pipelines.WriteAll(e.Stdout, b.String())
	return cli.ExitOK
}

// moduleDoc describes the built-in module name from its file: inputs,
// outputs, stages, and the comment it opens with.
func moduleDoc(name string) (ModuleDoc, error) {
	files, ok := pipelines.BuiltinModule(name)
	if !ok {
		return ModuleDoc{}, errcode.Newf(errcode.UsageInvalid, "no built-in module %q; the built-in modules are %s", name, strings.Join(pipelines.ModuleNames(), ", "))
	}
	// The full registry: a built-in module may use any kind.
	g, _, diags := (&pipelines.Source{Name: files[0].Name, Src: files[0].Src}).ParseModule(stages.Default())
	if diags.HasErrors() {
		return ModuleDoc{}, errcode.Newf(errcode.ConfigInvalid, "the built-in module %s does not load: %s; run piship validate --builtin", files[0].Name, diags.Error())
	}
	doc := ModuleDoc{Name: name, Source: "builtin:" + name, File: files[0].Name, Description: leadingComment(files[0].Src),
		Inputs: []string{}, Outputs: []string{}, Stages: len(g.Root.Stages)}
	for _, in := range g.Root.Inputs {
		doc.Inputs = append(doc.Inputs, in.Name)
	}
	for _, o := range g.Root.Outputs {
		doc.Outputs = append(doc.Outputs, o.Name)
	}
	return doc, nil
}

// leadingComment is the text of the # comment lines a file opens with,
// joined into one line: a module's description.
func leadingComment(src []byte) string {
	var words []string
	for _, line := range strings.Split(string(src), "\n") {
		t, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			break
		}
		words = append(words, strings.Fields(t)...)
	}
	return strings.Join(words, " ")
}

// runPipelinesShow prints the built-in pipeline or module name as embedded.
func runPipelinesShow(e *cli.Env, name string) int {
	if mod, ok := strings.CutPrefix(name, "builtin:"); ok {
		if files, ok := pipelines.BuiltinModule(mod); ok {
			pipelines.WriteAll(e.Stdout, string(files[0].Src))
			return cli.ExitOK
		}
		return cli.UsageErr(e, cli.CodeUsage, "no built-in module %q; the built-in modules are %s", mod, strings.Join(pipelines.ModuleNames(), ", "))
	}
	names := pipelines.EmbeddedNames()
	src, err := fs.ReadFile(pipelines.FS, strings.TrimSuffix(name, ".hcl")+".hcl")
	if err != nil {
		if files, ok := pipelines.BuiltinModule(name); ok {
			pipelines.WriteAll(e.Stdout, string(files[0].Src))
			return cli.ExitOK
		}
		hint := ""
		if s := diag.Suggest(name, names); s != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", s)
		}
		return cli.UsageErr(e, cli.CodeUsage, "no built-in pipeline %q%s; the built-in pipelines are %s", name, hint, strings.Join(names, ", "))
	}
	pipelines.WriteAll(e.Stdout, string(src))
	return cli.ExitOK
}
