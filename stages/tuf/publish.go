package tuf

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/delta"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/semver"
)

// DefaultDeltas is how many earlier releases of a channel repo add makes
// a delta from, for each target of a new release.
const DefaultDeltas = 3

// PublishOptions are what repo add publishes beside each release archive.
type PublishOptions struct {
	// Deltas is how many of the channel's newest earlier releases of the
	// same target get a delta to the new release (0: none).
	Deltas int
	// V1Twin publishes a piship-archive/v1 copy of each v2 archive
	// beside it, for installations whose piship reads only v1 (Custom's
	// comment says how each picks its own).
	V1Twin bool
	// Logf reports each delta and twin published or left out.
	Logf func(format string, args ...any)
}

func (o PublishOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// extra makes the twins and deltas of the releases just added to
// r.Targets (not yet signed) in a temporary directory under r.Dir, and
// adds them as targets.
func (r *Repository) extra(ctx context.Context, rels []Release, o PublishOptions) error {
	if !o.V1Twin && o.Deltas <= 0 {
		return nil
	}
	tmp, err := os.MkdirTemp(r.Dir, ".publish-")
	if err != nil {
		return configErr("cannot make a temporary directory in %s: %v", r.Dir, err)
	}
	defer os.RemoveAll(tmp)
	for _, rel := range rels {
		if o.V1Twin && rel.Format == FormatArchiveV2 {
			if err := r.addTwin(ctx, rel, tmp, o); err != nil {
				return err
			}
		}
		if o.Deltas > 0 {
			if err := r.addDeltas(ctx, rel, tmp, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// addTwin writes the v1 archive of the tree rel's v2 archive holds (its
// entries and their mtime, so the twin is as reproducible as the
// release) and adds it as a target.
func (r *Repository) addTwin(ctx context.Context, rel Release, tmp string, o PublishOptions) error {
	n, why := release.ParseArchiveName(filepath.Base(rel.Archive))
	if why != "" {
		return configErr("%s: %s", rel.Archive, why)
	}
	twin := filepath.Join(tmp, n.ID+"-"+n.Version+"-"+n.Target+archive.V1.Ext())
	if err := archive.Recode(ctx, twin, rel.Archive, archive.V1); err != nil {
		return configErr("cannot write the v1 twin of %s: %v", rel.Archive, err)
	}
	t := rel
	t.Archive, t.Format, t.Notes, t.RegistryBlob = twin, FormatArchiveV1, "", "" // the twin is served from targets/ only
	tf, err := r.addArchive(t)
	if err != nil {
		return err
	}
	o.logf("published %s: the piship-archive/v1 twin of %s %s for %s (%d bytes), for installations whose piship reads only v1", tf.Path, rel.Version, rel.Target, tf.Length)
	return nil
}

// published is an archive target of the repository.
type published struct {
	path    string
	c       Custom
	version semver.Version
	tf      *metadata.TargetFiles
}

// earlier lists the archive targets of channel ch for target, older than
// version, newest first, one per version (the format this piship prefers).
func (r *Repository) earlier(ch, target, version string) []published {
	v, _ := semver.Parse(version)
	best := map[string]published{}
	for p, tf := range r.Targets.Signed.Targets {
		if tf.Custom == nil {
			continue
		}
		var c Custom
		if json.Unmarshal(*tf.Custom, &c) != nil || c.Channel != ch || c.For() != target || formatRank(c.ArchiveFormat()) < 0 || !plainTarget(p, ch) {
			continue
		}
		cv, err := semver.Parse(c.Version)
		if err != nil || semver.Compare(cv, v) >= 0 {
			continue
		}
		if b, ok := best[c.Version]; !ok || formatRank(c.ArchiveFormat()) < formatRank(b.c.ArchiveFormat()) {
			best[c.Version] = published{p, c, cv, tf}
		}
	}
	out := slices.Collect(maps.Values(best))
	slices.SortFunc(out, func(a, b published) int { return semver.Compare(b.version, a.version) })
	return out
}

// DeltaName is the file name of the delta from version from to the
// release archive named archiveName: <id>-<version>-<target>.from-<from>.delta.
func DeltaName(archiveName, from string) string {
	name, _ := archive.TrimExt(archiveName)
	return name + ".from-" + from + ".delta"
}

// addDeltas makes the deltas from the o.Deltas newest earlier releases of
// rel's channel and target to rel, and adds each that is at most half
// the archive's size as a target.
func (r *Repository) addDeltas(ctx context.Context, rel Release, tmp string, o PublishOptions) error {
	prev := r.earlier(rel.Channel, rel.Target, rel.Version)
	if len(prev) > o.Deltas {
		prev = prev[:o.Deltas]
	}
	fi, err := os.Stat(rel.Archive)
	if err != nil {
		return configErr("cannot read the release archive %s: %v", rel.Archive, err)
	}
	for _, p := range prev {
		name := DeltaName(filepath.Base(rel.Archive), p.c.Version)
		tp := TargetPath(rel.Channel, name)
		if _, ok := r.Targets.Signed.Targets[tp]; ok {
			continue // published with the release before: deltas are never replaced
		}
		from := r.targetFile(p.c.Channel, hex.EncodeToString(p.tf.Hashes["sha256"]), path.Base(p.path))
		file := filepath.Join(tmp, name)
		res, err := delta.FromArchives(ctx, file, from, rel.Archive, delta.Meta{FromVersion: p.c.Version, ToVersion: rel.Version, Target: rel.Target})
		if err != nil {
			return configErr("cannot make the delta from %s %s to %s: %v", p.c.Version, rel.Target, rel.Version, err)
		}
		if res.Size*2 > fi.Size() {
			o.logf("not published: the delta from %s to %s for %s is %d bytes, more than half of the archive's %d: an update from %s downloads the archive", p.c.Version, rel.Version, rel.Target, res.Size, fi.Size(), p.c.Version)
			continue
		}
		c := customFor(FormatDeltaV1, rel.Target)
		c.Version, c.LockSHA256, c.Channel = rel.Version, rel.LockSHA256, rel.Channel
		c.FromVersion, c.FromTree, c.ToTree = p.c.Version, res.FromTree, res.ToTree
		tf, err := r.addTarget(file, rel.Channel, c)
		if err != nil {
			return err
		}
		o.logf("published %s: the delta from %s to %s for %s (%d bytes, %.1f%% of the archive's %d)", tf.Path, p.c.Version, rel.Version, rel.Target, res.Size, 100*float64(res.Size)/float64(fi.Size()), fi.Size())
	}
	return nil
}
