package main

import (
	"crypto/ed25519"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
	"piship.dev/piship/testdata/hostile"
)

// The attacks of TUF's threat list that a repository or a mirror can make,
// each through `piship update` the way a user runs it: refused with
// UPDATE_FAILED, a message naming the attack, and the active release left
// as it was. One TUF repository (one key, k1, for every role) with hello
// 1.0.0 and then 1.0.1; repoOld is a copy taken between the two additions.
// Each attack is a copy of it as an attacker changed it. Holding no key:
// edited signatures, archives and sizes, replayed older files, another
// publisher's repository, and a root 2 that names a root key of the
// attacker's and is signed by it alone. Holding k1 as the online key,
// re-signing through stages/tuf's API what piship repo would not write:
// an expired timestamp, older snapshot and targets versions, and (once
// root 2 wants two targets keys) targets signed by k1 alone. Then the
// recoveries that must work: after an attacker with the online keys
// fast-forwards an installation to version 999, rotating the targets key
// alone is refused as a timestamp rollback, rotating the snapshot and
// timestamp keys too recovers; and roots 2 and 3 with new keys and no
// release.
func TestUpdateRefusesTUFAttacks(t *testing.T) {
	root := t.TempDir()
	base := buildEnv(t)
	key := filepath.Join(root, "release.pem")
	if code, out, stderr := piship(t, base, "keygen", key, "--id", "k1"); code != exitOK {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	initRepo := func(dir, key string) string {
		t.Helper()
		code, out, stderr := piship(t, base, "repo", "init", dir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
		pin := regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)
		if code != exitOK || pin == nil {
			t.Fatalf("repo init %s: %d %s%s", dir, code, out, stderr)
		}
		return "sha256:" + pin[1]
	}
	repo := filepath.Join(root, "repo")
	pin := initRepo(repo, key)
	archives := map[string]string{}
	for _, v := range []string{"1.0.0", "1.0.1"} {
		dir := copyDist(t, "hello")
		hcl, _ := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
		writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), v, "https://updates.example.invalid/hello/", pin))
		if code, _, stderr := piship(t, base, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		mustRelease(t, base, dir)
		archives[v] = filepath.Join(dir, "dist", "releases", "hello-"+v+"-linux-x64.tar.zst")
	}
	add := func(dir, key, archive string) {
		t.Helper()
		// No deltas: every attack here is on the archive an update
		// downloads (TestDeltaUpdates attacks the delta).
		if code, _, stderr := piship(t, base, "repo", "add", dir, archive, "--key", key, "--deltas", "0"); code != exitOK {
			t.Fatalf("repo add %s: %s", archive, stderr)
		}
	}
	add(repo, key, archives["1.0.0"])
	repoOld := filepath.Join(root, "repo-old")
	if err := copyTree(repo, repoOld); err != nil {
		t.Fatal(err)
	}
	add(repo, key, archives["1.0.1"])

	// Another publisher's repository offering the same release.
	otherKey := filepath.Join(root, "other.pem")
	if code, _, stderr := piship(t, base, "keygen", otherKey, "--id", "k2"); code != exitOK {
		t.Fatalf("keygen: %s", stderr)
	}
	other := filepath.Join(root, "other")
	initRepo(other, otherKey)
	add(other, otherKey, archives["1.0.1"])

	// tampered returns a copy of repo changed by change.
	n := 0
	tampered := func(from string, change func(dir string)) string {
		t.Helper()
		n++
		dir := filepath.Join(root, "t", strings.Repeat("x", n))
		if err := copyTree(from, dir); err != nil {
			t.Fatal(err)
		}
		change(dir)
		return dir
	}
	newArchive := func(dir string) string {
		t.Helper()
		m, _ := filepath.Glob(filepath.Join(dir, "targets", "stable", "*.hello-1.0.1-linux-x64.tar.zst"))
		if len(m) != 1 {
			t.Fatalf("the 1.0.1 target in %s: %v", dir, m)
		}
		return m[0]
	}
	edit := func(p string, f func([]byte) []byte) {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// home installs first into a fresh install home and returns its env.
	home := func(name, first string) map[string]string {
		t.Helper()
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(root, name, "i"),
			"PISHIP_BIN_HOME": filepath.Join(root, name, "b"), "PISHIP_STATE_HOME": filepath.Join(root, name, "s")} {
			env[k] = v
		}
		if code, _, stderr := piship(t, env, "install", archives[first]); code != exitOK {
			t.Fatalf("install %s: %s", first, stderr)
		}
		return env
	}
	active := func(env map[string]string) string {
		t.Helper()
		r, err := receipt.Read(env["PISHIP_INSTALL_HOME"], "hello")
		if err != nil {
			t.Fatal(err)
		}
		return r.Active
	}

	// The rollback cases need an installation that already trusts repo's
	// newest timestamp, snapshot and targets: it updates from repo first.
	// Each rollback row has its own installation (a refusal leaves the
	// trusted store as it was, which the loop checks).
	updatedFrom := func(name string) map[string]string {
		t.Helper()
		env := home(name, "1.0.0")
		if code, _, stderr := piship(t, env, "update", "hello", "--from", repo); code != exitOK {
			t.Fatalf("update from the good repository: %s", stderr)
		}
		return env
	}
	updated := updatedFrom("updated")

	// What an attacker holding keys writes, through stages/tuf's API.
	k1, err := tuf.ReadKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keygen := func(name string) (string, tuf.Key) {
		t.Helper()
		p := filepath.Join(root, name+".pem")
		if code, _, stderr := piship(t, base, "keygen", p, "--id", name); code != exitOK {
			t.Fatalf("keygen %s: %s", name, stderr)
		}
		k, err := tuf.ReadKey(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, k
	}
	open := func(dir string) *tuf.Repository {
		t.Helper()
		r, err := tuf.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rel101, err := tuf.ReleaseOf(archives["1.0.1"], "stable")
	if err != nil {
		t.Fatal(err)
	}
	// republish re-adds 1.0.1 (equal fields, so allowed): targets,
	// snapshot and timestamp signed again with versions + 1.
	republish := func(r *tuf.Repository, k tuf.Key) {
		t.Helper()
		if err := r.AddReleases([]tuf.Release{rel101}, []tuf.Key{k}, []tuf.Key{k}, []tuf.Key{k}); err != nil {
			t.Fatal(err)
		}
	}
	mustCLI := func(args ...string) string {
		t.Helper()
		code, out, stderr := piship(t, base, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d\n%s%s", strings.Join(args[:2], " "), code, out, stderr)
		}
		return out
	}
	second, _ := keygen("k-targets-2")
	_, forger := keygen("k-forger")

	cases := []struct {
		name  string
		env   map[string]string
		from  string
		wants []string
	}{
		{"arbitrary software: bad signature", home("sig", "1.0.0"), tampered(repo, func(d string) {
			edit(filepath.Join(d, "metadata", "timestamp.json"), func(b []byte) []byte {
				return regexp.MustCompile(`"sig": "([0-9a-f])`).ReplaceAllFunc(b, func(m []byte) []byte {
					c := m[len(m)-1]
					if c == '0' {
						c = '1'
					} else {
						c = '0'
					}
					return append(m[:len(m)-1:len(m)-1], c)
				})
			})
		}), []string{"is not signed by a threshold", "a bad signature, an untrusted key or too few keys"}},
		{"arbitrary software: other bytes at the signed length", home("bytes", "1.0.0"), tampered(repo, func(d string) {
			edit(newArchive(d), func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b })
		}), []string{"is not the archive the targets role signs"}},
		{"endless data: archive beyond its length", home("long", "1.0.0"), tampered(repo, func(d string) {
			edit(newArchive(d), func(b []byte) []byte { return append(b, 0) })
		}), []string{"longer than its target length", "endless data"}},
		{"mix-and-match: a snapshot the timestamp does not name", home("mix", "1.0.0"), tampered(repo, func(d string) {
			snaps, _ := filepath.Glob(filepath.Join(d, "metadata", "*.snapshot.json"))
			if len(snaps) < 2 {
				t.Fatalf("snapshots %v", snaps)
			}
			older, _ := os.ReadFile(filepath.Join(d, "metadata", "2.snapshot.json"))
			edit(filepath.Join(d, "metadata", "3.snapshot.json"), func([]byte) []byte { return older })
		}), []string{"mix-and-match"}},
		{"another distribution's repository", home("other", "1.0.0"), other, []string{"another distribution's repository"}},
		{"rollback: an older timestamp", updated, repoOld, []string{"timestamp version rolled back from"}},
		// k1 as the online timestamp and snapshot key, signing in the past:
		// the timestamp expired 6 days ago.
		{"indefinite freeze: expired timestamp", home("expired", "1.0.0"), tampered(repo, func(d string) {
			r := open(d)
			r.Now = time.Now().Add(-20 * 24 * time.Hour)
			if err := r.Refresh([]tuf.Key{k1}, []tuf.Key{k1}); err != nil {
				t.Fatal(err)
			}
		}), []string{"the timestamp of ", "expired on " + time.Now().Add(-6*24*time.Hour).UTC().Format("2006-01-02"), "indefinite freeze"}},
		{"endless data: oversized timestamp", home("huge", "1.0.0"), tampered(repo, func(d string) {
			edit(filepath.Join(d, "metadata", "timestamp.json"), func(b []byte) []byte {
				return append(b, strings.Repeat(" ", 16384)...)
			})
		}), []string{"timestamp.json is longer than the 16384 bytes bound for timestamp metadata", "endless data"}},
		// k1 as the snapshot and timestamp key: snapshot 2 (below the
		// trusted 3) named by a new timestamp 4.
		{"rollback: an older snapshot", updatedFrom("snap"), tampered(repo, func(d string) {
			r := open(d)
			r.Snapshot.Signed.Version -= 2
			if err := r.Refresh([]tuf.Key{k1}, []tuf.Key{k1}); err != nil {
				t.Fatal(err)
			}
		}), []string{"snapshot version rolled back from 3 to 2"}},
		// k1 as the targets, snapshot and timestamp key: targets 2 (below
		// the trusted 3) named by a new snapshot 4 and timestamp 4.
		{"rollback: an older targets", updatedFrom("targets"), tampered(repo, func(d string) {
			r := open(d)
			r.Targets.Signed.Version -= 2
			republish(r, k1)
		}), []string{"targets version rolled back from 3 to 2"}},
		// Root 2 needs two targets keys; the attacker holds only k1 (and
		// the online keys) and signs targets 5 with it alone.
		{"compromised key below threshold", home("threshold", "1.0.0"), tampered(repo, func(d string) {
			mustCLI("repo", "rotate-root", d, "--key", key, "--new-key", "targets="+key, "--new-key", "targets="+second, "--threshold", "targets=2")
			r := open(d)
			if r.Root.Signed.Version != 2 || r.Root.Signed.Roles[tuf.RoleTargets].Threshold != 2 {
				t.Fatalf("root %d, targets threshold %d", r.Root.Signed.Version, r.Root.Signed.Roles[tuf.RoleTargets].Threshold)
			}
			r.Root.Signed.Roles[tuf.RoleTargets].Threshold = 1 // the attacker's tool, not the root on disk
			republish(r, k1)
		}), []string{"targets (", "is not signed by a threshold of root 2's targets keys (1 valid signatures, 2 needed)"}},
		// No key of root 1: root 2 names a root key of the attacker's and
		// is signed by it alone.
		{"root rotation refused: signed only by new keys", home("forged-root", "1.0.0"), tampered(repo, func(d string) {
			r := open(d)
			for _, id := range slices.Clone(r.Root.Signed.Roles[tuf.RoleRoot].KeyIDs) {
				if err := r.Root.Signed.RevokeKey(id, tuf.RoleRoot); err != nil {
					t.Fatal(err)
				}
			}
			pk, err := metadata.KeyFromPublicKey(forger.Private.Public().(ed25519.PublicKey))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Root.Signed.AddKey(pk, tuf.RoleRoot); err != nil {
				t.Fatal(err)
			}
			if err := r.RotateRoot(tuf.RootChange{}, []tuf.Key{forger}); err != nil {
				t.Fatal(err)
			}
		}), []string{"root 2 (", "2.root.json) is not signed by a threshold of root 1's root keys (0 valid signatures of 1 needed)"}},
		{"application downgrade", home("down", "1.0.1"), repoOld, []string{"a downgrade is refused"}},
	}
	// trusted is the installation's TUF store, file by file.
	trusted := func(env map[string]string) map[string]string {
		t.Helper()
		dir := receipt.TrustDir(env["PISHIP_INSTALL_HOME"], "hello")
		out := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			out[e.Name()] = string(b)
		}
		return out
	}
	for _, c := range cases {
		before, store := active(c.env), trusted(c.env)
		code, out, stderr := piship(t, c.env, "update", "hello", "--from", c.from)
		if code != exitFailed || !strings.Contains(stderr, "UPDATE_FAILED") {
			t.Errorf("%s: exit %d, want %d with UPDATE_FAILED\n%s%s", c.name, code, exitFailed, out, stderr)
			continue
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(stderr))
		for _, w := range c.wants {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: the refusal does not say %q:\n%s", c.name, w, stderr)
			}
		}
		if after := active(c.env); after != before {
			t.Errorf("%s: the active release changed from %s to %s", c.name, before, after)
		}
		if !maps.Equal(store, trusted(c.env)) {
			t.Errorf("%s: the refused update changed the trusted metadata in trust/hello/", c.name)
		}
	}

	// Fast-forward recovery. An attacker holding the online keys (k1 for
	// targets, snapshot and timestamp) pushes an installation to version
	// 999 of each; legit is the publisher's repository, copied before.
	legit := tampered(repo, func(string) {})
	ff := tampered(repo, func(d string) {
		r := open(d)
		r.Targets.Signed.Version, r.Snapshot.Signed.Version, r.Timestamp.Signed.Version = 998, 998, 998
		republish(r, k1)
	})
	pushed := home("pushed", "1.0.0")
	if code, out, stderr := piship(t, pushed, "update", "hello", "--from", ff); code != exitOK || active(pushed) != "1.0.1" {
		t.Fatalf("update from the fast-forwarded repository: exit %d, active %s\n%s%s", code, active(pushed), out, stderr)
	}
	// The publisher rotates only the targets key: the installation still
	// trusts timestamp 999, which k1 signs under root 2 too.
	k5, _ := keygen("k5")
	mustCLI("repo", "rotate-key", legit, "--role", "targets", "--new-key", k5, "--key", key)
	code, out, stderr := piship(t, pushed, "update", "hello", "--from", legit)
	if code != exitFailed || !strings.Contains(stderr, "UPDATE_FAILED") || !strings.Contains(stderr, "timestamp version rolled back from 999 to 4") {
		t.Errorf("after rotating only the targets key: exit %d, want %d with UPDATE_FAILED naming the timestamp rollback\n%s%s", code, exitFailed, out, stderr)
	} else {
		t.Logf("fast-forward, targets key rotated: %s", strings.TrimSpace(stderr))
	}
	if a := active(pushed); a != "1.0.1" {
		t.Errorf("after the refused update: active %s, want 1.0.1", a)
	}
	// Rotating the snapshot and timestamp keys too recovers: the trusted
	// metadata root 3's keys do not sign is discarded.
	mustCLI("repo", "rotate-root", legit, "--key", key, "--new-key", "snapshot="+k5, "--new-key", "timestamp="+k5)
	code, out, stderr = piship(t, pushed, "update", "hello", "--from", legit)
	if code != exitOK || !strings.Contains(out, "hello 1.0.1 is up to date") || active(pushed) != "1.0.1" {
		t.Errorf("after rotating the snapshot and timestamp keys: exit %d, active %s, want up to date on 1.0.1\n%s%s", code, active(pushed), out, stderr)
	} else {
		t.Logf("fast-forward recovered: %s", strings.TrimSpace(out))
	}
	if code, out, _ := piship(t, pushed, "doctor", "hello"); code != exitOK || !strings.Contains(out, "root 3") {
		t.Errorf("doctor after the recovery: exit %d, want trusted root 3:\n%s", code, out)
	}

	// Root rotation that works: root 1 -> 2 -> 3, each with a new key set
	// for every role and no new release; an installation that trusted
	// root 1 walks the chain and updates.
	rot := tampered(repo, func(string) {})
	signer := key
	for i, k := range []string{"k3", "k4"} {
		next := filepath.Join(root, k+".pem")
		if code, _, stderr := piship(t, base, "keygen", next, "--id", k); code != exitOK {
			t.Fatalf("keygen: %s", stderr)
		}
		args := []string{"repo", "rotate-root", rot, "--key", signer}
		for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
			args = append(args, "--new-key", role+"="+next)
		}
		if code, out, stderr := piship(t, base, args...); code != exitOK {
			t.Fatalf("rotation %d: %d %s%s", i+2, code, out, stderr)
		}
		signer = next
	}
	walker := home("walker", "1.0.0")
	if code, out, stderr := piship(t, walker, "update", "hello", "--from", rot); code != exitOK || active(walker) != "1.0.1" {
		t.Fatalf("update through roots 2 and 3: exit %d, active %s\n%s%s", code, active(walker), out, stderr)
	}
	if code, out, _ := piship(t, walker, "doctor", "hello"); code != exitOK || !strings.Contains(out, "root 3") {
		t.Errorf("doctor after the walk: exit %d, want trusted root 3:\n%s", code, out)
	}
	// Refused by install after TUF accepted the metadata and the archive:
	// an attacker holding k1 (the online keys) signs a 1.0.2 target whose
	// archive the release rules then refuse. Each update fails with
	// INTEGRITY_FAILED naming the rule, leaves the whole install home
	// (trust/hello/ among it) byte for byte as it was, and no download.
	rel100, err := tuf.ReleaseOf(archives["1.0.0"], "stable")
	if err != nil {
		t.Fatal(err)
	}
	locks := map[string]string{archives["1.0.0"]: rel100.LockSHA256}
	crafted := func(name string, mutate func(dir string) error) string {
		t.Helper()
		dir, err := hostile.Release(filepath.Join(root, "crafted", name), "1.0.2")
		if err != nil {
			t.Fatal(err)
		}
		if err := mutate(dir); err != nil {
			t.Fatal(err)
		}
		if err := hostile.Reseal(dir, hostile.Seal{}); err != nil {
			t.Fatal(err)
		}
		arc, err := hostile.Archive(dir, filepath.Join(root, "crafted", name))
		if err != nil {
			t.Fatal(err)
		}
		lock, err := os.ReadFile(filepath.Join(dir, "payload", "piship.lock"))
		if err != nil {
			t.Fatal(err)
		}
		locks[arc] = canon.SHA256Hex(lock)
		return arc
	}
	lockOf := func(arc string) string { return locks[arc] }
	editJSON := func(p string, f func(m map[string]any)) error { return hostile.EditJSON(p, f) }
	otherApp := crafted("other-app", func(dir string) error {
		if err := editJSON(filepath.Join(dir, "release.json"), func(m map[string]any) { m["distribution"].(map[string]any)["id"] = "other" }); err != nil {
			return err
		}
		return editJSON(filepath.Join(dir, "payload", "piship.lock"), func(m map[string]any) { m["distribution"].(map[string]any)["id"] = "other" })
	})
	otherTarget := crafted("other-target", func(dir string) error {
		if err := editJSON(filepath.Join(dir, "release.json"), func(m map[string]any) { m["target"] = "win32-x64" }); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "payload", "metadata", "target.json"), []byte(`{"arch":"x64","platform":"win32"}`+"\n"), 0o644)
	})
	otherLock := crafted("other-lock", func(string) error { return nil })
	older := filepath.Join(root, "crafted", "older", "hello-1.0.2-linux-x64.tar.zst")
	if err := os.MkdirAll(filepath.Dir(older), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(archives["1.0.0"]); err != nil || os.WriteFile(older, b, 0o644) != nil {
		t.Fatal(err)
	}
	sign := func(arc, lock string) string {
		t.Helper()
		return tampered(repo, func(d string) {
			r := open(d)
			if err := r.AddReleases([]tuf.Release{{Archive: arc, Version: "1.0.2", Target: "linux-x64", LockSHA256: lock, Channel: "stable"}},
				[]tuf.Key{k1}, []tuf.Key{k1}, []tuf.Key{k1}); err != nil {
				t.Fatal(err)
			}
		})
	}
	// tree is every path below dir: its type, mode and content digest.
	tree := func(dir string) map[string]string {
		t.Helper()
		out := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			v := fi.Mode().String()
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				v += " " + canon.SHA256Hex(b)
			}
			out[strings.TrimPrefix(p, dir)] = v
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, c := range []struct {
		name, from, rule string
	}{
		{"release.json names another app", sign(otherApp, lockOf(otherApp)), "(identity)"},
		{"an archive older than its signed entry claims", sign(older, lockOf(archives["1.0.0"])), "(identity)"},
		{"another release's bytes: another target's under this one's entry", sign(otherTarget, lockOf(otherTarget)), "(identity)"},
		{"a lock other than the signed lockSha256", sign(otherLock, rel101.LockSHA256), "(signed-entry)"},
	} {
		env := home("refused-"+strings.ReplaceAll(c.name[:12], " ", "-"), "1.0.0")
		ih := env["PISHIP_INSTALL_HOME"]
		before := tree(ih)
		if _, ok := before["/trust/hello"]; !ok {
			// The installation trusts a store already: an update of it moves.
			if code, _, stderr := piship(t, env, "update", "hello", "--from", repoOld); code != exitOK {
				t.Fatalf("%s: update to trust a store first: %s", c.name, stderr)
			}
			before = tree(ih)
		}
		code, out, stderr := piship(t, env, "update", "hello", "--from", c.from)
		if code != exitFailed || !strings.Contains(stderr, "INTEGRITY_FAILED") || !strings.Contains(stderr, c.rule) {
			t.Errorf("%s: exit %d, want %d with INTEGRITY_FAILED naming %s\n%s%s", c.name, code, exitFailed, c.rule, out, stderr)
			continue
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(stderr))
		after := tree(ih)
		for p, v := range after {
			if before[p] != v {
				t.Errorf("%s: the refused update left %s (%s; was %q)", c.name, p, v, before[p])
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Errorf("%s: the refused update removed %s", c.name, p)
			}
		}
		if a := active(env); a != "1.0.0" {
			t.Errorf("%s: active %s, want 1.0.0", c.name, a)
		}
	}
}
