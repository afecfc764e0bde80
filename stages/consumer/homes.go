package consumer

import (
	"strconv"
	"time"

	"piship.dev/piship/stages/home"
	"piship.dev/piship/stages/stage"
)

// homeOptions are the home.Options of a consumer kind's run (home.ForEnv,
// the one way they are built): home's lines about what it is doing
// (extracting, activated, rolled back) are the stage's progress, its
// warnings the stage's log.
func homeOptions(inv *stage.Invocation) (home.Options, error) {
	return home.ForEnv(inv.Getenv, inv.Log, inv.Progress)
}

// reclaimBudget reads PISHIP_RECLAIM_BUDGET_MS (default def).
func reclaimBudget(inv *stage.Invocation, def time.Duration) time.Duration {
	if v := inv.Getenv("PISHIP_RECLAIM_BUDGET_MS"); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return def
}
