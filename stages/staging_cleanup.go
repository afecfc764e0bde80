package stages

import (
	"context"
	"fmt"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// StagingCleanup removes an unpublished staging directory, releases the
// build lock and evicts old runtime cache entries within a time budget.
// Pipelines mark it always = true.
type StagingCleanup struct{}

func (StagingCleanup) Name() string    { return "staging_cleanup" }
func (StagingCleanup) Version() string { return "1" }
func (StagingCleanup) Doc() string {
	return "Removes the staging directory if it was not published and releases the build lock; then keeps the newest 3 runtime (i-) and 6 bundle (b-) cache entries, within a time budget that never holds up the build."
}

func (StagingCleanup) Attrs() []Attr {
	return []Attr{
		{Name: "staging", Type: cty.String, Doc: "the staging directory (empty or null: nothing to remove)"},
		{Name: "evict", Type: cty.Bool, Doc: "evict old runtime cache entries (default true)"},
	}
}

func (StagingCleanup) Outputs() []Output { return nil }

// Run implements Kind.
func (StagingCleanup) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	var firstErr error
	if dir := stringOr(inv.Get("staging"), ""); dir != "" {
		if st, ok := payload.Lookup(dir); ok {
			firstErr = st.Close()
		}
	}
	if e := inv.Get("evict"); e.IsNull() || e.True() {
		if rt, err := runtimeCache(inv); err == nil {
			for _, p := range []struct {
				prefix string
				keep   int
			}{{"i-", 3}, {"b-", 6}} {
				if err := rt.Evict(p.prefix, p.keep, 300*time.Millisecond); err != nil {
					fmt.Fprintf(inv.Log, "%s: runtime cache eviction: %v\n", inv.Pipeline, err)
				}
			}
		}
	}
	return map[string]cty.Value{}, firstErr
}
