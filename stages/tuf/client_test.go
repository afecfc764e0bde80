package tuf

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// install is one installation: its trust directory and the pinned
// initial root of the repository it was installed from.
type install struct {
	trust, downloads string
	root             []byte
}

func newInstall(t *testing.T, r *Repository) *install {
	t.Helper()
	root, err := r.RootBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	return &install{trust: filepath.Join(d, "trust", "hello"), downloads: filepath.Join(d, "apps", "hello", ".downloads"), root: root}
}

func (in *install) opts(repo string) UpdateOptions {
	return UpdateOptions{Repository: repo, TrustDir: in.trust, InitialRoot: in.root, ExpectRootSHA256: "sha256:" + RootSHA256(in.root),
		Channel: "stable", Target: "linux-x64", DownloadDir: in.downloads}
}

func (in *install) update(t *testing.T, repo string) (*Result, error) {
	t.Helper()
	return Update(context.Background(), in.opts(repo))
}

func mustUpdate(t *testing.T, in *install, repo string) *Result {
	t.Helper()
	res, err := in.update(t, repo)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestUpdateFromADirectoryAndOverLoopbackHTTP(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	addRelease(t, r, ks, "1.0.0", "stable")
	want := addRelease(t, r, ks, "1.10.0", "stable") // newer than 1.9.0 by semver, older by string order
	addRelease(t, r, ks, "1.9.0", "stable")
	addRelease(t, r, ks, "2.0.0", "beta")
	wantBytes, _ := os.ReadFile(want)
	srv := httptest.NewServer(http.FileServer(http.Dir(r.Dir)))
	defer srv.Close()
	for name, repo := range map[string]string{"directory": r.Dir, "http": srv.URL + "/"} {
		t.Run(name, func(t *testing.T) {
			in := newInstall(t, r)
			// --check on a first install verifies and writes nothing.
			o := in.opts(repo)
			o.Check = true
			if res, err := Update(context.Background(), o); err != nil || res.Release.Version != "1.10.0" || res.Archive != "" {
				t.Fatalf("check: %+v, %v", res, err)
			}
			if _, err := os.Stat(filepath.Dir(in.trust)); !os.IsNotExist(err) {
				t.Fatalf("check made the trust directory: %v", err)
			}
			// The first update fetches metadata/1.root.json and checks it
			// against the pin.
			first := in.opts(repo)
			first.InitialRoot = nil
			res, err := Update(context.Background(), first)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(res.Archive)
			if err != nil || !bytes.Equal(got, wantBytes) || res.Release.Version != "1.10.0" || res.Release.Channel != "stable" {
				t.Fatalf("downloaded %s (%v): version %s, %d bytes", res.Archive, err, res.Release.Version, len(got))
			}
			if res.RootVersion != 1 || res.TargetsVersion != 5 || res.TimestampVersion != 5 {
				t.Fatalf("trusted versions: %+v", res)
			}
			if _, err := os.Stat(filepath.Join(in.trust, "timestamp.json")); err != nil {
				t.Fatalf("the trusted metadata is not kept: %v", err)
			}
			o.Check = false
			o.Active = "1.10.0"
			if res, err := Update(context.Background(), o); err != nil || !res.UpToDate || res.Archive != "" {
				t.Fatalf("update at the newest version: %+v, %v", res, err)
			}
		})
	}
}

func TestRootRotationWithNewKeySetsNeedsNoRelease(t *testing.T) {
	k1, k2, k3 := newKeySet(t, "one"), newKeySet(t, "two"), newKeySet(t, "three")
	r := initRepo(t, k1)
	addRelease(t, r, k1, "1.0.0", "stable")
	early := newInstall(t, r)
	mustUpdate(t, early, r.Dir)
	// Root 2: a new root key and a new targets key (targets re-signed).
	if err := r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleRoot: {pub(k2.root)}, RoleTargets: {pub(k2.targets)}}},
		[]Key{k1.root, k2.root, k2.targets, k1.snapshot, k1.timestamp}); err != nil {
		t.Fatal(err)
	}
	// Root 3: every key new.
	if err := r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleRoot: {pub(k3.root)}, RoleTargets: {pub(k3.targets)},
		RoleSnapshot: {pub(k3.snapshot)}, RoleTimestamp: {pub(k3.timestamp)}}}, append(k3.all(), k2.root)); err != nil {
		t.Fatal(err)
	}
	// --check walks to root 3 and leaves the trusted root at 1.
	before, _ := os.ReadFile(filepath.Join(early.trust, "root.json"))
	o := early.opts(r.Dir)
	o.Check = true
	if res, err := Update(context.Background(), o); err != nil || res.RootVersion != 3 {
		t.Fatalf("check across rotations: %+v, %v", res, err)
	}
	if after, _ := os.ReadFile(filepath.Join(early.trust, "root.json")); !bytes.Equal(before, after) {
		t.Fatal("--check changed the trusted root")
	}
	for name, in := range map[string]*install{"trusting root 1 already": early, "first install from root 1": newInstall(t, r)} {
		res, err := in.update(t, r.Dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.RootVersion != 3 || res.Release.Version != "1.0.0" {
			t.Fatalf("%s: root %d, release %s", name, res.RootVersion, res.Release.Version)
		}
	}
	// Root 4 signed only by new keys: the installation refuses it.
	k4 := newKeySet(t, "four")
	next, _ := metadata.Root().FromBytes(mustBytes(r.Root))
	next.Signed.Version = 4
	for _, id := range append([]string(nil), next.Signed.Roles[RoleRoot].KeyIDs...) {
		next.Signed.RevokeKey(id, RoleRoot)
	}
	pk, _ := metadata.KeyFromPublicKey(pub(k4.root))
	next.Signed.AddKey(pk, RoleRoot)
	next.ClearSignatures()
	if err := signWith(next, k4.root); err != nil {
		t.Fatal(err)
	}
	data, _ := next.ToBytes(true)
	writeFile(r.metaPath("4.root.json"), data)
	_, err := early.update(t, r.Dir)
	wantErr(t, err, ReasonRootChain, "root 4 (", "is not signed by a threshold of root 3's root keys")
}

func wantErr(t *testing.T, err error, r Reason, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s", r)
	}
	t.Log(err)
	if !HasReason(err, r) || !strings.HasPrefix(err.Error(), "UPDATE_FAILED: ") {
		t.Fatalf("want UPDATE_FAILED (%s), got %v", r, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("the message does not say %q: %v", p, err)
		}
	}
}

// attackEnv is a repository an installation already trusts: root 1,
// targets 3 (releases 1.0.0 and 1.1.0), snapshot and timestamp 4 (a
// refresh after the releases); old holds earlier files' bytes.
type attackEnv struct {
	r   *Repository
	ks  keySet
	in  *install
	old map[string][]byte // metadata file -> its bytes before the refresh
}

func (e *attackEnv) path(name string) string { return e.r.metaPath(name) }

func (e *attackEnv) write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := writeFile(e.path(name), data); err != nil {
		t.Fatal(err)
	}
}

func TestAttacksAreRefusedNamingTheReason(t *testing.T) {
	rows := []struct {
		name   string
		attack func(t *testing.T, e *attackEnv) UpdateOptions
		reason Reason
		says   []string
	}{
		{"arbitrary software: bad signature", func(t *testing.T, e *attackEnv) UpdateOptions {
			e.r.Timestamp.Signed.Version++
			e.r.Timestamp.Signed.Expires = e.r.Timestamp.Signed.Expires.Add(time.Hour)
			data, _ := e.r.Timestamp.ToBytes(true) // the old signature over changed bytes
			e.write(t, "timestamp.json", data)
			return e.in.opts(e.r.Dir)
		}, ReasonSignatures, []string{"timestamp (", "is not signed by a threshold of root 1's timestamp keys (0 valid signatures, 1 needed)"}},
		{"arbitrary software: untrusted key", func(t *testing.T, e *attackEnv) UpdateOptions {
			if err := e.r.AddReleases([]Release{{Archive: writeArchive(t, "evil-9.0.0-linux-x64.tar.gz", 100), Version: "9.0.0", Target: "linux-x64", Channel: "stable"}},
				[]Key{e.ks.targets}, []Key{e.ks.snapshot}, []Key{e.ks.timestamp}); err != nil {
				t.Fatal(err)
			}
			resignRaw(t, e.r, []Key{newKey(t, "mallory")}, e.ks.snapshot, e.ks.timestamp)
			return e.in.opts(e.r.Dir)
		}, ReasonSignatures, []string{"targets (", "root 1's targets keys (0 valid signatures, 1 needed)"}},
		{"rollback: older timestamp", func(t *testing.T, e *attackEnv) UpdateOptions {
			e.write(t, "timestamp.json", e.old["timestamp.json"])
			return e.in.opts(e.r.Dir)
		}, ReasonRollback, []string{"timestamp version rolled back from 4 to 3", "timestamp.json"}},
		{"rollback: older snapshot", func(t *testing.T, e *attackEnv) UpdateOptions {
			e.r.Snapshot.Signed.Version = 3
			if err := e.r.stampTimestamp([]Key{e.ks.timestamp}); err != nil {
				t.Fatal(err)
			}
			return e.in.opts(e.r.Dir)
		}, ReasonRollback, []string{"snapshot version rolled back from 4 to 3"}},
		{"rollback: older targets", func(t *testing.T, e *attackEnv) UpdateOptions {
			e.r.Targets.Signed.Version = 1 // the snapshot will name targets 2, below the trusted 3
			resignRaw(t, e.r, []Key{e.ks.targets}, e.ks.snapshot, e.ks.timestamp)
			return e.in.opts(e.r.Dir)
		}, ReasonRollback, []string{"targets version rolled back from 3 to 2"}},
		{"indefinite freeze: expired timestamp", func(t *testing.T, e *attackEnv) UpdateOptions {
			e.r.Now = time.Now().Add(-20 * 24 * time.Hour) // a timestamp that expired 6 days ago
			if err := e.r.Refresh([]Key{e.ks.snapshot}, []Key{e.ks.timestamp}); err != nil {
				t.Fatal(err)
			}
			return e.in.opts(e.r.Dir)
		}, ReasonExpired, []string{"the timestamp of ", "expired on " + time.Now().Add(-6*24*time.Hour).UTC().Format("2006-01-02")}},
		{"endless data: oversized timestamp", func(t *testing.T, e *attackEnv) UpdateOptions {
			data, _ := os.ReadFile(e.path("timestamp.json"))
			e.write(t, "timestamp.json", append(data, bytes.Repeat([]byte(" "), MaxTimestampBytes)...))
			return e.in.opts(e.r.Dir)
		}, ReasonTooLarge, []string{"timestamp.json is longer than the 16384 bytes bound for timestamp metadata"}},
		{"endless data: archive beyond its length", func(t *testing.T, e *attackEnv) UpdateOptions {
			p := e.archivePath(t)
			data, _ := os.ReadFile(p)
			os.WriteFile(p, append(data, 0), 0o644)
			return e.in.opts(e.r.Dir)
		}, ReasonTooLarge, []string{"the archive ", "is longer than its target length (3000 bytes)"}},
		{"arbitrary software: archive of the signed length, other bytes", func(t *testing.T, e *attackEnv) UpdateOptions {
			p := e.archivePath(t)
			data, _ := os.ReadFile(p)
			data[0] ^= 1
			os.WriteFile(p, data, 0o644)
			return e.in.opts(e.r.Dir)
		}, ReasonIntegrity, []string{"is not the archive the targets role signs for stable/hello-1.1.0-linux-x64.tar.gz", "hash verification failed"}},
		{"mix-and-match: snapshot other than the timestamp names", func(t *testing.T, e *attackEnv) UpdateOptions {
			if err := e.r.Refresh([]Key{e.ks.snapshot}, []Key{e.ks.timestamp}); err != nil { // snapshot 5, timestamp 5
				t.Fatal(err)
			}
			e.write(t, "5.snapshot.json", e.old["4.snapshot.json"])
			return e.in.opts(e.r.Dir)
		}, ReasonMixAndMatch, []string{"the snapshot (", "5.snapshot.json) is version 4, but the timestamp names version 5"}},
		{"mix-and-match: targets other than the snapshot names", func(t *testing.T, e *attackEnv) UpdateOptions {
			addRelease(t, e.r, e.ks, "1.2.0", "stable") // targets 4
			e.write(t, "4.targets.json", e.old["3.targets.json"])
			return e.in.opts(e.r.Dir)
		}, ReasonMixAndMatch, []string{"targets (", "4.targets.json) is version 3, but the snapshot names version 4"}},
		{"compromised key below threshold", func(t *testing.T, e *attackEnv) UpdateOptions {
			second := newKey(t, "a-targets-2")
			if err := e.r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleTargets: {pub(e.ks.targets), pub(second)}}, Thresholds: Roles[int]{RoleTargets: 2}},
				[]Key{e.ks.root, e.ks.targets, second, e.ks.snapshot, e.ks.timestamp}); err != nil {
				t.Fatal(err)
			}
			resignRaw(t, e.r, []Key{e.ks.targets}, e.ks.snapshot, e.ks.timestamp) // one of two
			return e.in.opts(e.r.Dir)
		}, ReasonSignatures, []string{"root 2's targets keys (1 valid signatures, 2 needed)"}},
		{"another distribution's repository: pinned root", func(t *testing.T, e *attackEnv) UpdateOptions {
			other := initRepo(t, newKeySet(t, "b"))
			fresh := newInstall(t, other) // its own root, but the pin is ours
			o := fresh.opts(other.Dir)
			o.ExpectRootSHA256 = "sha256:" + RootSHA256(e.in.root)
			return o
		}, ReasonRootPin, []string{"the initial root given for ", "the pinned root is sha256:", "another distribution's repository"}},
		{"another distribution's repository: pinned root fetched from it", func(t *testing.T, e *attackEnv) UpdateOptions {
			other := initRepo(t, newKeySet(t, "b"))
			o := newInstall(t, other).opts(other.Dir)
			o.InitialRoot = nil
			o.ExpectRootSHA256 = "sha256:" + RootSHA256(e.in.root)
			return o
		}, ReasonRootPin, []string{"metadata/1.root.json has sha256:", "the pinned root is sha256:", "nothing was trusted"}},
		{"another distribution's repository: trusted root", func(t *testing.T, e *attackEnv) UpdateOptions {
			ob := newKeySet(t, "b")
			other := initRepo(t, ob)
			addRelease(t, other, ob, "7.0.0", "stable")
			return e.in.opts(other.Dir)
		}, ReasonSignatures, []string{"timestamp (", "root 1's timestamp keys (0 valid signatures, 1 needed)"}},
		{"root rotation broken: a version skipped", func(t *testing.T, e *attackEnv) UpdateOptions {
			next, _ := metadata.Root().FromBytes(mustBytes(e.r.Root))
			next.Signed.Version = 3
			if err := signRoot(next, e.r.Root, []Key{e.ks.root}); err != nil {
				t.Fatal(err)
			}
			data, _ := next.ToBytes(true)
			e.write(t, "2.root.json", data)
			return e.in.opts(e.r.Dir)
		}, ReasonRootChain, []string{"2.root.json holds root version 3 where root 2 belongs"}},
		{"a signed target path that climbs out of the download directory", func(t *testing.T, e *attackEnv) UpdateOptions {
			raw := json.RawMessage(`{"version":"9.0.0","target":"linux-x64","lockSha256":"","channel":"stable"}`)
			e.r.Targets.Signed.Targets["stable/.."] = &metadata.TargetFiles{Length: 1, Hashes: metadata.Hashes{"sha256": make([]byte, 32)}, Custom: &raw, Path: "stable/.."}
			resignRaw(t, e.r, []Key{e.ks.targets}, e.ks.snapshot, e.ks.timestamp)
			return e.in.opts(e.r.Dir)
		}, ReasonMalformed, []string{"target stable/.. of ", "is not a plain file name under stable/"}},
		{"application downgrade", func(t *testing.T, e *attackEnv) UpdateOptions {
			o := e.in.opts(e.r.Dir)
			o.Active = "2.0.0"
			return o
		}, ReasonDowngrade, []string{"is 1.1.0, older than the active 2.0.0"}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			e := newAttackEnv(t)
			o := row.attack(t, e)
			_, err := Update(context.Background(), o)
			wantErr(t, err, row.reason, row.says...)
		})
	}
}

func newAttackEnv(t *testing.T) *attackEnv {
	t.Helper()
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	addRelease(t, r, ks, "1.0.0", "stable")
	addRelease(t, r, ks, "1.1.0", "stable")
	e := &attackEnv{r: r, ks: ks, old: map[string][]byte{}}
	for _, n := range []string{"timestamp.json", "3.targets.json", "3.snapshot.json"} {
		e.old[n], _ = os.ReadFile(e.path(n))
	}
	if err := r.Refresh([]Key{ks.snapshot}, []Key{ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	e.old["4.snapshot.json"], _ = os.ReadFile(e.path("4.snapshot.json"))
	e.in = newInstall(t, r)
	res := mustUpdate(t, e.in, r.Dir) // the installation trusts this state
	if res.TimestampVersion != 4 || res.SnapshotVersion != 4 || res.TargetsVersion != 3 {
		t.Fatalf("baseline versions: %+v", res)
	}
	return e
}

// archivePath is the published file of release 1.1.0.
func (e *attackEnv) archivePath(t *testing.T) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(e.r.Dir, "targets", "stable", "*.hello-1.1.0-linux-x64.tar.gz"))
	if len(m) != 1 {
		t.Fatalf("published archives: %v", m)
	}
	return m[0]
}

func TestFastForwardRecovery(t *testing.T) {
	e := newAttackEnv(t)
	// An attacker holding the targets, snapshot and timestamp keys pushes
	// the installation to version 1000 of each.
	att, err := Open(e.r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	att.Targets.Signed.Version, att.Snapshot.Signed.Version, att.Timestamp.Signed.Version = 999, 999, 999
	if err := att.publish([]Key{e.ks.targets}, []Key{e.ks.snapshot}, []Key{e.ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	if res := mustUpdate(t, e.in, e.r.Dir); res.TargetsVersion != 1000 {
		t.Fatalf("the attack did not fast-forward: %+v", res)
	}
	// Rotating only the targets key leaves the fast-forwarded timestamp
	// trusted: refused as a rollback, naming it.
	nu := newKeySet(t, "new")
	if err := e.r.RotateTargetsKey([]ed25519.PublicKey{pub(nu.targets)}, 1, []Key{e.ks.root, nu.targets, e.ks.snapshot, e.ks.timestamp}); err != nil {
		t.Fatal(err)
	}
	_, err = e.in.update(t, e.r.Dir)
	wantErr(t, err, ReasonRollback, "timestamp version rolled back from 1000 to 5")
	// Rotating the snapshot and timestamp keys too recovers: the trusted
	// metadata the new keys do not sign is discarded.
	if err := e.r.RotateRoot(RootChange{Keys: Roles[[]ed25519.PublicKey]{RoleSnapshot: {pub(nu.snapshot)}, RoleTimestamp: {pub(nu.timestamp)}}},
		[]Key{e.ks.root, nu.snapshot, nu.timestamp}); err != nil {
		t.Fatal(err)
	}
	res, err := e.in.update(t, e.r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.RootVersion != 3 || res.TargetsVersion != 4 || res.Release.Version != "1.1.0" {
		t.Fatalf("after recovery: %+v", res)
	}
}

func TestNetworkRulesAreTheChannelSources(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	in := newInstall(t, r)
	// Plain http to a remote host: refused before any connection.
	_, err := in.update(t, "http://example.com/hello/")
	if err == nil || !strings.HasPrefix(err.Error(), "NETWORK_DENIED: ") || !strings.Contains(err.Error(), "only loopback hosts") {
		t.Fatalf("plain http to a remote host: %v", err)
	}
	// A directory that is no repository.
	_, err = in.update(t, t.TempDir())
	if err == nil || !HasReason(err, ReasonFetch) || !strings.Contains(err.Error(), "timestamp.json does not exist") || !strings.Contains(err.Error(), "is not a TUF repository") {
		t.Fatalf("an empty directory: %v", err)
	}
	// A server that never answers: the header timeout fires and names
	// the file.
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	o := in.opts(srv.URL + "/")
	o.Limits.Header = 150 * time.Millisecond
	_, err = Update(context.Background(), o)
	if err == nil || !strings.HasPrefix(err.Error(), "UPDATE_FAILED: ") || !strings.Contains(err.Error(), "header timeout") || !strings.Contains(err.Error(), "metadata/2.root.json") {
		t.Fatalf("a silent server: %v", err)
	}
}

func TestTrustStateAfterAnUpdate(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	addRelease(t, r, ks, "1.0.0", "stable")
	in := newInstall(t, r)
	if _, err := ReadTrustState(in.trust); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("before the first update: %v", err)
	}
	mustUpdate(t, in, r.Dir)
	st, err := ReadTrustState(in.trust)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, role := range st.Roles {
		got = append(got, fmt.Sprintf("%s %d", role.Role, role.Version))
	}
	if strings.Join(got, ", ") != "root 1, timestamp 2, snapshot 2, targets 2" {
		t.Fatalf("trust state: %v", got)
	}
	now := time.Now()
	if w := st.ExpiringWithin(now, 7*24*time.Hour); len(w) != 0 {
		t.Fatalf("fresh metadata expiring within a week: %+v", w)
	}
	if w := st.ExpiringWithin(now, 15*24*time.Hour); len(w) != 1 || w[0].Role != RoleTimestamp {
		t.Fatalf("within 15 days only the 14-day timestamp expires: %+v", w)
	}
	id, _ := ks.timestamp.TUFKeyID()
	if id2, err := TUFKeyIDOf(pub(ks.timestamp)); err != nil || id2 != id || !slices.Contains(r.Root.Signed.Roles[RoleTimestamp].KeyIDs, id) {
		t.Fatalf("key ids %s %s: %v", id, id2, err)
	}
}

// A kill between go-tuf's writes of the trusted timestamp and snapshot
// leaves a new timestamp beside the old snapshot; the next update repairs it.
func TestTrustStateHalfWrittenByAKillIsRepaired(t *testing.T) {
	ks := newKeySet(t, "a")
	r := initRepo(t, ks)
	addRelease(t, r, ks, "1.0.0", "stable")
	in := newInstall(t, r)
	mustUpdate(t, in, r.Dir)
	addRelease(t, r, ks, "1.1.0", "stable") // timestamp, snapshot and targets 3
	ts, _ := os.ReadFile(r.metaPath("timestamp.json"))
	if err := os.WriteFile(filepath.Join(in.trust, "timestamp.json"), ts, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := in.update(t, r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.SnapshotVersion != 3 || res.TargetsVersion != 3 || res.Release.Version != "1.1.0" {
		t.Fatalf("after the repair: %+v", res)
	}
}

// The store moves whole: an update refused after go-tuf verified and
// wrote the new timestamp and snapshot (to its copy) leaves trust/<id>/
// byte for byte as it was, and a copy a killed update left beside it is
// removed by the next update, which succeeds.
func TestTrustStoreMovesWhole(t *testing.T) {
	e := newAttackEnv(t)
	read := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		entries, err := os.ReadDir(e.in.trust)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range entries {
			b, _ := os.ReadFile(filepath.Join(e.in.trust, d.Name()))
			out[d.Name()] = string(b)
		}
		return out
	}
	before := read()
	e.r.Targets.Signed.Version = 1 // targets 2 named by a new snapshot and timestamp: refused at targets
	resignRaw(t, e.r, []Key{e.ks.targets}, e.ks.snapshot, e.ks.timestamp)
	_, err := e.in.update(t, e.r.Dir)
	wantErr(t, err, ReasonRollback, "targets version rolled back from 3 to 2")
	if after := read(); !maps.Equal(before, after) {
		t.Fatalf("a refused update changed the trusted store: %d files before, %d after", len(before), len(after))
	}
	// A stage of a killed update (its pid gone) and one of an update that
	// is still running (another live process's pid): only the first is
	// garbage.
	dead := exec.Command("true")
	dead.Run()
	killed := StagePrefix(e.in.trust) + fmt.Sprint(dead.Process.Pid) + "-0badf00d"
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer live.Process.Kill()
	running := StagePrefix(e.in.trust) + fmt.Sprint(live.Process.Pid) + "-feedf00d"
	for _, d := range []string{killed, running} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(killed, "timestamp.json"), []byte("half"), 0o644)
	e.r.Targets.Signed.Version = 3 // the publisher goes on from targets 3
	addRelease(t, e.r, e.ks, "1.2.0", "stable")
	if res := mustUpdate(t, e.in, e.r.Dir); res.Release.Version != "1.2.0" {
		t.Fatalf("after the refusal: %+v", res)
	}
	if left, _ := filepath.Glob(StagePrefix(e.in.trust) + "*"); len(left) != 1 || left[0] != running {
		t.Fatalf("stores beside trust/hello: %v, want only the running update's %s", left, running)
	}
	if st, err := ReadTrustState(e.in.trust); err != nil || st.Roles[3].Version != 4 {
		t.Fatalf("the trusted store after the update: %+v %v", st, err)
	}
}
