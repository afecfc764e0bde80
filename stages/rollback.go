package stages

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/home"
)

// Rollback switches an installed distribution back to its previous release.
type Rollback struct{}

func (Rollback) Name() string    { return "rollback" }
func (Rollback) Version() string { return "1" }
func (Rollback) Doc() string {
	return "Makes the retained previous release active again without scanning its payload; a second rollback is refused (ROLLBACK_FAILED)."
}

func (Rollback) Attrs() []Attr { return []Attr{{Name: "id", Type: cty.String, Required: true}} }

func (Rollback) Outputs() []Output {
	return []Output{{Name: "active", Type: cty.String}, {Name: "from", Type: cty.String}}
}

// Run implements Kind.
func (Rollback) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	o, err := homeOptions(inv)
	if err != nil {
		return nil, err
	}
	r, err := home.Rollback(ctx, o, stringOr(inv.Get("id"), ""))
	if err != nil {
		return nil, err
	}
	return map[string]cty.Value{"active": cty.StringVal(r.Active), "from": cty.StringVal(r.RolledBackFrom)}, nil
}
