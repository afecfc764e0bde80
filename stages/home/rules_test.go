package home

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorAppliesTheReleaseRules: doctor holds the installed version to
// the release rules install applied (stages/release), not only its payload
// to the inventory: a version whose checksums.txt went, or whose SBOM
// (which only checksums.txt binds, not the receipt) was rewritten, is not
// "verified".
func TestDoctorAppliesTheReleaseRules(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		tamper     func(t *testing.T, dir string)
	}{
		{"checksums removed", "(required-files)", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "checksums.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"sbom rewritten", "(checksums)", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "sbom.spdx.json")
			data, _ := os.ReadFile(p)
			writeFile(t, p, string(data)+" ", 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			arch, _ := makeArchive(t, makeRelease(t, e.src, spec("1.0.0")))
			res := e.mustInstall(arch)
			if rep, err := Doctor(context.Background(), e.opts(), "hello", 0); err != nil || !rep.Verified {
				t.Fatalf("doctor of an intact install: %v %+v", err, rep)
			}
			tc.tamper(t, res.Dir)
			rep, err := Doctor(context.Background(), e.opts(), "hello", 0)
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, f := range rep.Found {
				found = append(found, f.String())
			}
			if rep.Verified || !strings.Contains(strings.Join(found, "\n"), tc.rule) {
				t.Fatalf("doctor after %s: verified %v, found %q (want one naming %s)", tc.name, rep.Verified, found, tc.rule)
			}
		})
	}
}
