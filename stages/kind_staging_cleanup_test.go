package stages

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/runtimecache"
	"piship.dev/piship/stages/stage"
)

// evict unset means true: the cleanup keeps the newest 3 runtime entries;
// evict = false keeps them all.
func TestStagingCleanupEvictDefaultsToTrue(t *testing.T) {
	for _, tc := range []struct {
		evict cty.Value
		left  int
	}{{cty.NullVal(cty.Bool), 3}, {cty.False, 5}, {cty.True, 3}} {
		home := t.TempDir()
		rt := runtimecache.Open(home)
		for i := range 5 {
			key := fmt.Sprintf("i-%020x", i+1)
			if _, err := rt.Create(key, func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "f"), []byte(key), 0o644)
			}); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Duration(10-i) * time.Hour)
			if err := os.Chtimes(filepath.Join(rt.Root(), key), old, old); err != nil {
				t.Fatal(err)
			}
		}
		inv := &stage.Invocation{Name: "cleanup", Log: io.Discard,
			Getenv: func(k string) string {
				if k == "PISHIP_CACHE_HOME" {
					return home
				}
				return ""
			},
			Config: cty.ObjectVal(map[string]cty.Value{"staging": cty.NullVal(cty.String), "evict": tc.evict})}
		if _, err := stage.Define(StagingCleanup{}).Run(context.Background(), inv); err != nil {
			t.Fatal(err)
		}
		left := 0
		for i := range 5 {
			if _, err := os.Stat(filepath.Join(rt.Root(), fmt.Sprintf("i-%020x", i+1))); err == nil {
				left++
			}
		}
		if left != tc.left {
			t.Errorf("evict = %#v: %d entries left, want %d", tc.evict, left, tc.left)
		}
	}
}
