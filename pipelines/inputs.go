package pipelines

import (
	"context"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/engine"
	"piship.dev/piship/graph"
	"piship.dev/piship/graph/diag"
	"piship.dev/piship/stages/stage/errcode"
)

// Prepared is a pipeline loaded for `piship run` with its inputs parsed.
type Prepared struct {
	Graph  *graph.Graph
	inputs map[string]cty.Value
}

// Prepare finds and loads the pipeline arg (see Find; dir is --pipelines;
// builtin, --builtin, takes the built-in one of that name, see
// FindBuiltin) and parses its `name=value` inputs. It returns nil and a
// *Reported error, the problem printed, when it cannot.
func Prepare(c Config, arg, dir string, builtin bool, inputs []string) (*Prepared, error) {
	src, err := Find(arg, dir)
	if builtin {
		src, err = FindBuiltin(arg)
	}
	if err != nil {
		return nil, c.usageOf(err)
	}
	g, ok := LoadOne(c.Stderr, c.Getenv, c.Kinds, src)
	if !ok {
		return nil, &Reported{Exit: ExitUsage}
	}
	values, err := ParseInputs(g, inputs)
	if err != nil {
		return nil, c.usageOf(err)
	}
	return &Prepared{Graph: g, inputs: values}, nil
}

// Plan is the start order and cache verdicts of a dry run.
func (p *Prepared) Plan(c Config) ([]engine.PlanStep, error) {
	return engine.Plan(p.Graph, c.Options(p.Graph, p.inputs))
}

// Run executes the pipeline (see Execute).
func (p *Prepared) Run(ctx context.Context, c Config) Outcome {
	return Execute(ctx, p.Graph, p.inputs, c)
}

// ParseInputs parses `name=value` pairs against g's input declarations.
// Each input is given at most once: a second --input of one name is
// CONFIG_INVALID, not a silent last-wins.
func ParseInputs(g *graph.Graph, raw []string) (map[string]cty.Value, error) {
	values := map[string]cty.Value{}
	given := map[string]string{}
	for _, kv := range raw {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errcode.Newf(errcode.ConfigInvalid, "--input %q: write name=value", kv)
		}
		if first, dup := given[k]; dup {
			return nil, errcode.Newf(errcode.ConfigInvalid, "--input %s is given twice (%q, then %q): give each input once", k, first, kv)
		}
		given[k] = kv
		if err := declared(g, k); err != nil {
			return nil, err
		}
		val, err := g.ParseInput(k, v)
		if err != nil {
			return nil, errcode.Newf(errcode.ConfigInvalid, "%v", err)
		}
		values[k] = val
	}
	return values, nil
}

// declared refuses an --input the pipeline does not declare, with the
// closest declared name or the list of them.
func declared(g *graph.Graph, name string) error {
	names := make([]string, len(g.Inputs))
	for i, in := range g.Inputs {
		if in.Name == name {
			return nil
		}
		names[i] = in.Name
	}
	if s := diag.Suggest(name, names); s != "" {
		return errcode.Newf(errcode.ConfigInvalid, "--input %s: pipeline %q has no input %q; did you mean --input %s=...?", name, g.Name, name, s)
	}
	if len(names) == 0 {
		return errcode.Newf(errcode.ConfigInvalid, "--input %s: pipeline %q takes no inputs", name, g.Name)
	}
	return errcode.Newf(errcode.ConfigInvalid, "--input %s: pipeline %q has no input %q; its inputs are %s", name, g.Name, name, strings.Join(names, ", "))
}

// runBuiltin loads the built-in pipeline name (a file of that name in
// ./pipelines first, as `piship run` finds it) and executes it with typed
// inputs converted to cty.
func runBuiltin(ctx context.Context, c Config, name string, inputs map[string]cty.Value) Outcome {
	src, err := Find(name, "")
	return runSource(ctx, c, src, err, inputs)
}

// runForDistribution is runBuiltin for the pipelines that run on a
// distribution (build, release): found by FindForDistribution.
func runForDistribution(ctx context.Context, c Config, name, dist string, builtin bool, inputs map[string]cty.Value) Outcome {
	src, err := FindForDistribution(name, dist, builtin)
	g, rep := loadSource(c, src, err)
	if rep != nil {
		return Outcome{Code: rep.Exit}
	}
	return Execute(ctx, g, declaredInputs(c, name, g, inputs), c)
}

// declaredInputs drops from the values a command passes to the built-in
// pipeline name those a distribution's own pipeline g does not declare and
// that are the built-in's defaults: a short pipeline made of the built-in
// modules need not declare channel or no_cache to be run by piship
// release. A value that is not the default stays, and the run refuses it
// (pipeline "release" has no input "channel"), so no flag is ignored.
func declaredInputs(c Config, name string, g *graph.Graph, values map[string]cty.Value) map[string]cty.Value {
	declared := map[string]bool{}
	for _, in := range g.Inputs {
		declared[in.Name] = true
	}
	src, err := FindBuiltin(name)
	if err != nil || src.Name == g.File {
		return values
	}
	gs, _, diags := src.Parse(c.Kinds)
	if diags.HasErrors() || len(gs) != 1 {
		return values
	}
	defaults := map[string]cty.Value{}
	for _, in := range gs[0].Inputs {
		if !in.Required() {
			defaults[in.Name] = in.Default
		}
	}
	out := make(map[string]cty.Value, len(values))
	for n, v := range values {
		if d, ok := defaults[n]; ok && !declared[n] && d.Equals(v).True() {
			continue
		}
		out[n] = v
	}
	return out
}

// runSource loads src, found with err, and executes it.
func runSource(ctx context.Context, c Config, src *Source, err error, inputs map[string]cty.Value) Outcome {
	g, rep := loadSource(c, src, err)
	if rep != nil {
		return Outcome{Code: rep.Exit}
	}
	return Execute(ctx, g, inputs, c)
}

// loadSource loads src, found with err, as a run runs it (and a plan plans
// it); a *Reported error, the problem printed, when it cannot.
func loadSource(c Config, src *Source, err error) (*graph.Graph, *Reported) {
	if err != nil {
		return nil, c.usageOf(err)
	}
	g, ok := LoadOne(c.Stderr, c.Getenv, c.Kinds, src)
	if !ok {
		return nil, &Reported{Exit: ExitUsage}
	}
	return g, nil
}
