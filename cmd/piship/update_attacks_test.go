package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/home/receipt"
)

// The attacks of TUF's threat list that a repository or a mirror can make,
// each through `piship update` the way a user runs it: refused with
// UPDATE_FAILED, a message naming the attack, and the active release left
// as it was. One TUF repository (one key for every role) with hello 1.0.0
// and then 1.0.1; repoOld is a copy taken between the two additions. Then
// the rotation that must work: roots 2 and 3 with new keys and no release.
// (A root N+1 signed only by its new keys cannot be published with piship
// repo; stages/tuf's TestRootRotationWithNewKeySetsNeedsNoRelease refuses one written by hand.)
func TestUpdateRefusesTUFAttacks(t *testing.T) {
	root := t.TempDir()
	base := buildEnv(t)
	key := filepath.Join(root, "release.pem")
	if code, out, stderr := cli(t, base, "keygen", key, "--id", "k1"); code != exitOK {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	initRepo := func(dir, key string) string {
		t.Helper()
		code, out, stderr := cli(t, base, "repo", "init", dir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
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
		if code, _, stderr := cli(t, base, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		mustRelease(t, base, dir)
		archives[v] = filepath.Join(dir, "dist", "releases", "hello-"+v+"-linux-x64.tar.gz")
	}
	add := func(dir, key, archive string) {
		t.Helper()
		if code, _, stderr := cli(t, base, "repo", "add", dir, archive, "--key", key); code != exitOK {
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
	if code, _, stderr := cli(t, base, "keygen", otherKey, "--id", "k2"); code != exitOK {
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
		m, _ := filepath.Glob(filepath.Join(dir, "targets", "stable", "*.hello-1.0.1-linux-x64.tar.gz"))
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
		if code, _, stderr := cli(t, env, "install", archives[first]); code != exitOK {
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

	// The rollback case needs an installation that already trusts the
	// newer timestamp: it updates from repo first.
	updated := home("updated", "1.0.0")
	if code, _, stderr := cli(t, updated, "update", "hello", "--from", repo); code != exitOK {
		t.Fatalf("update from the good repository: %s", stderr)
	}

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
		{"application downgrade", home("down", "1.0.1"), repoOld, []string{"a downgrade is refused"}},
	}
	for _, c := range cases {
		before := active(c.env)
		code, out, stderr := cli(t, c.env, "update", "hello", "--from", c.from)
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
	}

	// Root rotation that works: root 1 -> 2 -> 3, each with a new key set
	// for every role and no new release; an installation that trusted
	// root 1 walks the chain and updates.
	rot := tampered(repo, func(string) {})
	signer := key
	for i, k := range []string{"k3", "k4"} {
		next := filepath.Join(root, k+".pem")
		if code, _, stderr := cli(t, base, "keygen", next, "--id", k); code != exitOK {
			t.Fatalf("keygen: %s", stderr)
		}
		args := []string{"repo", "rotate-root", rot, "--key", signer}
		for _, role := range []string{"root", "targets", "snapshot", "timestamp"} {
			args = append(args, "--new-key", role+"="+next)
		}
		if code, out, stderr := cli(t, base, args...); code != exitOK {
			t.Fatalf("rotation %d: %d %s%s", i+2, code, out, stderr)
		}
		signer = next
	}
	walker := home("walker", "1.0.0")
	if code, out, stderr := cli(t, walker, "update", "hello", "--from", rot); code != exitOK || active(walker) != "1.0.1" {
		t.Fatalf("update through roots 2 and 3: exit %d, active %s\n%s%s", code, active(walker), out, stderr)
	}
	if code, out, _ := cli(t, walker, "doctor", "hello"); code != exitOK || !strings.Contains(out, "root 3") {
		t.Errorf("doctor after the walk: exit %d, want trusted root 3:\n%s", code, out)
	}
}
