package stages

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// Strip removes what a running Node process never reads.
type Strip struct{}

func (Strip) Name() string    { return "strip" }
func (Strip) Version() string { return "1" }
func (Strip) Doc() string {
	return "Removes *.map, *.d.ts, *.d.mts and *.d.cts below dir; keeps everything else (Markdown included)."
}

func (Strip) Attrs() []Attr {
	return []Attr{{Name: "dir", Type: cty.String, Required: true, Doc: "directory to strip"}}
}

func (Strip) Outputs() []Output {
	return []Output{{Name: "files", Type: cty.Number, Doc: "files removed"}, {Name: "bytes", Type: cty.Number, Doc: "bytes removed"}}
}

// Run implements Kind.
func (Strip) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	n, b, err := payload.Strip(ctx, Resolve(inv.Dir, stringOr(inv.Get("dir"), "")))
	if err != nil {
		return nil, err
	}
	return map[string]cty.Value{"files": cty.NumberIntVal(int64(n)), "bytes": cty.NumberIntVal(b)}, nil
}
