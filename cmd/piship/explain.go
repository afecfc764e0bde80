package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cmd/internal/cli"

	"github.com/spf13/cobra"

	"piship.dev/piship/cache"
	"piship.dev/piship/pipelines"
	"piship.dev/piship/stages/stage/errcode"
)

func explainCmd(e *cli.Env) *cobra.Command {
	var pipeline, file string
	var asJSON bool
	c := &cobra.Command{
		Use:     "explain [STAGE]",
		GroupID: cli.GroupPipeline,
		Short:   "say why the stages of the last run ran or came from cache",
		Long: `Reads the record of the last run of a pipeline (kept under PISHIP_CACHE_HOME/explain) and
prints, for every stage or for STAGE, whether its cache lookups hit or missed, why a miss
missed (what differs from the newest entry the stage used: an input file, a configuration
attribute, the tool or kind version ...) and the named inputs of each key. Without
--pipeline or --file it explains the newest recorded run (holding STAGE, when given).`,
		Example: `  piship explain
  piship explain bundle --pipeline build
  piship explain compile --file pipelines/check.hcl --json`,
		Args: cli.RangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			stage := ""
			if len(args) == 1 {
				stage = args[0]
			}
			return cli.Done(runExplain(e, stage, pipeline, file, asJSON))
		},
	}
	c.Flags().StringVar(&pipeline, "pipeline", "", "explain the last run of the pipeline called `NAME` (build, release, or a file's pipeline name)")
	c.Flags().StringVar(&file, "file", "", "explain the last run of the pipeline file `F`")
	cli.JSONFlag(c, &asJSON)
	return c
}

func runExplain(e *cli.Env, stage, pipeline, file string, asJSON bool) int {
	if pipeline != "" && file != "" {
		return cli.UsageErr(e, errcode.UsageInvalid, "--pipeline and --file both name a pipeline: give one")
	}
	if file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return cli.UsageErr(e, errcode.ConfigInvalid, "--file %s: %v", file, err)
		}
		file = abs
		// A missing file is a typo, not a pipeline that never ran.
		if _, err := pipelines.ReadSource(file); err != nil {
			return cli.UsageErrOf(e, err)
		}
	}
	home, err := cache.Home(e.Getenv)
	if err != nil {
		return cli.Fail(e, errcode.Newf(errcode.ConfigUnavailable, "%v", err))
	}
	runs, err := cache.OpenExplain(home).Runs(pipeline, file)
	if err != nil {
		return cli.Fail(e, errcode.Newf(errcode.CacheUnreadable, "%v", err))
	}
	var run *cache.RunRecord
	for _, r := range runs {
		if stage == "" || slices.ContainsFunc(r.Stages, func(s cache.StageLookup) bool { return s.Stage == stage }) {
			run = r
			break
		}
	}
	if run == nil {
		what := "any pipeline"
		switch {
		case file != "":
			what = file
		case pipeline != "":
			what = "pipeline " + pipeline
		}
		if stage != "" {
			what += " with a stage " + stage
		}
		return cli.UsageErr(e, errcode.ConfigInvalid, "no recorded run of %s under %s: run it first (piship run, build or release record every run)", what, filepath.Join(home, "explain"))
	}
	doc := ExplainJSON(run, stage)
	if asJSON {
		cli.PrintJSON(e, doc)
		return cli.ExitOK
	}
	pipelines.WriteAll(e.Stdout, explainText(doc))
	return cli.ExitOK
}

// explainText prints one block per stage: the verdict, and for each lookup
// the cache, the key, why it missed, and the key's named inputs.
func explainText(d ExplainDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pipeline %s (%s), run finished %s\n", d.Pipeline, d.File, d.Finished)
	if !d.Cacheable {
		b.WriteString("no cacheable stages: no stage of this run looked up a cache, so every stage that ran, ran; nothing to explain (an exec stage is cached with cache = true)\n")
	}
	for _, st := range d.Stages {
		verdict := map[string]string{"hit": "cached", "miss": "ran (cache miss)", "none": "no cache"}[st.Cache]
		title := st.Kind + " " + st.Stage // graph.Stage.Title's rule
		if st.Stage == st.Kind {
			title = st.Stage
		}
		fmt.Fprintf(&b, "%s: %s, %s\n", title, st.Status, verdict)
		for _, lk := range st.Lookups {
			outcome := "hit"
			if !lk.Hit {
				outcome = "miss: " + lk.Reason
			}
			if lk.Remote != "" {
				outcome += " (" + lk.Remote + ")"
			}
			fmt.Fprintf(&b, "  %s cache %s: %s\n", lk.Cache, lk.Key, outcome)
			if len(lk.Inputs) == 0 {
				fmt.Fprintf(&b, "    %s\n", cache.ReasonNoInputs)
			}
			for _, in := range lk.Inputs {
				fmt.Fprintf(&b, "    %-32s %s\n", in.Name, in.Value)
			}
		}
	}
	return b.String()
}
