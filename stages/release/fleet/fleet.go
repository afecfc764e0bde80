// Package fleet splits a release over a CI fleet's runners and merges it
// back, as GoReleaser Pro's split and merge do: each runner releases its
// own target (piship release --target T --to oci://...) and Push puts that
// target's release in the registry, one artifact per target (ArtifactOf,
// on stages/oci's release layout); Merge (piship release --merge --from oci://...) pulls every
// target the distribution declares for the version, holds each to the
// checkout's piship.lock and to the release rules (stages/verify, the
// checks verify-release makes), and writes the releases directory one
// multi-target run writes: each target's archive, sidecar, build-info and
// release directory, the release set <id>-<version>.SHA256SUMS and
// install.sh/install.ps1 (release.WriteSet, the release_set stage's code).
//
// Every byte a merge writes is a byte a runner's release wrote: when every
// target ran on the same host, the merged set, archives and checksums are
// the single run's byte for byte. Smoke verdicts are each runner's, and
// release.json names the runner (its runner field).
package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/oci"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/stage/errcode"
)

// Pushed is one target's release as Push left it in the registry.
type Pushed struct {
	Target string
	// Ref is oci://host/repository:<version>-<target>; Digest the
	// artifact's manifest digest.
	Ref, Digest string
	Files       int
}

// Push pushes the release published at dir (<releases>/<id>-<version>-<target>)
// with its archive arc as that target's artifact (ArtifactOf: the same
// artifact piship publish pushes).
func Push(ctx context.Context, repo *oci.Repo, dir, arc string) (Pushed, error) {
	a, err := ArtifactOf(dir, arc)
	if err != nil {
		return Pushed{}, err
	}
	desc, err := repo.PushTarget(ctx, a.Files, a.Annotations)
	if err != nil {
		return Pushed{}, registryErr(repo, "cannot push "+a.String(), err)
	}
	return Pushed{Target: a.Release.Target, Ref: repo.Describe(oci.TargetTag(a.Release.Distribution.Version, a.Release.Target)),
		Digest: desc.Digest.String(), Files: len(a.Files)}, nil
}

// registryErr keeps a coded error's code (the budget's
// REGISTRY_UNAVAILABLE, a pull's INTEGRITY_FAILED) and gives any other
// REGISTRY_UNAVAILABLE.
func registryErr(repo *oci.Repo, what string, err error) error {
	if errcode.Of(err) != "" {
		return errcode.Errorf(errcode.Of(err), "%s (%s): %w", what, repo.Ref, err)
	}
	return errcode.Newf(errcode.RegistryUnavailable, "%s (%s): %v", what, repo.Ref, err)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// Want is what a merge collects: the distribution's id, the version and
// every target it declares, and the digest of the checkout's piship.lock
// each pulled target must have been built from.
type Want struct {
	ID, Version string
	Targets     []string
	LockSHA256  string
}

// Merged is a merged release set.
type Merged struct {
	ID, Version string
	Sums        string // <releases>/<id>-<version>.SHA256SUMS
	Targets     []MergedTarget
}

// MergedTarget is one target of a merge, as its runner released it.
type MergedTarget struct {
	Target, Name string
	Path         string // the release directory in releases
	Archive      string
	SHA256       string
	ArchiveBytes int64
	Files        int // the payload's files (release.json)
	// Runner is the runner release.json names ("" when it names none);
	// Smoke is that runner's verdict: passed, none or not-run: <reason>.
	Runner, Smoke string
	// From is the artifact it was pulled from: oci://host/repo@<digest>.
	From string
	// BuildInfo is the runner's build-info beside the release ("" when it
	// pushed none); RuntimeCache what it says of the runner's runtime.
	BuildInfo, RuntimeCache string
}

// Merge pulls every target of w from repo, checks each (Check), and
// publishes them into releases with the release set over their archives.
// A target no runner has pushed is TARGET_NOT_PUSHED naming every such
// target; nothing is written into releases until every target is pulled
// and checked.
func Merge(ctx context.Context, repo *oci.Repo, w Want, releases string) (*Merged, error) {
	var found []oci.Target
	var missing []string
	for _, t := range w.Targets {
		a, err := repo.FetchTarget(ctx, w.Version, t)
		switch {
		case oci.IsNotFound(err):
			missing = append(missing, t)
		case err != nil:
			return nil, registryErr(repo, "cannot read "+oci.TargetTag(w.Version, t), err)
		default:
			found = append(found, a)
		}
	}
	if len(missing) > 0 {
		tags, runs := make([]string, len(missing)), make([]string, len(missing))
		for i, t := range missing {
			tags[i] = oci.TargetTag(w.Version, t)
			runs[i] = "`piship release DIST --target " + t + " --to " + repo.Ref.String() + "` on a " + t + " runner"
		}
		return nil, errcode.Newf(errcode.TargetNotPushed, "release --merge: %s %s: no runner has pushed %s to %s (no tag %s): run %s, then merge again",
			w.ID, w.Version, canon.Of(len(missing), len(w.Targets), "target")+" ("+strings.Join(missing, ", ")+")", repo.Ref, strings.Join(tags, ", "), strings.Join(runs, " and "))
	}
	if err := os.MkdirAll(releases, 0o755); err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot create %s: %v", releases, err)
	}
	tmp, err := os.MkdirTemp(releases, ".merge-"+w.ID+"-"+w.Version+"-*")
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot create a staging directory in %s: %v", releases, err)
	}
	defer os.RemoveAll(tmp)
	m := &Merged{ID: w.ID, Version: w.Version}
	for _, a := range found {
		t := a.Annotation(oci.AnnotationTarget)
		dir := filepath.Join(tmp, t)
		if _, err := repo.PullTarget(ctx, a, dir); err != nil {
			return nil, registryErr(repo, "cannot pull "+oci.TargetTag(w.Version, t), err)
		}
		mt, err := Check(ctx, w, repo.Ref, a, dir)
		if err != nil {
			return nil, err
		}
		mt.From = repo.Ref.String() + "@" + a.Desc.Digest.String()
		m.Targets = append(m.Targets, mt)
	}
	// Every target is pulled and checked: publish them, then the set.
	var entries []release.SumEntry
	for i, mt := range m.Targets {
		if err := publish(filepath.Join(tmp, mt.Target), releases, mt); err != nil {
			return nil, errcode.Newf(errcode.ConfigUnavailable, "cannot publish %s into %s: %v", mt.Name, releases, err)
		}
		mt.Path, mt.Archive = filepath.Join(releases, mt.Name), filepath.Join(releases, filepath.Base(mt.Archive))
		if mt.BuildInfo != "" {
			mt.BuildInfo = release.BuildInfoPath(releases, mt.Name)
		}
		m.Targets[i] = mt
		n, _ := release.ParseArchiveName(filepath.Base(mt.Archive))
		entries = append(entries, release.SumEntry{Archive: filepath.Base(mt.Archive), SHA256: mt.SHA256, Name: n})
	}
	s, err := release.WriteSet(releases, w.ID, w.Version, entries)
	if err != nil {
		return nil, errcode.Newf(errcode.ConfigUnavailable, "release --merge: %v", err)
	}
	m.Sums = s.Path
	slices.SortFunc(m.Targets, func(a, b MergedTarget) int { return strings.Compare(a.Target, b.Target) })
	return m, nil
}

// publish moves a pulled target's files from dir into releases: the
// release directory (an earlier one of the same name set aside first and
// removed once the new one stands), the build-info, the archive and its
// sidecar last, so a sidecar always describes the archive beside it.
func publish(dir, releases string, mt MergedTarget) error {
	final := filepath.Join(releases, mt.Name)
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old = filepath.Join(filepath.Dir(dir), ".old-"+mt.Name)
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("cannot set the earlier release aside: %v", err)
		}
	}
	if err := os.Rename(filepath.Join(dir, mt.Name), final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return err
	}
	arc := filepath.Base(mt.Archive)
	names := []string{arc, arc + ".sha256"}
	if mt.BuildInfo != "" {
		names = append([]string{release.BuildInfoName(mt.Name)}, names...)
	}
	for _, f := range names {
		if err := os.Rename(filepath.Join(dir, f), filepath.Join(releases, f)); err != nil {
			return err
		}
	}
	// One archive per release: the same release in the other format goes.
	for _, f := range []archive.Format{archive.V1, archive.V2} {
		if other := mt.Name + f.Ext(); other != arc {
			for _, p := range []string{other + ".sha256", other} {
				if err := os.Remove(filepath.Join(releases, p)); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// WantOf is what a merge of the distribution in dir collects: its id,
// the version vo resolves (as release_inputs resolves it), every entry of
// release.targets, and the digest of its piship.lock, which must be
// current (LOCK_INVALID when stale, as for a release).
func WantOf(ctx context.Context, dir string, vo distribution.VersionOptions) (Want, error) {
	d, err := buildstate.LoadManifest(dir)
	if err != nil {
		return Want{}, err
	}
	if _, err := distribution.CheckLock(d); err != nil {
		return Want{}, err
	}
	lock, err := atomicfs.ReadRegular(filepath.Join(d.Dir, "piship.lock"), 0)
	if err != nil {
		return Want{}, errcode.Newf(errcode.ConfigUnavailable, "%v", err)
	}
	rv, err := d.ResolveVersion(ctx, vo)
	if err != nil {
		return Want{}, err
	}
	return Want{ID: d.ID, Version: rv.Version, Targets: slices.Clone(d.Release.Targets), LockSHA256: canon.SHA256Hex(lock)}, nil
}
