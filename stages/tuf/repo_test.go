package tuf

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/stages/signkey"
)

// keySet is one key per role, as a small distribution has them.
type keySet struct{ root, targets, snapshot, timestamp Key }

func newKey(t *testing.T, id string) Key {
	t.Helper()
	priv, err := signkey.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Private: priv}
}

func newKeySet(t *testing.T, prefix string) keySet {
	return keySet{newKey(t, prefix+"-root"), newKey(t, prefix+"-targets"), newKey(t, prefix+"-snapshot"), newKey(t, prefix+"-timestamp")}
}

func (k keySet) all() []Key { return []Key{k.root, k.targets, k.snapshot, k.timestamp} }

func pub(k Key) ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

func initRepo(t *testing.T, ks keySet) *Repository {
	t.Helper()
	r, err := Init(filepath.Join(t.TempDir(), "repo"), InitOptions{Keys: Roles[[]Key]{
		RoleRoot: {ks.root}, RoleTargets: {ks.targets}, RoleSnapshot: {ks.snapshot}, RoleTimestamp: {ks.timestamp},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeArchive makes a release archive of n random bytes.
func writeArchive(t *testing.T, name string, n int) string {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func addRelease(t *testing.T, r *Repository, ks keySet, version, ch string) string {
	t.Helper()
	a := writeArchive(t, "hello-"+version+"-linux-x64.tar.gz", 3000)
	if err := r.AddReleases([]Release{{Archive: a, Version: version, Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: ch}}, []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestInitAndAddReleasesWriteAConsistentSnapshotTree(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	a := addRelease(t, r, ks, "1.0.0", "stable")
	data, _ := os.ReadFile(a)
	sum := RootSHA256(data) // sha256 of the archive's bytes
	for _, p := range []string{"metadata/1.root.json", "metadata/root.json", "metadata/1.targets.json", "metadata/2.targets.json",
		"metadata/2.snapshot.json", "metadata/timestamp.json", "targets/stable/" + sum + ".hello-1.0.0-linux-x64.tar.gz"} {
		if _, err := os.Stat(filepath.Join(r.Dir, p)); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	o, err := Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if o.Targets.Signed.Version != 2 || o.Snapshot.Signed.Version != 2 || o.Timestamp.Signed.Version != 2 || !o.Root.Signed.ConsistentSnapshot {
		t.Fatalf("reopened versions: targets %d snapshot %d timestamp %d", o.Targets.Signed.Version, o.Snapshot.Signed.Version, o.Timestamp.Signed.Version)
	}
	tf := o.Targets.Signed.Targets["stable/hello-1.0.0-linux-x64.tar.gz"]
	var c Custom
	if tf == nil || tf.Length != 3000 || tf.Custom == nil || json.Unmarshal(*tf.Custom, &c) != nil ||
		c != (Custom{Version: "1.0.0", Target: "linux-x64", LockSHA256: strings.Repeat("ab", 32), Channel: "stable"}) {
		t.Fatalf("target: %+v", tf)
	}
	// go-tuf itself accepts what Init signed.
	if err := o.Root.VerifyDelegate(RoleTargets, o.Targets); err != nil {
		t.Fatal(err)
	}
	// A path already published is never given other bytes.
	other := writeArchive(t, "hello-1.0.0-linux-x64.tar.gz", 10)
	err = o.AddReleases([]Release{{Archive: other, Version: "1.0.0", Target: "linux-x64", Channel: "stable"}}, []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp})
	if err == nil || !strings.Contains(err.Error(), "never replaced") {
		t.Fatalf("replacing a release: %v", err)
	}
	if _, err := Init(r.Dir, InitOptions{Keys: Roles[[]Key]{RoleRoot: {ks.root}, RoleTargets: {ks.targets}, RoleSnapshot: {ks.snapshot}, RoleTimestamp: {ks.timestamp}}}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("Init over a repository: %v", err)
	}
}

func TestSigningBelowThresholdIsRefusedBeforeWriting(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	a := writeArchive(t, "x-1.0.0-linux-x64.tar.gz", 10)
	err := r.AddReleases([]Release{{Archive: a, Version: "1.0.0", Target: "linux-x64", Channel: "stable"}}, []Key{ks.snapshot}, []Key{ks.snapshot}, []Key{ks.timestamp})
	if err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: signing targets (root 1) needs 1 of its 1 keys; the keys given hold 0") {
		t.Fatalf("targets signed by the snapshot key: %v", err)
	}
	for _, glob := range []string{"metadata/2.targets.json", "targets/stable/*"} {
		if m, _ := filepath.Glob(filepath.Join(r.Dir, glob)); len(m) != 0 {
			t.Fatalf("a refused release wrote %v", m)
		}
	}
}

func TestRotateRootNeedsBothThresholds(t *testing.T) {
	old, nu := newKeySet(t, "old"), newKeySet(t, "new")
	r := initRepo(t, old)
	change := RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleRoot: {pub(nu.root)}}}
	err := r.RotateRoot(change, []Key{nu.root})
	if err == nil || !strings.Contains(err.Error(), "root 2 is not signed by a threshold (1) of root 1's root keys") {
		t.Fatalf("rotation signed only by the new key: %v", err)
	}
	err = r.RotateRoot(change, []Key{old.root})
	if err == nil || !strings.Contains(err.Error(), "of its own root keys") {
		t.Fatalf("rotation signed only by the old key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "metadata", "2.root.json")); err == nil {
		t.Fatal("a refused rotation wrote 2.root.json")
	}
	// A targets rotation whose new targets key is not given is refused
	// before root 2 is written.
	err = r.RotateTargetsKey([]ed25519.PublicKey{pub(nu.targets)}, 1, []Key{old.root, old.snapshot, old.timestamp})
	if err == nil || !strings.Contains(err.Error(), "signing targets (root 2) needs 1 of its 1 keys") {
		t.Fatalf("targets rotation without the new targets key: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "metadata", "2.root.json")); err == nil {
		t.Fatal("a refused targets rotation wrote 2.root.json")
	}
	if err := r.RotateRoot(change, []Key{old.root, nu.root}); err != nil {
		t.Fatal(err)
	}
	o, err := Open(r.Dir)
	if err != nil || o.Root.Signed.Version != 2 {
		t.Fatalf("reopened root: %v", err)
	}
	id, _ := old.timestamp.TUFKeyID()
	if err := o.RevokeKey(id, []Key{nu.root, nu.timestamp}); err == nil || !strings.Contains(err.Error(), "0 keys for threshold 1") {
		t.Fatalf("revoking the only timestamp key: %v", err)
	}
}

// resignRaw writes a next version of targets signed by exactly keys
// (no threshold check: the attacks need metadata piship would not sign),
// and snapshot and timestamp naming it.
func resignRaw(t *testing.T, r *Repository, targetsKeys []Key, snapshot, timestamp Key) {
	t.Helper()
	r.Targets.Signed.Version++
	r.Targets.ClearSignatures()
	for _, k := range targetsKeys {
		if err := signWith(r.Targets, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.writeVersioned(r.Targets, RoleTargets, r.Targets.Signed.Version); err != nil {
		t.Fatal(err)
	}
	r.Snapshot.Signed.Version++
	r.Snapshot.Signed.Meta = map[string]*metadata.MetaFiles{"targets.json": metadata.MetaFile(r.Targets.Signed.Version)}
	if err := signRole(r.Snapshot, RoleSnapshot, &r.Root.Signed, []Key{snapshot}); err != nil {
		t.Fatal(err)
	}
	if err := r.writeVersioned(r.Snapshot, RoleSnapshot, r.Snapshot.Signed.Version); err != nil {
		t.Fatal(err)
	}
	if err := r.stampTimestamp([]Key{timestamp}); err != nil {
		t.Fatal(err)
	}
}

func TestReleaseFieldsAreChecked(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	a := writeArchive(t, "x-1.0.0-linux-x64.tar.gz", 10)
	for _, row := range []struct {
		rel  Release
		says string
	}{
		{Release{Archive: a, Version: "1.0", Target: "linux-x64", Channel: "stable"}, "is not a semantic version"},
		{Release{Archive: a, Version: "1.0.0", Target: "linux/x64", Channel: "stable"}, "is not a platform target"},
		{Release{Archive: a, Version: "1.0.0", Target: "linux-x64", Channel: "../up"}, `channel "../up"`},
		{Release{Archive: a, Version: "1.0.0", Target: "linux-x64", Channel: "stable", LockSHA256: "ABC"}, "not 64 lowercase hex digits"},
	} {
		err := r.AddReleases([]Release{row.rel}, []Key{ks.targets}, []Key{ks.snapshot}, []Key{ks.timestamp})
		if err == nil || !strings.HasPrefix(err.Error(), "CONFIG_INVALID: ") || !strings.Contains(err.Error(), row.says) {
			t.Errorf("%+v: %v", row.rel, err)
		}
	}
	// An unchanged root re-signed before it expires: version 2, same keys.
	if err := r.RotateRoot(RootChange{}, []Key{ks.root}); err != nil || r.Root.Signed.Version != 2 {
		t.Fatalf("re-signing the root: %v", err)
	}
}

func TestOpenTakesTheNewestNumberedRoot(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	one, _ := r.RootBytes(1)
	if err := r.RotateRoot(RootChange{}, []Key{ks.root}); err != nil {
		t.Fatal(err)
	}
	// A kill after 2.root.json, before the root.json copy.
	if err := os.WriteFile(r.metaPath("root.json"), one, 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Open(r.Dir)
	if err != nil || o.Root.Signed.Version != 2 {
		t.Fatalf("reopened: %v", err)
	}
}
