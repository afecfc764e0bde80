package stages

import (
	"context"

	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// Strip removes what a running Node process never reads.
type Strip struct{}

func (Strip) Name() string    { return "strip" }
func (Strip) Version() string { return "1" }
func (Strip) Doc() string {
	return "Removes *.map, *.d.ts, *.d.mts and *.d.cts below dir; keeps everything else (Markdown included)."
}

// StripConfig is the configuration of a strip stage.
type StripConfig struct {
	Dir string `cty:"dir" required:"true" doc:"directory to strip"`
}

// StripOutputs are the outputs of a strip stage.
type StripOutputs struct {
	Files int   `cty:"files" doc:"files removed"`
	Bytes int64 `cty:"bytes" doc:"bytes removed"`
}

// Run implements stage.Typed.
func (Strip) Run(ctx context.Context, inv *stage.Invocation, c StripConfig) (StripOutputs, error) {
	n, b, err := payload.Strip(ctx, stage.Resolve(inv.Dir, c.Dir))
	if err != nil {
		return StripOutputs{}, err
	}
	return StripOutputs{Files: n, Bytes: b}, nil
}
