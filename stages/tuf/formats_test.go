package tuf

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addTargets publishes files as targets with the given custom objects in
// one targets version.
func addTargets(t *testing.T, r *Repository, ks keySet, targets map[string]Custom) map[string]string {
	t.Helper()
	files := map[string]string{}
	for name, c := range targets {
		p := writeArchive(t, name, 3000+len(files))
		if _, err := r.addTarget(p, c.Channel, c); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	if err := r.publish([]Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	return files
}

func relCustom(format, version string) Custom {
	c := customFor(format, "linux-x64")
	c.Version, c.Channel, c.LockSHA256 = version, "stable", strings.Repeat("ab", 32)
	return c
}

// A release published as v2 with a v1 twin: this piship takes v2; a piship
// that reads only v1 (which picks by "target" and knows no format) sees
// the v1 twin and nothing else; deltas are never taken for a release.
func TestUpdateTakesTheNewestFormatItReads(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	d := relCustom(FormatDeltaV1, "1.1.0")
	d.FromVersion, d.FromTree, d.ToTree = "1.0.0", strings.Repeat("1", 64), strings.Repeat("2", 64)
	future := relCustom(FormatArchiveV2, "1.2.0")
	future.Format = "piship-archive/v9"
	addTargets(t, r, ks, map[string]Custom{
		"hello-1.0.0-linux-x64.tar.gz":           relCustom(FormatArchiveV1, "1.0.0"),
		"hello-1.1.0-linux-x64.tar.zst":          relCustom(FormatArchiveV2, "1.1.0"),
		"hello-1.1.0-linux-x64.tar.gz":           relCustom(FormatArchiveV1, "1.1.0"),
		"hello-1.1.0-linux-x64.from-1.0.0.delta": d,
		"hello-1.2.0-linux-x64.tar.v9":           future,
	})
	for i := 0; i < 5; i++ { // map order must not decide
		in := newInstall(t, r)
		res, err := in.update(t, r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(res.Archive) != "hello-1.1.0-linux-x64.tar.zst" || res.Release.ArchiveFormat() != FormatArchiveV2 || res.Delta != nil {
			t.Fatalf("update took %s (%+v), want the v2 archive of 1.1.0", res.Archive, res.Release)
		}
	}
	// What a v1-only piship decodes from every target's custom object.
	type oldCustom struct{ Version, Target, LockSHA256, Channel string }
	var seen []string
	for p, tf := range r.Targets.Signed.Targets {
		var c oldCustom
		if err := json.Unmarshal(*tf.Custom, &c); err != nil {
			t.Fatal(err)
		}
		if c.Channel == "stable" && c.Target == "linux-x64" {
			seen = append(seen, p)
		}
	}
	if len(seen) != 2 || !strings.HasSuffix(seen[0], ".tar.gz") || !strings.HasSuffix(seen[1], ".tar.gz") {
		t.Fatalf("a v1-only client sees %v, want the two .tar.gz archives only", seen)
	}
}

// A delta is downloaded instead of the archive only when the installed
// tree is its base; otherwise the archive, and the update says why.
func TestUpdateTakesADeltaOnlyFromItsBase(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	d := relCustom(FormatDeltaV1, "1.1.0")
	d.FromVersion, d.FromTree, d.ToTree = "1.0.0", strings.Repeat("1", 64), strings.Repeat("2", 64)
	files := addTargets(t, r, ks, map[string]Custom{
		"hello-1.0.0-linux-x64.tar.zst":          relCustom(FormatArchiveV2, "1.0.0"),
		"hello-1.1.0-linux-x64.tar.zst":          relCustom(FormatArchiveV2, "1.1.0"),
		"hello-1.1.0-linux-x64.from-1.0.0.delta": d,
	})
	for _, tc := range []struct {
		name, active, base string
		delta              bool
		why                string
	}{
		{"its base", "1.0.0", d.FromTree, true, ""},
		{"a changed tree", "1.0.0", strings.Repeat("3", 64), false, "is not the tree it was made from (tree 333333333333, the delta's 111111111111): downloading the full archive"},
		{"no recorded tree", "1.0.0", "", false, "records no tree digest"},
		{"another version", "0.9.0", d.FromTree, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := newInstall(t, r)
			o := in.opts(r.Dir)
			o.Active, o.BaseTree = tc.active, tc.base
			check := o
			check.Check = true
			cres, err := Update(context.Background(), check)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Update(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			if tc.delta {
				want, _ := os.ReadFile(files["hello-1.1.0-linux-x64.from-1.0.0.delta"])
				got, err := os.ReadFile(res.Delta.Path)
				if err != nil || string(got) != string(want) || res.Archive != "" || cres.Delta == nil || cres.Delta.Path != "" {
					t.Fatalf("delta update: %+v (check %+v): %v", res, cres, err)
				}
				if res.SHA256 == "" || res.TargetPath != "stable/hello-1.1.0-linux-x64.tar.zst" {
					t.Fatalf("the release's archive target is not reported beside the delta: %+v", res)
				}
				return
			}
			if res.Delta != nil || filepath.Base(res.Archive) != "hello-1.1.0-linux-x64.tar.zst" || !strings.Contains(res.DeltaSkipped, tc.why) || (tc.why == "") != (res.DeltaSkipped == "") {
				t.Fatalf("update: archive %s, delta %+v, skipped %q; want the archive and %q", res.Archive, res.Delta, res.DeltaSkipped, tc.why)
			}
			if cres.DeltaSkipped != res.DeltaSkipped {
				t.Fatalf("check says %q, the update %q", cres.DeltaSkipped, res.DeltaSkipped)
			}
		})
	}
}
