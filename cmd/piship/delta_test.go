package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/home"
)

// deltaWorld is a TUF repository holding hello 1.0.0 and 1.1.0 (which
// changes a resource and adds one) with the delta repo add made between
// them, and the two release archives.
type deltaWorld struct {
	base     map[string]string
	key      string
	repo     string
	archives map[string]string
	dists    map[string]string // version -> its distribution directory
	root     string
}

func newDeltaWorld(t *testing.T) *deltaWorld {
	t.Helper()
	w := &deltaWorld{root: t.TempDir(), base: buildEnv(t), archives: map[string]string{}, dists: map[string]string{}}
	w.key = filepath.Join(w.root, "release.pem")
	if code, out, stderr := piship(t, w.base, "keygen", w.key, "--id", "k1"); code != exitOK {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	w.repo = filepath.Join(w.root, "repo")
	code, out, stderr := piship(t, w.base, "repo", "init", w.repo, "--key", "root="+w.key, "--key", "targets="+w.key, "--key", "snapshot="+w.key, "--key", "timestamp="+w.key)
	pin := regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)
	if code != exitOK || pin == nil {
		t.Fatalf("repo init: %d %s%s", code, out, stderr)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		dir := copyDist(t, "hello")
		hcl, _ := os.ReadFile(filepath.Join(dir, "distribution.hcl"))
		writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), v, "https://updates.example.invalid/hello/", "sha256:"+pin[1]))
		if v == "1.1.0" {
			writeFile(t, dir, "resources/motd.txt", "the motd of 1.1.0, longer than before\n")
			writeFile(t, dir, "resources/themes/dark.json", `{"name": "dark"}`+"\n")
		}
		if code, _, stderr := piship(t, w.base, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		mustRelease(t, w.base, dir)
		m, _ := filepath.Glob(filepath.Join(dir, "dist", "releases", "hello-"+v+"-linux-x64.tar.*"))
		m = slices.DeleteFunc(m, func(p string) bool { return strings.HasSuffix(p, ".sha256") })
		if len(m) != 1 {
			t.Fatalf("release archives of %s: %v", v, m)
		}
		w.archives[v], w.dists[v] = m[0], dir
	}
	return w
}

// add publishes archives on w's repository (or dir) with extra flags.
func (w *deltaWorld) add(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, stderr := piship(t, w.base, append([]string{"repo", "add", dir, "--key", w.key}, args...)...)
	if code != exitOK {
		t.Fatalf("repo add %v: exit %d\n%s%s", args, code, out, stderr)
	}
	return out
}

// home is a fresh set of homes with hello 1.0.0 installed.
func (w *deltaWorld) home(t *testing.T) map[string]string {
	t.Helper()
	h := t.TempDir()
	env := map[string]string{"PISHIP_CACHE_HOME": w.base["PISHIP_CACHE_HOME"], "PISHIP_PROGRESS": "0",
		"PISHIP_INSTALL_HOME": filepath.Join(h, "install"), "PISHIP_BIN_HOME": filepath.Join(h, "bin"), "PISHIP_STATE_HOME": filepath.Join(h, "state")}
	if code, out, stderr := piship(t, env, "install", w.archives["1.0.0"]); code != exitOK {
		t.Fatalf("install 1.0.0: %d %s%s", code, out, stderr)
	}
	return env
}

// tree lists an installed version directory: every file's mode and
// sha256, every directory.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = "dir " + fi.Mode().String()
			return nil
		}
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		out[rel] = fi.Mode().String() + " " + hex.EncodeToString(sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: %s is %q, want %q", what, p, got[p], w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: %s should not be there", what, p)
		}
	}
}

// An update from a repository with a delta downloads the delta and builds
// exactly the tree the archive installs; a tree that differs by one byte
// falls back to the archive, once, saying so in the output and as a span
// event; a tampered delta target is refused by TUF before it is read (the
// update takes the archive); repo add writes the same delta bytes twice.
func TestDeltaUpdates(t *testing.T) {
	w := newDeltaWorld(t)
	out := w.add(t, w.repo, w.archives["1.0.0"], w.archives["1.1.0"])
	if !strings.Contains(out, "published stable/hello-1.1.0-linux-x64.from-1.0.0.delta: the delta from 1.0.0 to 1.1.0 for linux-x64") {
		t.Fatalf("repo add published no delta:\n%s", out)
	}
	deltaTarget, _ := filepath.Glob(filepath.Join(w.repo, "targets", "stable", "*.hello-1.1.0-linux-x64.from-1.0.0.delta"))
	if len(deltaTarget) != 1 {
		t.Fatalf("the delta target file: %v", deltaTarget)
	}
	// The same releases added to another repository give the same delta
	// bytes (its file is named by its digest).
	again := filepath.Join(w.root, "repo-again")
	if code, out, stderr := piship(t, w.base, "repo", "init", again, "--key", "root="+w.key, "--key", "targets="+w.key, "--key", "snapshot="+w.key, "--key", "timestamp="+w.key); code != exitOK {
		t.Fatalf("repo init: %d %s%s", code, out, stderr)
	}
	w.add(t, again, w.archives["1.0.0"], w.archives["1.1.0"])
	if m, _ := filepath.Glob(filepath.Join(again, "targets", "stable", filepath.Base(deltaTarget[0]))); len(m) != 1 {
		t.Fatalf("repo add of the same releases wrote another delta (its digest names it): %v", m)
	}

	// Releases are reproducible: 1.1.0 released again cold (no cache)
	// and warm gives the same v2 archive bytes, so the same delta.
	want110, _ := os.ReadFile(w.archives["1.1.0"])
	for _, form := range []string{"cold", "warm"} {
		env := maps.Clone(w.base)
		if form == "cold" {
			env["PISHIP_RELEASE_NO_CACHE"] = "1"
		}
		out := filepath.Join(w.root, "again-"+form)
		mustRelease(t, env, w.dists["1.1.0"], "--out", out)
		got, err := os.ReadFile(filepath.Join(out, "releases", filepath.Base(w.archives["1.1.0"])))
		if err != nil || !bytes.Equal(got, want110) {
			t.Fatalf("a %s release of 1.1.0 wrote other archive bytes (%v)", form, err)
		}
	}

	// --v1-twin: the v1 archive of the same tree beside each v2 one, which
	// verify-release accepts as the release it is; an update still takes
	// v2 (TestUpdateTakesTheNewestFormatItReads: what a v1-only piship
	// takes).
	twins := filepath.Join(w.root, "repo-twins")
	if code, out, stderr := piship(t, w.base, "repo", "init", twins, "--key", "root="+w.key, "--key", "targets="+w.key, "--key", "snapshot="+w.key, "--key", "timestamp="+w.key); code != exitOK {
		t.Fatalf("repo init: %d %s%s", code, out, stderr)
	}
	if out := w.add(t, twins, w.archives["1.1.0"], "--v1-twin"); !strings.Contains(out, "published stable/hello-1.1.0-linux-x64.tar.gz: the piship-archive/v1 twin of 1.1.0 linux-x64") {
		t.Fatalf("repo add --v1-twin:\n%s", out)
	}
	twin, _ := filepath.Glob(filepath.Join(twins, "targets", "stable", "*.hello-1.1.0-linux-x64.tar.gz"))
	if len(twin) != 1 {
		t.Fatalf("the twin's target file: %v", twin)
	}
	plain := filepath.Join(t.TempDir(), "hello-1.1.0-linux-x64.tar.gz")
	if err := copyTree(twin[0], plain); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := piship(t, w.base, "verify-release", plain); code != exitOK {
		t.Fatalf("verify-release of the v1 twin: %d\n%s%s", code, out, stderr)
	}

	// The reference: 1.1.0 installed from its archive.
	ref := w.home(t)
	if code, _, stderr := piship(t, ref, "install", w.archives["1.1.0"]); code != exitOK {
		t.Fatalf("install 1.1.0: %s", stderr)
	}
	want := tree(t, filepath.Join(ref["PISHIP_INSTALL_HOME"], "apps", "hello", "1.1.0"))

	t.Run("delta", func(t *testing.T) {
		env := w.home(t)
		code, out, stderr := piship(t, env, "update", "hello", "--from", w.repo, "--check")
		if code != exitOK || !strings.Contains(out, "delta from 1.0.0") {
			t.Fatalf("update --check: %d\n%s%s", code, out, stderr)
		}
		var doc struct {
			Download struct {
				Kind  string `json:"kind"`
				Bytes int64  `json:"bytes"`
			} `json:"download"`
			Bytes int64 `json:"bytes"`
		}
		code, out, stderr = piship(t, env, "update", "hello", "--from", w.repo, "--json")
		if code != exitOK || json.Unmarshal([]byte(out), &doc) != nil || doc.Download.Kind != "delta" || doc.Download.Bytes <= 0 || doc.Download.Bytes*2 > doc.Bytes {
			t.Fatalf("update --json: %d %+v\n%s%s", code, doc, out, stderr)
		}
		sameTree(t, "built from the delta", tree(t, filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.1.0")), want)
		if code, out, stderr := piship(t, env, "doctor", "hello"); code != exitOK || !strings.Contains(out, "hello: verified, nothing to repair") {
			t.Fatalf("doctor after the delta update: %d\n%s%s", code, out, stderr)
		}
	})

	// One byte changed in a file the delta patches, and in one it keeps:
	// each installed file is hashed as the delta reads it.
	for _, changed := range []string{"resources/motd.txt", "tools/hello-info"} {
		t.Run("changed-tree-falls-back/"+changed, func(t *testing.T) {
			env := w.home(t)
			p := filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.0.0", "payload", filepath.FromSlash(changed))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[0] ^= 1 // one byte, same size
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			code, out, stderr := cliTraced(t, []sdktrace.SpanProcessor{rec}, env, "update", "hello", "--from", w.repo)
			if code != exitOK || strings.Count(stderr+out, "downloading the full archive") != 1 ||
				!strings.Contains(stderr+out, "delta refused at \"payload/"+changed+"\" (base)") {
				t.Fatalf("update from a changed tree: %d\n%s%s", code, out, stderr)
			}
			events := 0
			for _, s := range rec.Ended() {
				for _, e := range s.Events() {
					if e.Name == home.DeltaFallbackEvent {
						events++
					}
				}
			}
			if events != 1 {
				t.Fatalf("%d %q span events, want 1", events, home.DeltaFallbackEvent)
			}
			sameTree(t, "installed from the archive after the fallback", tree(t, filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.1.0")), want)
		})
	}

	t.Run("tampered-delta-refused", func(t *testing.T) {
		dir := filepath.Join(w.root, "repo-tampered")
		if err := copyTree(w.repo, dir); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "targets", "stable", filepath.Base(deltaTarget[0]))
		b, _ := os.ReadFile(p)
		b[len(b)/2] ^= 0xff
		os.WriteFile(p, b, 0o644)
		env := w.home(t)
		code, out, stderr := piship(t, env, "update", "hello", "--from", dir)
		if code != exitOK || !strings.Contains(stderr+out, "hash verification failed") || !strings.Contains(stderr+out, "downloading the full archive") {
			t.Fatalf("update with a tampered delta: %d\n%s%s", code, out, stderr)
		}
		if m, _ := filepath.Glob(filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", ".downloads", "*.delta*")); len(m) > 0 {
			t.Fatalf("the tampered delta reached the downloads: %v", m)
		}
		sameTree(t, "installed from the archive after the refused delta", tree(t, filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.1.0")), want)
	})
}
