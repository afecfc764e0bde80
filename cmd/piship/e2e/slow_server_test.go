package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/updatesource/updatesourcetest"
)

// updateFromSlowServers runs `piship update --from http://127.0.0.1:P/`
// against a server that never sends headers, or sends them and then one
// byte a second, for the channel document and for the archive: each
// update ends with UPDATE_FAILED naming the limit that fired, within the
// budget the flags set (plus the process's own start), and the installed
// version (w has one) stays active and launchable with nothing left in its
// downloads. TestInstallUpdateRollbackThroughTheShim/http calls it on its
// world, which costs a release of two versions.
func updateFromSlowServers(t *testing.T, w *consumerWorld) {
	before := w.active()
	archive := filepath.Base(w.release["1.1.0"])
	const slack = 5 * time.Second
	for _, c := range []struct {
		name, suffix string
		mode         updatesourcetest.Mode
		flags        []string
		budget       time.Duration
		want         []string
	}{
		{"no headers", "/timestamp.json", updatesourcetest.Silent, []string{"--timeout", "1s"}, time.Second,
			[]string{"UPDATE_FAILED", "sent no response headers", "/timestamp.json", "within the 1s header timeout", "raise --timeout"}},
		{"a byte a second", "/timestamp.json", updatesourcetest.Trickle, []string{"--max-time", "2s"}, 2 * time.Second,
			[]string{"UPDATE_FAILED", "/timestamp.json did not arrive within the 2s overall budget", "raise --max-time"}},
		{"archive, no headers", "." + archive, updatesourcetest.Silent, []string{"--timeout", "1s"}, time.Second,
			[]string{"UPDATE_FAILED", "sent no response headers", archive, "header timeout"}},
		{"archive, a byte a second", "." + archive, updatesourcetest.Trickle, []string{"--max-time", "2s"}, 2 * time.Second,
			[]string{"UPDATE_FAILED", archive + " did not arrive within the 2s overall budget for an archive"}},
	} {
		t.Run("slow server, "+c.name, func(t *testing.T) {
			// The channel without the delta, so the update downloads the
			// archive (a delta that cannot be downloaded falls back to it:
			// TestDeltaUpdates).
			from := updatesourcetest.Serve(t, updatesourcetest.Options{Mode: c.mode, Suffix: c.suffix, Dir: w.chanArchives})
			start := time.Now()
			out, err := w.try(append([]string{"update", w.id, "--from", from}, c.flags...)...)
			took := time.Since(start)
			if err == nil {
				t.Fatalf("update succeeded:\n%s", out)
			}
			for _, want := range c.want {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			if took > c.budget+slack {
				t.Errorf("the update took %v; its budget is %v", took, c.budget)
			}
			if w.active() != before {
				t.Errorf("active after a failed update: %s", w.active())
			}
		})
	}
	if got := w.launch("--version"); got != before {
		t.Fatalf("launch after the failed updates: %q", got)
	}
	entries, _ := os.ReadDir(filepath.Join(w.envValue("PISHIP_INSTALL_HOME="), "apps", w.id, ".downloads"))
	for _, e := range entries {
		t.Errorf("left in the downloads: %s", e.Name())
	}
}
