package tuf

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/semver"
	"piship.dev/piship/stages/signkey"
	"piship.dev/piship/stages/updatesource"
)

// The role names of TUF's top-level metadata.
const (
	RoleRoot      = metadata.ROOT
	RoleTargets   = metadata.TARGETS
	RoleSnapshot  = metadata.SNAPSHOT
	RoleTimestamp = metadata.TIMESTAMP
)

var roles = []string{RoleRoot, RoleTargets, RoleSnapshot, RoleTimestamp}

// Key is a signing key: the Key-Id of its PEM file (how piship names it
// in messages) and the Ed25519 private key. TUF names it by its own key id
// (TUFKeyID), the sha256 of its canonical public-key JSON.
type Key struct {
	ID      string
	Private ed25519.PrivateKey
}

// ReadKey reads a signing key in the format `piship keygen` writes for
// channels (PKCS#8 PEM with a Key-Id header; see signkey.ReadPrivateKey).
func ReadKey(path string) (Key, error) {
	id, priv, err := signkey.ReadPrivateKey(path)
	if err != nil {
		return Key{}, err
	}
	return Key{ID: id, Private: priv}, nil
}

func (k Key) public() (*metadata.Key, error) {
	if len(k.Private) != ed25519.PrivateKeySize {
		return nil, configErr("key %q is not an Ed25519 private key (%d bytes)", k.ID, len(k.Private))
	}
	pk, err := metadata.KeyFromPublicKey(k.Private.Public())
	if err != nil {
		return nil, configErr("key %q: %v", k.ID, err)
	}
	return pk, nil
}

// TUFKeyID is the key id TUF metadata names k by.
func (k Key) TUFKeyID() (string, error) {
	pk, err := k.public()
	if err != nil {
		return "", err
	}
	return pk.ID()
}

// Expiry is how long each role's metadata is valid once signed.
type Expiry struct {
	Root, Targets, Snapshot, Timestamp time.Duration
}

// DefaultExpiry: see the package comment ("Expiry").
var DefaultExpiry = Expiry{
	Root:      365 * 24 * time.Hour,
	Targets:   90 * 24 * time.Hour,
	Snapshot:  30 * 24 * time.Hour,
	Timestamp: 14 * 24 * time.Hour,
}

func (e Expiry) of(role string) time.Duration {
	d := map[string][2]time.Duration{
		RoleRoot: {e.Root, DefaultExpiry.Root}, RoleTargets: {e.Targets, DefaultExpiry.Targets},
		RoleSnapshot: {e.Snapshot, DefaultExpiry.Snapshot}, RoleTimestamp: {e.Timestamp, DefaultExpiry.Timestamp},
	}[role]
	if d[0] > 0 {
		return d[0]
	}
	return d[1]
}

// Roles maps a top-level role name to a value: the keys of each role in
// Init, a threshold, the public keys of a rotation.
type Roles[T any] map[string]T

// InitOptions make a repository.
type InitOptions struct {
	// Keys are the keys of each of the four roles (at least Threshold
	// each); their private halves sign version 1 of every role.
	Keys Roles[[]Key]
	// Thresholds per role (missing or 0: 1).
	Thresholds Roles[int]
	// Expiry per role (zero fields: DefaultExpiry).
	Expiry Expiry
	// Now is the signing time (zero: time.Now); tests sign in the past.
	Now time.Time
}

// Repository is a TUF repository on disk as Open read it: the newest
// version of each top-level role. Its methods sign and write new versions
// and keep these fields current.
type Repository struct {
	Dir       string
	Root      *metadata.Metadata[metadata.RootType]
	Targets   *metadata.Metadata[metadata.TargetsType]
	Snapshot  *metadata.Metadata[metadata.SnapshotType]
	Timestamp *metadata.Metadata[metadata.TimestampType]
	// Expiry and Now as in InitOptions, for the versions the methods sign.
	Expiry Expiry
	Now    time.Time
}

func (r *Repository) now() time.Time {
	if r.Now.IsZero() {
		return time.Now().UTC()
	}
	return r.Now.UTC()
}

func (r *Repository) expires(role string) time.Time {
	return r.now().Add(r.Expiry.of(role)).Truncate(time.Second)
}

func (r *Repository) metaPath(name string) string { return filepath.Join(r.Dir, "metadata", name) }

// Init makes a new repository in dir (which must not hold one): root,
// targets (no releases yet), snapshot and timestamp version 1, each signed
// by its role's keys, with consistent snapshots.
func Init(dir string, o InitOptions) (*Repository, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, configErr("repository %s: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(abs, "metadata", "1.root.json")); err == nil {
		return nil, configErr("%s already holds a TUF repository (metadata/1.root.json): a repository is made once, its root then only rotates; choose another directory", abs)
	}
	r := &Repository{Dir: abs, Expiry: o.Expiry, Now: o.Now}
	root := metadata.Root(r.expires(RoleRoot))
	root.Signed.ConsistentSnapshot = true
	for _, role := range roles {
		keys := o.Keys[role]
		t := o.Thresholds[role]
		if t <= 0 {
			t = 1
		}
		if len(keys) < t {
			return nil, configErr("the %s role has %s and threshold %d: give at least as many keys as the threshold", role, canon.Count(len(keys), "key"), t)
		}
		root.Signed.Roles[role].Threshold = t
		for _, k := range keys {
			pk, err := k.public()
			if err != nil {
				return nil, err
			}
			if err := root.Signed.AddKey(pk, role); err != nil {
				return nil, configErr("the %s role, key %q: %v", role, k.ID, err)
			}
		}
		if n := len(root.Signed.Roles[role].KeyIDs); n < t {
			return nil, configErr("the %s role has %s and threshold %d: a key given twice counts once", role, canon.Count(n, "distinct key"), t)
		}
	}
	if err := signRoot(root, nil, o.Keys[RoleRoot]); err != nil {
		return nil, err
	}
	r.Targets = metadata.Targets(r.expires(RoleTargets))
	r.Snapshot = metadata.Snapshot(r.expires(RoleSnapshot))
	r.Timestamp = metadata.Timestamp(r.expires(RoleTimestamp))
	if err := os.MkdirAll(filepath.Join(abs, "metadata"), 0o755); err != nil {
		return nil, configErr("cannot make %s: %v", abs, err)
	}
	if err := os.MkdirAll(filepath.Join(abs, "targets"), 0o755); err != nil {
		return nil, configErr("cannot make %s: %v", abs, err)
	}
	if err := r.writeRoot(root); err != nil {
		return nil, err
	}
	// Version 1 of targets, snapshot and timestamp: publish signs them
	// as-is (no version bump) the first time.
	r.Targets.Signed.Version, r.Snapshot.Signed.Version, r.Timestamp.Signed.Version = 0, 0, 0
	if err := r.publish(o.Keys[RoleTargets], o.Keys[RoleSnapshot], o.Keys[RoleTimestamp]); err != nil {
		return nil, err
	}
	r.rememberKeys(o.Keys[RoleRoot], o.Keys[RoleTargets], o.Keys[RoleSnapshot], o.Keys[RoleTimestamp])
	return r, nil
}

// Open reads the repository in dir: the newest metadata/<N>.root.json,
// timestamp.json, and the snapshot and targets versions the timestamp and
// snapshot name.
func Open(dir string) (*Repository, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, configErr("repository %s: %v", dir, err)
	}
	r := &Repository{Dir: abs}
	// The newest <N>.root.json, not root.json: a kill between writing the
	// two leaves root.json one behind, and a rotation from it would write
	// a second, different root N.
	names, _ := filepath.Glob(r.metaPath("*.root.json"))
	var newest int64
	for _, n := range names {
		v, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".root.json"), 10, 64)
		if err == nil && v > newest {
			newest = v
		}
	}
	if newest == 0 {
		return nil, configErr("%s holds no metadata/1.root.json: not a TUF repository; make one with piship repo init (tuf.Init)", abs)
	}
	if r.Root, err = readMeta(metadata.Root(), r.metaPath(fmt.Sprintf("%d.root.json", newest))); err != nil {
		return nil, err
	}
	if r.Root.Signed.Version != newest {
		return nil, configErr("%s holds root version %d: the file name and the version disagree; restore it from the publisher's copy", r.metaPath(fmt.Sprintf("%d.root.json", newest)), r.Root.Signed.Version)
	}
	if r.Timestamp, err = readMeta(metadata.Timestamp(), r.metaPath("timestamp.json")); err != nil {
		return nil, err
	}
	sv := r.Timestamp.Signed.Meta["snapshot.json"]
	if sv == nil {
		return nil, configErr("%s names no snapshot.json: not a repository piship made", r.metaPath("timestamp.json"))
	}
	if r.Snapshot, err = readMeta(metadata.Snapshot(), r.metaPath(fmt.Sprintf("%d.snapshot.json", sv.Version))); err != nil {
		return nil, err
	}
	tv := r.Snapshot.Signed.Meta["targets.json"]
	if tv == nil {
		return nil, configErr("%s names no targets.json: not a repository piship made", r.metaPath(fmt.Sprintf("%d.snapshot.json", sv.Version)))
	}
	if r.Targets, err = readMeta(metadata.Targets(), r.metaPath(fmt.Sprintf("%d.targets.json", tv.Version))); err != nil {
		return nil, err
	}
	return r, nil
}

func readMeta[T metadata.Roles](m *metadata.Metadata[T], path string) (*metadata.Metadata[T], error) {
	data, err := atomicfs.ReadRegular(path, 0)
	if err != nil {
		return nil, configErr("cannot read %s: %v: is this a repository made by the TUF init?", path, err)
	}
	out, err := m.FromBytes(data)
	if err != nil {
		return nil, configErr("%s is not TUF metadata: %v", path, err)
	}
	return out, nil
}

// Release is one release archive to publish on a channel.
type Release struct {
	// Archive is the local path of the release archive (.tar.zst, or
	// .tar.gz for piship-archive/v1).
	Archive string
	// Format is the archive's format (FormatArchiveV2, FormatArchiveV1;
	// "" is v1, what a Release made before v2 meant).
	Format string
	// Version (semantic), Target (platform, e.g. linux-x64), LockSHA256 (the
	// lock's digest) and Channel (e.g. stable) become the custom fields.
	Version, Target, LockSHA256, Channel string
	// Notes is the local path of the release's notes.md ("" when it has
	// none): published as the target NotesPath beside the archive.
	// RegistryBlob is where a registry serves the archive (Custom's).
	Notes, RegistryBlob string
}

// TargetPath is where a release archive lives in the repository:
// <channel>/<archive file name>, so one archive may be on several
// channels (promotion) as distinct targets.
func TargetPath(channelName, archive string) string {
	return channelName + "/" + filepath.Base(archive)
}

// AddReleases publishes releases: each archive is copied to
// targets/<channel>/<sha256>.<name>, becomes a target with its length,
// sha256 and Custom, and targets, snapshot and timestamp are re-signed
// (versions + 1). targets needs a threshold of the targets keys, snapshot
// and timestamp of theirs. A target path already published with other
// bytes is refused: a release is never replaced.
func (r *Repository) AddReleases(rels []Release, targetsKeys, snapshotKeys, timestampKeys []Key) error {
	return r.Publish(context.Background(), rels, PublishOptions{}, targetsKeys, snapshotKeys, timestampKeys)
}

// Publish is AddReleases with what o adds beside each archive (its v1
// twin, the deltas to it, each said through o.Logf), all in the one new
// targets version.
func (r *Repository) Publish(ctx context.Context, rels []Release, o PublishOptions, targetsKeys, snapshotKeys, timestampKeys []Key) error {
	if len(rels) == 0 {
		return configErr("no releases to add")
	}
	// Every key is checked before the first archive is copied, so a
	// missing key leaves the repository as it was.
	for role, keys := range map[string][]Key{RoleTargets: targetsKeys, RoleSnapshot: snapshotKeys, RoleTimestamp: timestampKeys} {
		if err := enough(&r.Root.Signed, role, keys); err != nil {
			return err
		}
	}
	for _, rel := range rels {
		if _, err := r.addArchive(rel); err != nil {
			return err
		}
	}
	if err := r.extra(ctx, rels, o); err != nil {
		return err
	}
	if err := r.publish(targetsKeys, snapshotKeys, timestampKeys); err != nil {
		return err
	}
	r.rememberKeys(targetsKeys, snapshotKeys, timestampKeys)
	return nil
}

// addArchive checks a release and adds its archive (and its notes) as
// targets, unsigned yet.
func (r *Repository) addArchive(rel Release) (*metadata.TargetFiles, error) {
	if msg := updatesource.CheckName(rel.Channel); msg != "" {
		return nil, configErr("release %s: channel %q: %s", rel.Archive, rel.Channel, msg)
	}
	if _, err := semver.Parse(rel.Version); err != nil {
		return nil, configErr("release %s: %v", rel.Archive, err)
	}
	if rel.LockSHA256 != "" && (len(rel.LockSHA256) != 64 || strings.Trim(rel.LockSHA256, "0123456789abcdef") != "") {
		return nil, configErr("release %s: lockSha256 %q is not 64 lowercase hex digits (the release.json's lockSha256)", rel.Archive, rel.LockSHA256)
	}
	if rel.Target == "" || strings.ContainsAny(rel.Target, "/\\") {
		return nil, configErr("release %s: target %q is not a platform target such as linux-x64", rel.Archive, rel.Target)
	}
	c := customFor(cmp.Or(rel.Format, FormatArchiveV1), rel.Target)
	c.Version, c.LockSHA256, c.Channel, c.RegistryBlob = rel.Version, rel.LockSHA256, rel.Channel, rel.RegistryBlob
	tf, err := r.addTarget(rel.Archive, rel.Channel, c)
	if err != nil {
		return nil, err
	}
	if rel.Notes != "" {
		ntf, err := r.addNotes(rel)
		if err != nil {
			return nil, err
		}
		r.Targets.Signed.Targets[ntf.Path] = ntf
	}
	return tf, nil
}

// addTarget copies file under targets/<ch>/ and adds it as the target
// <ch>/<name> with custom c, unsigned yet. A target path already
// published with other bytes or fields is refused: nothing is ever
// replaced.
func (r *Repository) addTarget(file, ch string, c Custom) (*metadata.TargetFiles, error) {
	name := filepath.Base(file)
	sum, size, err := r.copyArchive(file, ch)
	if err != nil {
		return nil, err
	}
	custom, err := json.Marshal(c)
	if err != nil {
		return nil, configErr("release %s: %v", file, err)
	}
	raw := json.RawMessage(custom)
	digest, _ := hex.DecodeString(sum)
	path := TargetPath(ch, name)
	tf := &metadata.TargetFiles{Length: size, Hashes: metadata.Hashes{"sha256": digest}, Custom: &raw, Path: path}
	if old, ok := r.Targets.Signed.Targets[path]; ok && !old.Equal(*tf) {
		return nil, configErr("%s is already published on channel %s with other bytes or fields: a release is never replaced; publish a new version", name, ch)
	}
	if r.Targets.Signed.Targets == nil {
		r.Targets.Signed.Targets = map[string]*metadata.TargetFiles{}
	}
	r.Targets.Signed.Targets[path] = tf
	return tf, nil
}

// copyArchive puts the archive at targets/<channel>/<sha256>.<name>: it
// is hashed first (the name is its digest), then copied through a flushed
// temporary sibling that atomicfs renames into place under the install
// rename policy. The copy is hashed again, so a file changed in between is
// refused rather than published under a wrong name.
func (r *Repository) copyArchive(src, ch string) (string, int64, error) {
	sum, n, err := hashFile(src)
	if err != nil {
		return "", 0, err
	}
	if n == 0 {
		return "", 0, configErr("the release archive %s is empty", src)
	}
	dir := filepath.Join(r.Dir, "targets", ch)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, configErr("cannot make %s: %v", dir, err)
	}
	dst := r.targetFile(ch, sum, filepath.Base(src))
	in, err := atomicfs.OpenRegular(src)
	if err != nil {
		return "", 0, configErr("cannot read the release archive %s: %v", src, err)
	}
	defer in.Close()
	tmp, err := atomicfs.Create(dst, 0o644, atomicfs.Options{Sync: true, Renamer: atomicfs.DefaultRenamer(atomicfs.InstallDelays)})
	if err != nil {
		return "", 0, configErr("cannot write %s: %v", dst, err)
	}
	defer tmp.Abort() // nothing once committed
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp.File, h), in); err != nil {
		return "", 0, configErr("cannot copy %s to %s: %v", src, dst, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return "", 0, configErr("the release archive %s changed while it was published (sha256 %s, then %s): publish it again once it is complete", src, sum, got)
	}
	if err := tmp.Commit(); err != nil {
		return "", 0, configErr("cannot write %s: %v", dst, err)
	}
	return sum, n, nil
}

// targetFile is where the repository keeps target <ch>/<name> of digest
// sum: its consistent-snapshot name under targets/.
func (r *Repository) targetFile(ch, sum, name string) string {
	return filepath.Join(r.Dir, "targets", ch, sum+"."+name)
}

func hashFile(p string) (string, int64, error) {
	f, err := atomicfs.OpenRegular(p)
	if err != nil {
		return "", 0, configErr("cannot read the release archive %s: %v", p, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, configErr("cannot read the release archive %s: %v", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Refresh re-signs snapshot and timestamp with new versions and expiry,
// changing nothing else: the online role that CI runs on a schedule, so
// an installation never sees an expired timestamp while the publisher is
// alive (see "Expiry").
func (r *Repository) Refresh(snapshotKeys, timestampKeys []Key) error {
	for role, keys := range map[string][]Key{RoleSnapshot: snapshotKeys, RoleTimestamp: timestampKeys} {
		if err := enough(&r.Root.Signed, role, keys); err != nil {
			return err
		}
	}
	if err := r.stampSnapshot(snapshotKeys, timestampKeys); err != nil {
		return err
	}
	r.rememberKeys(snapshotKeys, timestampKeys)
	return nil
}

// stampSnapshot signs and writes the next snapshot version, then the
// timestamp naming it.
func (r *Repository) stampSnapshot(snapshotKeys, timestampKeys []Key) error {
	r.Snapshot.Signed.Version++
	r.Snapshot.Signed.Expires = r.expires(RoleSnapshot)
	if err := signRole(r.Snapshot, RoleSnapshot, &r.Root.Signed, snapshotKeys); err != nil {
		return err
	}
	if err := r.writeVersioned(r.Snapshot, RoleSnapshot, r.Snapshot.Signed.Version); err != nil {
		return err
	}
	return r.stampTimestamp(timestampKeys)
}

// publish signs the next version of targets, then snapshot, then
// timestamp, and writes them in that order: timestamp.json is the commit
// point, so a reader (or a kill) in between sees the previous repository
// state whole, since the new versioned files are not yet named by it.
func (r *Repository) publish(targetsKeys, snapshotKeys, timestampKeys []Key) error {
	r.Targets.Signed.Version++
	r.Targets.Signed.Expires = r.expires(RoleTargets)
	if err := signRole(r.Targets, RoleTargets, &r.Root.Signed, targetsKeys); err != nil {
		return err
	}
	if err := r.writeVersioned(r.Targets, RoleTargets, r.Targets.Signed.Version); err != nil {
		return err
	}
	r.Snapshot.Signed.Meta = map[string]*metadata.MetaFiles{"targets.json": metadata.MetaFile(r.Targets.Signed.Version)}
	return r.stampSnapshot(snapshotKeys, timestampKeys)
}

func (r *Repository) stampTimestamp(timestampKeys []Key) error {
	r.Timestamp.Signed.Version++
	r.Timestamp.Signed.Expires = r.expires(RoleTimestamp)
	r.Timestamp.Signed.Meta = map[string]*metadata.MetaFiles{"snapshot.json": metadata.MetaFile(r.Snapshot.Signed.Version)}
	if err := signRole(r.Timestamp, RoleTimestamp, &r.Root.Signed, timestampKeys); err != nil {
		return err
	}
	data, err := r.Timestamp.ToBytes(true)
	if err != nil {
		return configErr("cannot encode the timestamp: %v", err)
	}
	return writeFile(r.metaPath("timestamp.json"), data)
}

func (r *Repository) writeVersioned(m interface{ ToBytes(bool) ([]byte, error) }, role string, v int64) error {
	data, err := m.ToBytes(true)
	if err != nil {
		return configErr("cannot encode %s: %v", role, err)
	}
	return writeFile(r.metaPath(fmt.Sprintf("%d.%s.json", v, role)), data)
}

// writeRoot writes <N>.root.json (what clients walk) and root.json (the
// newest root, what Open and a first install read).
func (r *Repository) writeRoot(root *metadata.Metadata[metadata.RootType]) error {
	data, err := root.ToBytes(true)
	if err != nil {
		return configErr("cannot encode the root: %v", err)
	}
	if err := writeFile(r.metaPath(fmt.Sprintf("%d.root.json", root.Signed.Version)), data); err != nil {
		return err
	}
	if err := writeFile(r.metaPath("root.json"), data); err != nil {
		return err
	}
	r.Root = root
	return nil
}

// writeFile is every metadata write: a flushed temporary sibling renamed
// over path, so a static server never serves half a file.
func writeFile(path string, data []byte) error {
	if err := atomicfs.WriteFile(path, data, 0o644, atomicfs.Options{Sync: true}); err != nil {
		return configErr("cannot write %s: %v", path, err)
	}
	return nil
}

// RootChange is a root rotation: the new public keys and threshold of
// the roles it changes (a role it does not name keeps its keys and
// threshold).
type RootChange struct {
	Keys       Roles[[]ed25519.PublicKey]
	Thresholds Roles[int]
	// Revoke removes these TUF key ids from every role.
	Revoke []string
}

// RotateRoot writes root N+1 with change applied, signed by signers,
// which must hold a threshold of root N's root keys and of root N+1's
// (go-tuf checks both before anything is written). Roles whose keys
// changed are re-signed with the matching signers too (targets, snapshot,
// timestamp, in that order, timestamp last), with new versions, so an
// installation trusting root N walks to N+1 and finds metadata its new
// keys sign: a rotation needs no new release.
func (r *Repository) RotateRoot(change RootChange, signers []Key) error {
	prev := r.Root
	next, err := metadata.Root().FromBytes(mustBytes(prev))
	if err != nil {
		return configErr("cannot copy the root: %v", err)
	}
	next.Signed.Version = prev.Signed.Version + 1
	next.Signed.Expires = r.expires(RoleRoot)
	changed := map[string]bool{}
	for _, id := range change.Revoke {
		found := false
		for _, role := range roles {
			if slices.Contains(next.Signed.Roles[role].KeyIDs, id) {
				if err := next.Signed.RevokeKey(id, role); err != nil {
					return configErr("revoke %s from %s: %v", id, role, err)
				}
				changed[role], found = true, true
			}
		}
		if !found {
			return configErr("key %s is in no role of root %d: nothing to revoke (key ids are TUF's, the sha256 of the key's canonical JSON)", id, prev.Signed.Version)
		}
	}
	for role, pubs := range change.Keys {
		if next.Signed.Roles[role] == nil {
			return configErr("%q is not a top-level role: root, targets, snapshot or timestamp", role)
		}
		for _, id := range slices.Clone(next.Signed.Roles[role].KeyIDs) {
			if err := next.Signed.RevokeKey(id, role); err != nil {
				return configErr("replace the %s keys: %v", role, err)
			}
		}
		for _, pub := range pubs {
			pk, err := metadata.KeyFromPublicKey(pub)
			if err != nil {
				return configErr("a new %s key: %v", role, err)
			}
			if err := next.Signed.AddKey(pk, role); err != nil {
				return configErr("a new %s key: %v", role, err)
			}
		}
		changed[role] = true
	}
	for role, t := range change.Thresholds {
		if next.Signed.Roles[role] == nil {
			return configErr("%q is not a top-level role: root, targets, snapshot or timestamp", role)
		}
		next.Signed.Roles[role].Threshold = t
		changed[role] = true
	}
	for _, role := range roles {
		if n := len(next.Signed.Roles[role].KeyIDs); n < next.Signed.Roles[role].Threshold || next.Signed.Roles[role].Threshold < 1 {
			return configErr("root %d would leave the %s role with %s for threshold %d: no one could sign it; add keys or lower the threshold", next.Signed.Version, role, canon.Count(n, "key"), next.Signed.Roles[role].Threshold)
		}
	}
	if err := signRoot(next, prev, signers); err != nil {
		return err
	}
	// The roles to re-sign under root N+1 are checked before root N+1 is
	// written: a root whose targets no given key can sign would leave the
	// repository unusable until someone finds those keys.
	resign := []string{}
	switch {
	case changed[RoleTargets]:
		resign = []string{RoleTargets, RoleSnapshot, RoleTimestamp}
	case changed[RoleSnapshot] || changed[RoleTimestamp]:
		resign = []string{RoleSnapshot, RoleTimestamp}
	}
	for _, role := range resign {
		if err := enough(&next.Signed, role, signers); err != nil {
			return err
		}
	}
	if err := r.writeRoot(next); err != nil {
		return err
	}
	if changed[RoleTargets] {
		if err := r.publish(signers, signers, signers); err != nil {
			return err
		}
	} else if changed[RoleSnapshot] || changed[RoleTimestamp] {
		if err := r.Refresh(signers, signers); err != nil {
			return err
		}
	}
	r.rememberKeys(signers)
	return nil
}

// RotateTargetsKey replaces the targets keys with newKeys (threshold t):
// root N+1 signed by signers (root thresholds of N and N+1), then targets,
// snapshot and timestamp re-signed; signers must include a threshold of
// the new targets keys and of the snapshot and timestamp keys.
//
// After a compromise of the targets key (an attacker may have pushed
// installations to a targets, snapshot and timestamp version far ahead),
// rotating only the targets key is not enough: an installation keeps the
// fast-forwarded snapshot and timestamp, which still verify, and refuses
// the publisher's lower versions as a rollback. Rotate the snapshot and
// timestamp keys as well (RotateRoot): go-tuf then discards the trusted
// metadata the new root's keys no longer sign (TUF's fast-forward attack
// recovery), as TestFastForwardRecovery shows.
func (r *Repository) RotateTargetsKey(newKeys []ed25519.PublicKey, t int, signers []Key) error {
	return r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleTargets: newKeys}, Thresholds: Roles[int]{RoleTargets: t}}, signers)
}

// RevokeKey removes the key with TUF key id from every role by a root
// rotation, and re-signs the roles it was in with signers.
func (r *Repository) RevokeKey(tufKeyID string, signers []Key) error {
	return r.RotateRoot(RootChange{Revoke: []string{tufKeyID}}, signers)
}

func mustBytes[T metadata.Roles](m *metadata.Metadata[T]) []byte {
	b, err := m.ToBytes(false)
	if err != nil {
		panic(fmt.Sprintf("tuf: encode metadata read from disk: %v", err))
	}
	return b
}

// signRole replaces m's signatures by those of the keys of role (per root)
// found among keys, and refuses fewer than the role's threshold.
func signRole[T metadata.Roles](m *metadata.Metadata[T], role string, root *metadata.RootType, keys []Key) error {
	m.ClearSignatures()
	r := root.Roles[role]
	var used []string
	for _, k := range keys {
		id, err := k.TUFKeyID()
		if err != nil {
			return err
		}
		if !slices.Contains(r.KeyIDs, id) || slices.Contains(used, id) {
			continue
		}
		if err := signWith(m, k); err != nil {
			return err
		}
		used = append(used, id)
	}
	if len(used) < r.Threshold {
		return configErr("signing %s needs %d of its %d keys; the keys given hold %d (%s): give the %s keys' files", role, r.Threshold, len(r.KeyIDs), len(used), keyList(keys), role)
	}
	return nil
}

// enough refuses keys that hold fewer than role's threshold under root.
func enough(root *metadata.RootType, role string, keys []Key) error {
	r := root.Roles[role]
	var used []string
	for _, k := range keys {
		id, err := k.TUFKeyID()
		if err != nil {
			return err
		}
		if slices.Contains(r.KeyIDs, id) && !slices.Contains(used, id) {
			used = append(used, id)
		}
	}
	if len(used) < r.Threshold {
		return configErr("signing %s (root %d) needs %d of its %d keys; the keys given hold %d (%s): give the %s keys' files; nothing was written", role, root.Version, r.Threshold, len(r.KeyIDs), len(used), keyList(keys), role)
	}
	return nil
}

func signWith[T metadata.Roles](m *metadata.Metadata[T], k Key) error {
	s, err := signature.LoadED25519Signer(k.Private)
	if err != nil {
		return configErr("key %q: %v", k.ID, err)
	}
	if _, err := m.Sign(s); err != nil {
		return configErr("key %q cannot sign: %v", k.ID, err)
	}
	return nil
}

// signRoot signs next with every key of signers that is a root key of
// prev or of next, then has go-tuf verify both thresholds (prev's only
// when there is a prev), so a rotation an installation would refuse is
// never written.
func signRoot(next, prev *metadata.Metadata[metadata.RootType], signers []Key) error {
	next.ClearSignatures()
	var ids []string
	for _, k := range signers {
		id, err := k.TUFKeyID()
		if err != nil {
			return err
		}
		in := slices.Contains(next.Signed.Roles[RoleRoot].KeyIDs, id) || prev != nil && slices.Contains(prev.Signed.Roles[RoleRoot].KeyIDs, id)
		if !in || slices.Contains(ids, id) {
			continue
		}
		if err := signWith(next, k); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	if prev != nil {
		if err := prev.VerifyDelegate(RoleRoot, next); err != nil {
			return configErr("root %d is not signed by a threshold (%d) of root %d's root keys (%v): give their key files too", next.Signed.Version, prev.Signed.Roles[RoleRoot].Threshold, prev.Signed.Version, err)
		}
	}
	if err := next.VerifyDelegate(RoleRoot, next); err != nil {
		return configErr("root %d is not signed by a threshold (%d) of its own root keys (%v): give their key files too", next.Signed.Version, next.Signed.Roles[RoleRoot].Threshold, err)
	}
	return nil
}

func keyList(keys []Key) string {
	if len(keys) == 0 {
		return "none"
	}
	var s []string
	for _, k := range keys {
		s = append(s, strconv.Quote(k.ID))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// RootSHA256 is the lowercase hex sha256 of a root file's exact bytes: what
// a lock or --expect-root pins.
func RootSHA256(rootJSON []byte) string {
	s := sha256.Sum256(rootJSON)
	return hex.EncodeToString(s[:])
}

// RootBytes reads metadata/<version>.root.json of the repository: the
// initial root a lock pins is version 1.
func (r *Repository) RootBytes(version int64) ([]byte, error) {
	p := r.metaPath(fmt.Sprintf("%d.root.json", version))
	b, err := atomicfs.ReadRegular(p, 0)
	if err != nil {
		return nil, configErr("cannot read %s: %v", p, err)
	}
	return b, nil
}
