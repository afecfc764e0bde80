package stages

import (
	"context"
	"fmt"
	"time"

	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/stage"
)

// StagingCleanup removes an unpublished staging directory, releases the
// build lock and evicts old runtime cache entries within a time budget.
// Pipelines mark it always = true.
type StagingCleanup struct{}

func (StagingCleanup) Name() string    { return "staging_cleanup" }
func (StagingCleanup) Version() string { return "2" }
func (StagingCleanup) Doc() string {
	return "Removes the staging directory if it was not published and releases the build lock; then keeps the newest runtime (i-) cache entries (keep_runtimes, at least 3: a distribution with vendored Pi packages uses one per package, a release one set per target) and as many bundle (b-) ones (at least 6), within a time budget that never holds up the build."
}

// StagingCleanupConfig is the configuration of a staging_cleanup stage.
type StagingCleanupConfig struct {
	Staging string `cty:"staging" doc:"the staging directory (empty or null: nothing to remove)"`
	Evict   *bool  `cty:"evict" doc:"evict old runtime cache entries (default true)"`
	// KeepRuntimes is how many runtime (i-) entries eviction keeps: this
	// run's (the runtime's and one per vendored Pi package, for every
	// target of a release) plus two more.
	KeepRuntimes int `cty:"keep_runtimes" doc:"runtime (i-) cache entries to keep (default 3; pipelines pass 2 + the run's own entries, every target's); bundle (b-) entries: as many, at least 6"`
}

// StagingCleanupOutputs are the outputs of a staging_cleanup stage: none.
type StagingCleanupOutputs struct{}

// Run implements stage.Typed.
func (StagingCleanup) Run(ctx context.Context, inv *stage.Invocation, c StagingCleanupConfig) (StagingCleanupOutputs, error) {
	var firstErr error
	if dir := c.Staging; dir != "" {
		if st, ok := payload.Lookup(dir); ok {
			firstErr = st.Close()
		}
	}
	if c.Evict == nil || *c.Evict {
		keepRuntimes := max(c.KeepRuntimes, 3)
		if rt, err := runtimeCacheAt(ctx, inv, ""); err == nil {
			for _, p := range []struct {
				prefix string
				keep   int
			}{{"i-", keepRuntimes}, {"b-", max(6, keepRuntimes)}} { // a bundle per target: keep_runtimes counts them all
				if err := rt.Evict(p.prefix, p.keep, 300*time.Millisecond); err != nil {
					fmt.Fprintf(inv.Log, "%s: runtime cache eviction: %v\n", inv.Pipeline, err)
				}
			}
		}
	}
	return StagingCleanupOutputs{}, firstErr
}
