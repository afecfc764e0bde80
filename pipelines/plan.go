package pipelines

import (
	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
)

// The plans of run, build and release (--plan): the pipeline each would
// run, with the same inputs, planned by engine.PlanRun; nothing runs.

// PlanRun is the plan of a run of the prepared pipeline.
func (p *Prepared) PlanRun(c Config) (*engine.RunPlan, error) {
	return plan(c, p.Graph, p.inputs)
}

// PlanBuild is the plan of Build: the distribution checked as Build
// checks it, then the build pipeline it would run planned with its inputs.
func PlanBuild(c Config, a BuildArgs) (*engine.RunPlan, error) {
	if err := checkDistribution(c, "build", a.Distribution); err != nil {
		return nil, err
	}
	return planForDistribution(c, "build", a.Distribution, a.Builtin, a.values())
}

// PlanRelease is the plan of Release, as PlanBuild is Build's.
func PlanRelease(c Config, a ReleaseArgs) (*engine.RunPlan, error) {
	if err := checkDistribution(c, "release", a.Distribution); err != nil {
		return nil, err
	}
	return planForDistribution(c, "release", a.Distribution, a.Builtin, a.values())
}

// planForDistribution plans the pipeline name of dist that build or
// release would run (FindForDistribution).
func planForDistribution(c Config, name, dist string, builtin bool, values map[string]cty.Value) (*engine.RunPlan, error) {
	src, err := FindForDistribution(name, dist, builtin)
	g, rep := loadSource(c, src, err)
	if rep != nil {
		return nil, rep
	}
	return plan(c, g, declaredInputs(c, name, g, values))
}

// plan plans g with the engine options a run of it would have; an input
// the pipeline refuses is a *Reported usage error, printed.
func plan(c Config, g *graph.Graph, values map[string]cty.Value) (*engine.RunPlan, error) {
	rp, err := engine.PlanRun(g, c.Options(g, values))
	if err != nil {
		return nil, c.usageOf(err)
	}
	return rp, nil
}
