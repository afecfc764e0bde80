package tuf

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"sort"

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

// Published is a target repo add published beside a release archive.
type Published struct {
	Path    string // the target path
	Kind    string // "v1-twin" or "delta"
	Length  int64
	Release Release // the release it belongs to
	// From is a delta's base version.
	From string
}

func (o PublishOptions) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// extra makes the twins and deltas of the releases just added to
// r.Targets (not yet signed) in a temporary directory under r.Dir, and
// adds them as targets.
func (r *Repository) extra(ctx context.Context, rels []Release, o PublishOptions) ([]Published, error) {
	if !o.V1Twin && o.Deltas <= 0 {
		return nil, nil
	}
	tmp, err := os.MkdirTemp(r.Dir, ".publish-")
	if err != nil {
		return nil, configErr("cannot make a temporary directory in %s: %v", r.Dir, err)
	}
	defer os.RemoveAll(tmp)
	var out []Published
	for _, rel := range rels {
		if o.V1Twin && rel.Format == FormatArchiveV2 {
			p, err := r.addTwin(ctx, rel, tmp)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
			o.logf("published %s: the piship-archive/v1 twin of %s %s for %s (%d bytes), for installations whose piship reads only v1", p.Path, rel.Version, rel.Target, p.Length)
		}
		if o.Deltas > 0 {
			ds, err := r.addDeltas(ctx, rel, tmp, o)
			if err != nil {
				return nil, err
			}
			out = append(out, ds...)
		}
	}
	return out, nil
}

// addTwin writes the v1 archive of the tree rel's v2 archive holds (its
// entries and their mtime, so the twin is as reproducible as the
// release) and adds it as a target.
func (r *Repository) addTwin(ctx context.Context, rel Release, tmp string) (Published, error) {
	n, why := release.ParseArchiveName(filepath.Base(rel.Archive))
	if why != "" {
		return Published{}, configErr("%s: %s", rel.Archive, why)
	}
	name := n.ID + "-" + n.Version + "-" + n.Target + archive.V1.Ext()
	twin := filepath.Join(tmp, name)
	if err := archive.Recode(ctx, twin, rel.Archive, archive.V1); err != nil {
		return Published{}, configErr("cannot write the v1 twin of %s: %v", rel.Archive, err)
	}
	t := rel
	t.Archive, t.Format, t.Notes = twin, FormatArchiveV1, ""
	tf, err := r.addArchive(t)
	if err != nil {
		return Published{}, err
	}
	return Published{Path: tf.Path, Kind: "v1-twin", Length: tf.Length, Release: rel}, nil
}

// earlier lists the archive targets of channel ch for target, older than
// version, newest first, one per version (the format this piship prefers).
func (r *Repository) earlier(ch, target, version string) []struct {
	path string
	c    Custom
	tf   *metadata.TargetFiles
} {
	type rel = struct {
		path string
		c    Custom
		tf   *metadata.TargetFiles
	}
	v, _ := semver.Parse(version)
	best := map[string]rel{}
	for p, tf := range r.Targets.Signed.Targets {
		if tf.Custom == nil {
			continue
		}
		var c Custom
		if json.Unmarshal(*tf.Custom, &c) != nil || c.Channel != ch || c.For() != target || formatRank(c.ArchiveFormat()) < 0 {
			continue
		}
		cv, err := semver.Parse(c.Version)
		if err != nil || semver.Compare(cv, v) >= 0 {
			continue
		}
		if b, ok := best[c.Version]; !ok || formatRank(c.ArchiveFormat()) < formatRank(b.c.ArchiveFormat()) {
			best[c.Version] = rel{p, c, tf}
		}
	}
	out := make([]rel, 0, len(best))
	for _, b := range best {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := semver.Parse(out[i].c.Version)
		b, _ := semver.Parse(out[j].c.Version)
		return semver.Compare(a, b) > 0
	})
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
func (r *Repository) addDeltas(ctx context.Context, rel Release, tmp string, o PublishOptions) ([]Published, error) {
	prev := r.earlier(rel.Channel, rel.Target, rel.Version)
	if len(prev) > o.Deltas {
		prev = prev[:o.Deltas]
	}
	fi, err := os.Stat(rel.Archive)
	if err != nil {
		return nil, configErr("cannot read the release archive %s: %v", rel.Archive, err)
	}
	var out []Published
	for _, p := range prev {
		name := DeltaName(filepath.Base(rel.Archive), p.c.Version)
		tp := TargetPath(rel.Channel, name)
		if _, ok := r.Targets.Signed.Targets[tp]; ok {
			continue // published with the release before: deltas are never replaced
		}
		dir, base := path.Split(p.path)
		from := filepath.Join(r.Dir, "targets", filepath.FromSlash(dir), hex.EncodeToString(p.tf.Hashes["sha256"])+"."+base)
		file := filepath.Join(tmp, name)
		res, err := delta.FromArchives(ctx, file, from, rel.Archive, delta.Meta{FromVersion: p.c.Version, ToVersion: rel.Version, Target: rel.Target})
		if err != nil {
			return nil, configErr("cannot make the delta from %s %s to %s: %v", p.c.Version, rel.Target, rel.Version, err)
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
			return nil, err
		}
		out = append(out, Published{Path: tf.Path, Kind: "delta", Length: tf.Length, Release: rel, From: p.c.Version})
		o.logf("published %s: the delta from %s to %s for %s (%d bytes, %.1f%% of the archive's %d)", tf.Path, p.c.Version, rel.Version, rel.Target, res.Size, 100*float64(res.Size)/float64(fi.Size()), fi.Size())
	}
	return out, nil
}
