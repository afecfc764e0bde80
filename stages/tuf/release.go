package tuf

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/cache"
	"piship.dev/piship/cache/atomicfs"
	piarchive "piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/semver"
	"piship.dev/piship/stages/stage/errcode"
)

// maxReleaseDoc bounds the release.json ReleaseOf reads from an archive
// (stages/updatesource's bound: a release.json is a few KiB).
const maxReleaseDoc = 1 << 20

// ReleaseOf reads the release.json inside a release archive and returns
// the Release that publishes it on channelName. The custom fields come
// from the archive itself, never from a release directory beside it, so
// what the targets role signs is what installs read; release.json is held
// to the rules install reads it by (releasejson.Parse), and the archive's
// name must be the <id>-<version>-<target><ext> piship release wrote, ext
// that of the archive's format (told by its bytes: .tar.zst, or .tar.gz).
func ReleaseOf(archive, channelName string) (Release, error) {
	f, err := atomicfs.OpenRegular(archive)
	if err != nil {
		return Release{}, configErr("cannot read the release archive %s: %v", archive, err)
	}
	defer f.Close()
	zr, format, err := piarchive.NewTarReader(f, piarchive.Limits{})
	if err != nil {
		return Release{}, configErr("%s is not a release archive (%v): give the %s (or %s) piship release wrote", archive, err, piarchive.V2.Ext(), piarchive.V1.Ext())
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var raw []byte
	for raw == nil {
		hdr, err := tr.Next()
		if err == io.EOF {
			return Release{}, configErr("%s holds no release.json: it is not a piship release archive (piship release writes <id>-<version>-<target>%s)", archive, format.Ext())
		}
		if err != nil {
			return Release{}, configErr("%s is not a readable release archive: %v", archive, err)
		}
		if strings.TrimPrefix(hdr.Name, "./") != releasejson.Name || hdr.Typeflag != tar.TypeReg {
			continue
		}
		if hdr.Size > maxReleaseDoc {
			return Release{}, configErr("%s: its release.json is larger than 1 MiB", archive)
		}
		if raw, err = io.ReadAll(tr); err != nil {
			return Release{}, configErr("%s: cannot read its release.json: %v", archive, err)
		}
	}
	ri, err := releasejson.Parse(raw)
	if err != nil {
		return Release{}, configErr("%s: its release.json is refused: %v (only a release that installs is published)", archive, err)
	}
	want := fmt.Sprintf("%s-%s-%s%s", ri.Distribution.ID, ri.Distribution.Version, ri.Target, format.Ext())
	if base := filepath.Base(archive); base != want {
		return Release{}, configErr("%s holds release %s %s for %s, whose archive is named %s: rename it back", archive, ri.Distribution.ID, ri.Distribution.Version, ri.Target, want)
	}
	if semver.IsSnapshot(ri.Distribution.Version) {
		return Release{}, configErr("%s is snapshot release %s %s (piship release --snapshot): a snapshot is for trying, never published; tag the commit (git tag v1.2.3) or give --version, release again and add that archive", archive, ri.Distribution.ID, ri.Distribution.Version)
	}
	rel := Release{Archive: archive, Format: string(format), Version: ri.Distribution.Version, Target: ri.Target, LockSHA256: ri.LockSHA256, Channel: channelName}
	// The notes piship release wrote beside release.json, in the release
	// directory beside the archive (<name>/notes.md), when there are any.
	notes := filepath.Join(strings.TrimSuffix(archive, format.Ext()), releasejson.NotesName)
	if fi, err := os.Lstat(notes); err == nil && fi.Mode().IsRegular() {
		rel.Notes = notes
	}
	return rel, nil
}

// RoleStatus is one top-level role of a repository as published.
type RoleStatus struct {
	Role      string
	Version   int64
	Expires   time.Time
	Threshold int
	// KeyIDs are TUF's key ids of the role's keys (what RevokeKey takes),
	// sorted.
	KeyIDs []string
	// KeyNames are their names (KeyNamesFile), in the order of KeyIDs;
	// "" for a key whose name was never recorded.
	KeyNames []string
}

// PublishedRelease is one release target of the targets role in force.
type PublishedRelease struct {
	Path   string
	Length int64
	SHA256 string
	Custom
	// Notes is the release's notes target (NotesPath), nil when the
	// repository publishes none for it.
	Notes *PublishedNotes
}

// PublishedNotes is the notes target of a release: its path, length and
// sha256 as the targets role signs them.
type PublishedNotes struct {
	Path   string
	Length int64
	SHA256 string
}

// Status is what a repository publishes: each role (root, targets,
// snapshot, timestamp) and the releases, sorted by path.
type Status struct {
	Dir      string
	Roles    []RoleStatus
	Releases []PublishedRelease
}

// Status reports the repository as Open read it: what `repo status`
// prints, so a publisher sees which role expires when without reading
// the metadata files.
func (r *Repository) Status() Status {
	st := Status{Dir: r.Dir, Roles: []RoleStatus{}, Releases: []PublishedRelease{}}
	versions := map[string]struct {
		v int64
		e time.Time
	}{
		RoleRoot:      {r.Root.Signed.Version, r.Root.Signed.Expires},
		RoleTargets:   {r.Targets.Signed.Version, r.Targets.Signed.Expires},
		RoleSnapshot:  {r.Snapshot.Signed.Version, r.Snapshot.Signed.Expires},
		RoleTimestamp: {r.Timestamp.Signed.Version, r.Timestamp.Signed.Expires},
	}
	names := r.KeyNames()
	for _, role := range roles {
		ids := append([]string{}, r.Root.Signed.Roles[role].KeyIDs...)
		sort.Strings(ids)
		st.Roles = append(st.Roles, RoleStatus{Role: role, Version: versions[role].v, Expires: versions[role].e.UTC(),
			Threshold: r.Root.Signed.Roles[role].Threshold, KeyIDs: ids, KeyNames: namesOf(ids, names)})
	}
	for tp, tf := range r.Targets.Signed.Targets {
		if tf.Custom == nil && strings.HasSuffix(tp, NotesSuffix) {
			continue // a release's notes, not a release
		}
		p := PublishedRelease{Path: tp, Length: tf.Length, SHA256: hex.EncodeToString(tf.Hashes["sha256"])}
		if tf.Custom != nil {
			_ = json.Unmarshal(*tf.Custom, &p.Custom) // a target piship did not make shows without its fields
		}
		np := NotesPath(path.Dir(tp), tp)
		if nf, ok := r.Targets.Signed.Targets[np]; ok && nf.Custom == nil {
			p.Notes = &PublishedNotes{Path: np, Length: nf.Length, SHA256: hex.EncodeToString(nf.Hashes["sha256"])}
		}
		st.Releases = append(st.Releases, p)
	}
	sort.Slice(st.Releases, func(i, j int) bool { return st.Releases[i].Path < st.Releases[j].Path })
	return st
}

// NotesSuffix ends the target path of a release's notes.
const NotesSuffix = ".notes.md"

// MaxNotesBytes bounds a release's notes, published and fetched.
const MaxNotesBytes = 1 << 20

// NotesPath is the target path of the notes of the release whose archive
// is published at TargetPath(channelName, archive):
// <channel>/<id>-<version>-<target>.notes.md. It is a target of its own,
// without custom fields (so no client takes it for a release), signed by
// the targets role like the archive; a client fetches it by this name.
func NotesPath(channelName, archive string) string {
	base, _ := piarchive.TrimExt(filepath.Base(archive))
	return channelName + "/" + base + NotesSuffix
}

// addNotes puts a release's notes at targets/<channel>/<sha256>.<name>.notes.md
// (the consistent-snapshot name, as archives) and returns their target.
// Notes already published with other bytes are refused, as an archive is.
func (r *Repository) addNotes(rel Release) (*metadata.TargetFiles, error) {
	data, err := atomicfs.ReadRegular(rel.Notes, MaxNotesBytes)
	if err != nil {
		return nil, configErr("cannot read the release notes %s (at most %d bytes): %v", rel.Notes, MaxNotesBytes, err)
	}
	sum := sha256.Sum256(data)
	path := NotesPath(rel.Channel, rel.Archive)
	tf := &metadata.TargetFiles{Length: int64(len(data)), Hashes: metadata.Hashes{"sha256": sum[:]}, Path: path}
	if old, ok := r.Targets.Signed.Targets[path]; ok && !old.Equal(*tf) {
		return nil, configErr("the notes %s are already published on channel %s with other bytes: a release's notes are never replaced; publish a new version", path, rel.Channel)
	}
	dst := filepath.Join(r.Dir, "targets", rel.Channel, hex.EncodeToString(sum[:])+"."+filepath.Base(path))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, configErr("cannot make %s: %v", filepath.Dir(dst), err)
	}
	if err := writeFile(dst, data); err != nil {
		return nil, err
	}
	return tf, nil
}

// ReleasesOfSet reads a release set (<id>-<version>.SHA256SUMS,
// release.ReadSums) and returns the Release of every archive it lists,
// each archive first held to the set's digest: repo add publishes the
// whole set or nothing.
func ReleasesOfSet(sums, channelName string) ([]Release, error) {
	set, err := release.ReadSums(sums)
	if err != nil {
		return nil, configErr("%v", err)
	}
	var rels []Release
	for _, e := range set.Entries {
		arc := set.Archive(e)
		got, err := cache.HashFile(arc)
		if err != nil {
			return nil, configErr("%s lists %s, which cannot be read beside it: %v", filepath.Base(sums), e.Archive, err)
		}
		if got != e.SHA256 {
			return nil, &Error{Code: errcode.IntegrityFailed, Msg: fmt.Sprintf("%s has sha256 %s, and %s says %s: nothing was published (release again, or fetch the archive again)", arc, got, filepath.Base(sums), e.SHA256)}
		}
		rel, err := ReleaseOf(arc, channelName)
		if err != nil {
			return nil, err
		}
		rels = append(rels, rel)
	}
	return rels, nil
}
