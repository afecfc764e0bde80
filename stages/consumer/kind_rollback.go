package consumer

import (
	"context"

	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage"
)

// Rollback switches an installed distribution back to its previous release.
type Rollback struct{}

func (Rollback) Name() string    { return "rollback" }
func (Rollback) Version() string { return "1" }
func (Rollback) Doc() string {
	return "Makes the retained previous release active again without scanning its payload; a second rollback is refused (ROLLBACK_FAILED)."
}

// RollbackConfig is the configuration of a rollback stage.
type RollbackConfig struct {
	ID string `cty:"id" required:"true" doc:"the installed distribution to roll back"`
}

// RollbackOutputs is what a rollback stage produces.
type RollbackOutputs struct {
	Active string `cty:"active" doc:"the version active after the rollback (the previous one)"`
	From   string `cty:"from" doc:"the version that was active before"`
}

// Run implements stage.Typed.
func (Rollback) Run(ctx context.Context, inv *stage.Invocation, cfg RollbackConfig) (RollbackOutputs, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return RollbackOutputs{}, err
	}
	r, err := home.Rollback(ctx, o, cfg.ID)
	if err != nil {
		return RollbackOutputs{}, err
	}
	return RollbackOutputs{Active: r.Active, From: r.RolledBackFrom}, nil
}
