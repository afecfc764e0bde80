package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/engine"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/tuf"
)

// docSchemas reads docs/json.md: the example of every `## piship-.../v1`
// section, by schema, and the error example of `## Errors`.
func docSchemas(t *testing.T) (map[string]any, any) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := regexp.MustCompile("(?ms)^## (\\S+)\\s*$(.*?)^```json\\n(.*?)^```").FindAllStringSubmatch(string(src), -1)
	docs := map[string]any{}
	var errDoc any
	for _, s := range sections {
		var v any
		if err := json.Unmarshal([]byte(s[3]), &v); err != nil {
			t.Fatalf("docs/json.md: the example of %s is not JSON: %v", s[1], err)
		}
		if s[1] == "Errors" {
			errDoc = v
			continue
		}
		if got, _ := v.(map[string]any)["schema"]; got != s[1] {
			t.Errorf("docs/json.md: the example under %s has schema %v", s[1], got)
		}
		docs[s[1]] = v
	}
	if errDoc == nil || len(docs) < 13 {
		t.Fatalf("docs/json.md: %d schema examples and error example %v", len(docs), errDoc)
	}
	return docs, errDoc
}

// jsonType is the JSON type of v.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// sameShape reports every difference between the shapes of want (the
// documented example) and got at path: keys missing on either side, other
// JSON types; arrays by their first element when both have one.
func sameShape(path string, want, got any) []string {
	if jsonType(want) != jsonType(got) {
		return []string{fmt.Sprintf("%s: documented %s, printed %s", path, jsonType(want), jsonType(got))}
	}
	var diffs []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		var keys []string
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: printed but not documented", path, k))
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, ok := g[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: documented but not printed", path, k))
				continue
			}
			diffs = append(diffs, sameShape(path+"."+k, w[k], g[k])...)
		}
	case []any:
		if g := got.([]any); len(w) > 0 && len(g) > 0 {
			diffs = append(diffs, sameShape(path+"[0]", w[0], g[0])...)
		}
	}
	return diffs
}

// checkDoc runs piship args, which must exit want and print one JSON
// document on stdout of schema's documented shape (doc), or, when doc is
// the error example, of the error form with that schema.
func checkDoc(t *testing.T, env map[string]string, schema string, doc any, want int, args ...string) map[string]any {
	t.Helper()
	code, stdout, stderr := piship(t, env, args...)
	if code != want {
		t.Errorf("piship %s: exit %d, want %d\n%s", strings.Join(args, " "), code, want, stderr)
	}
	var got any
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Errorf("piship %s: stdout is not one JSON document (%v):\n%s", strings.Join(args, " "), err, stdout)
		return nil
	}
	if arr, ok := got.([]any); ok && schema == "piship-doctor/v1" && len(arr) > 0 {
		got = arr[0] // doctor without ID: an array of reports
	}
	m, _ := got.(map[string]any)
	if m["schema"] != schema {
		t.Errorf("piship %s: schema %v, want %s", strings.Join(args, " "), m["schema"], schema)
	}
	errDoc, _ := doc.(map[string]any)
	if _, isErr := errDoc["error"]; isErr {
		errDoc = map[string]any{"schema": schema, "error": errDoc["error"]}
		doc = errDoc
		if e, _ := m["error"].(map[string]any); !regexp.MustCompile(`^[A-Z][A-Z0-9]*_[A-Z0-9_]+$`).MatchString(fmt.Sprint(e["code"])) ||
			e["message"] == "" {
			t.Errorf("piship %s: no error code and message: %v", strings.Join(args, " "), m["error"])
		}
	}
	for _, d := range sameShape(schema, doc, got) {
		t.Errorf("piship %s: %s", strings.Join(args, " "), d)
	}
	return m
}

// hasRoles reports whether a doctor report lists n roles under tuf.roles.
func hasRoles(d map[string]any, n int) bool {
	tufm, _ := d["tuf"].(map[string]any)
	roles, _ := tufm["roles"].([]any)
	return len(roles) == n
}

// Every --json output has the shape docs/json.md documents for its schema,
// and every failure prints the error document with a code: one hello
// distribution in two versions, released, signed into a channel, installed,
// updated, rolled back, doctored and uninstalled.
func TestJSONMatchesDocs(t *testing.T) {
	docs, errDoc := docSchemas(t)
	root := t.TempDir()
	env := buildEnv(t)
	for k, v := range map[string]string{"PISHIP_INSTALL_HOME": filepath.Join(root, "i"), "PISHIP_BIN_HOME": filepath.Join(root, "b"),
		"PISHIP_STATE_HOME": filepath.Join(root, "s"), "PISHIP_STORE": "hardlink"} {
		env[k] = v
	}
	seen := map[string]bool{}
	ok := func(schema string, want int, args ...string) map[string]any {
		seen[schema] = true
		return checkDoc(t, env, schema, docs[schema], want, append(args, "--json")...)
	}
	failure := func(schema string, want int, args ...string) {
		checkDoc(t, env, schema, errDoc, want, append(args, "--json")...)
	}
	missing := filepath.Join(root, "missing")

	// The commands that need no distribution.
	ok("piship-version/v1", exitOK, "version")
	ok("piship-stages/v1", exitOK, "stages")
	ok("piship-stages/v1", exitOK, "stages", "exec")
	ok("piship-pipelines/v1", exitOK, "pipelines")
	failure("piship-pipelines/v1", exitUsage, "pipelines", "lsit")
	failure("piship-stages/v1", exitUsage, "stages", "exce")
	failure("piship-stages/v1", exitUsage, "stages", "distribution")
	ok("piship-graph/v1", exitOK, "graph", "build")
	failure("piship-graph/v1", exitUsage, "graph", missing+".hcl")
	failure("piship/v1", exitUsage, "relase")

	// Two versions of hello that pin one TUF repository's root (one key
	// for every role), released.
	key := filepath.Join(root, "release.pem")
	if code, out, stderr := piship(t, env, "keygen", key, "--id", "k1"); code != exitOK {
		t.Fatalf("keygen: %d %s%s", code, out, stderr)
	}
	repoDir := filepath.Join(root, "repo")
	code, out, stderr := piship(t, env, "repo", "init", repoDir, "--key", "root="+key, "--key", "targets="+key, "--key", "snapshot="+key, "--key", "timestamp="+key)
	pin := regexp.MustCompile(`root 1 sha256:([0-9a-f]{64})`).FindStringSubmatch(out)
	if code != exitOK || pin == nil {
		t.Fatalf("repo init: %d %s%s", code, out, stderr)
	}
	archives := map[string]string{}
	var dist1 string
	for _, v := range []string{"1.0.0", "1.0.1"} {
		dir := copyDist(t, "hello")
		p := filepath.Join(dir, "distribution.hcl")
		hcl, _ := os.ReadFile(p)
		writeFile(t, dir, "distribution.hcl", fixture.WithUpdates(string(hcl), v, "https://updates.example.invalid/hello/", "sha256:"+pin[1]))
		if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
			t.Fatalf("lock: %s", stderr)
		}
		if v == "1.0.0" {
			dist1 = dir
			ok("piship-validate/v1", exitOK, "validate", dir)
			ok("piship-build/v1", exitOK, "build", dir)
			// build --plan: the built-in build's stages wait on what its
			// inputs stage reads from distribution.hcl.
			if p := ok("piship-plan/v1", exitOK, "build", dir, "--plan"); p != nil {
				st, _ := p["stages"].([]any)
				first, _ := func() (map[string]any, bool) {
					if len(st) < 2 {
						return nil, false
					}
					m, ok := st[1].(map[string]any)
					return m, ok
				}()
				if p["pipeline"] != "build" || first["address"] != "module.payload.stage.runtime" || first["action"] != "decided after" || fmt.Sprint(first["after"]) != "[inputs]" {
					t.Errorf("build --plan --json: %v", p)
				}
			}
			ok("piship-plan/v1", exitOK, "release", dir, "--plan")
			ok("piship-explain/v1", exitOK, "explain", "--pipeline", "build")
		}
		r := ok("piship-release/v2", exitOK, "release", dir)
		if ts, _ := r["targets"].([]any); len(ts) == 1 {
			archives[v], _ = ts[0].(map[string]any)["archive"].(string)
		}
	}
	// The budgets of the 1.0.0 release: recorded, then checked.
	if b := ok("piship-budgets-check/v1", exitOK, "budgets", "check", dist1, "--record"); b["recorded"] != true || b["version"] != "1.0.0" {
		t.Errorf("budgets check --record --json: %v", b)
	}
	if b := ok("piship-budgets-check/v1", exitOK, "budgets", "check", dist1); b["ok"] != true || b["recorded"] != false {
		t.Errorf("budgets check --json: %v", b)
	}
	failure("piship-budgets-check/v1", exitUsage, "budgets", "check", missing)
	failure("piship-validate/v1", exitUsage, "validate", missing)
	// An invalid file is the document with its diagnostics (issue 29 point 4).
	bad := filepath.Join(root, "bad.hcl")
	writeFile(t, root, "bad.hcl", "pipeline \"p\" {\n  stage \"exec\" \"x\" {\n    command = [\"true\"]\n    cahce   = true\n  }\n}\n")
	if v := ok("piship-validate/v1", exitUsage, "validate", bad); v != nil {
		ds, _ := v["diagnostics"].([]any)
		d0, _ := func() (map[string]any, bool) {
			if len(ds) == 0 {
				return nil, false
			}
			m, ok := ds[0].(map[string]any)
			return m, ok
		}()
		rng, _ := d0["range"].(map[string]any)
		start, _ := rng["start"].(map[string]any)
		if v["ok"] != false || v["errorCount"] != 1.0 || len(ds) != 1 || d0["file"] != bad || d0["suggestion"] != "cache" ||
			d0["severity"] != "error" || start["line"] != 4.0 || start["column"] != 5.0 || start["byte"] != 63.0 {
			t.Errorf("validate --json of an invalid file: %v", v)
		}
	}
	failure("piship-build/v1", exitUsage, "build", missing)
	failure("piship-plan/v1", exitUsage, "build", missing, "--plan")
	failure("piship-explain/v1", exitUsage, "explain", "--file", missing+".hcl")
	failure("piship-release/v2", exitUsage, "release", missing)

	vr := ok("piship-verify-release/v1", exitOK, "verify-release", archives["1.0.0"])
	if s, _ := json.Marshal(vr); regexp.MustCompile(`piship-verify-[0-9]`).Match(s) || vr["source"] != archives["1.0.0"] {
		t.Errorf("verify-release --json names a temporary path or not the source:\n%s", s)
	}
	failure("piship-verify-release/v1", exitUsage, "verify-release", missing)
	// A failed check is the report with ok false, exit 1.
	if vr := ok("piship-verify-release/v1", exitFailed, "verify-release", filepath.Join(dist1, "dist", "hello")); vr["ok"] != false {
		t.Errorf("verify-release of a build: %v", vr)
	}
	// publish, to an in-process registry (go-containerregistry's); a
	// reference that is not oci://, and a registry that is down.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	to := "oci://" + strings.TrimPrefix(reg.URL, "http://") + "/acme/hello"
	if p := ok("piship-publish/v1", exitOK, "publish", filepath.Dir(archives["1.0.0"]), "--to", to); p != nil {
		ts, _ := p["targets"].([]any)
		if len(ts) != 1 || !strings.HasPrefix(fmt.Sprint(ts[0].(map[string]any)["archiveBlob"]), reg.URL+"/v2/acme/hello/blobs/sha256:") || p["version"] != "1.0.0" {
			t.Errorf("publish --json: %v", p)
		}
	}
	failure("piship-publish/v1", exitUsage, "publish", filepath.Dir(archives["1.0.0"]), "--to", "ghcr.io/acme/hello")
	failure("piship-publish/v1", exitFailed, "publish", filepath.Dir(archives["1.0.0"]), "--to", "oci://127.0.0.1:1/acme/hello")

	// The same two releases in the TUF repository.
	if code, _, stderr := piship(t, env, "repo", "add", repoDir, archives["1.0.0"], archives["1.0.1"], "--key", key); code != exitOK {
		t.Fatalf("repo add: %s", stderr)
	}
	if st := ok("piship-repo-status/v1", exitOK, "repo", "status", repoDir); st["dir"] != repoDir {
		t.Errorf("repo status --json: %v", st)
	}
	failure("piship-repo-status/v1", exitUsage, "repo", "status", missing)

	chanDir := repoDir
	ok("piship-install/v1", exitOK, "install", archives["1.0.0"])
	failure("piship-install/v1", exitUsage, "install", missing)
	failure("piship-rollback/v1", exitFailed, "rollback", "hello") // no previous release yet
	if u := ok("piship-update/v1", exitOK, "update", "hello", "--check", "--from", chanDir); u["available"] != true || u["check"] != true {
		t.Errorf("update --check --json: %v", u)
	}
	if u := ok("piship-update/v1", exitOK, "update", "hello", "--from", chanDir); u["updated"] != true || u["version"] != "1.0.1" {
		t.Errorf("update --json: %v", u)
	}
	failure("piship-update/v1", exitFailed, "update", "nothere")
	failure("piship-update/v1", exitUsage, "update", "hello", "--timeout", "soon")
	if r := ok("piship-rollback/v1", exitOK, "rollback", "hello"); r["active"] != "1.0.0" || r["from"] != "1.0.1" {
		t.Errorf("rollback --json: %v", r)
	}
	// The trusted TUF metadata an update from that repository keeps in
	// trust/hello/ (tuf.Update, until piship update runs it): doctor lists
	// every role with its version and expiry, for people and in JSON.
	trustDir := receipt.TrustDir(env["PISHIP_INSTALL_HOME"], "hello")
	repo, err := tuf.Open(repoDir)
	if err != nil || len(repo.Status().Releases) == 0 {
		t.Fatalf("repo %s: %v", repoDir, err)
	}
	pubd := repo.Status().Releases[0]
	rootJSON, err := repo.RootBytes(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tuf.Update(context.Background(), tuf.UpdateOptions{Repository: repoDir, TrustDir: trustDir, InitialRoot: rootJSON,
		ExpectRootSHA256: tuf.RootSHA256(rootJSON), Channel: pubd.Channel, Target: pubd.For(), DownloadDir: filepath.Join(t.TempDir(), "downloads")}); err != nil {
		t.Fatal(err)
	}
	if d := ok("piship-doctor/v1", exitOK, "doctor", "hello"); !hasRoles(d, 4) || fmt.Sprint(d["warnings"]) != "[]" {
		t.Errorf("doctor --json with trust/hello/: tuf %v, warnings %v", d["tuf"], d["warnings"])
	}
	if code, out, stderr := piship(t, env, "doctor", "hello"); code != exitOK ||
		!regexp.MustCompile(`(?m)^  tuf trust: \S+trust/hello: root 1 \(expires [0-9T:Z-]+\), timestamp 2 \(expires [0-9T:Z-]+\), snapshot 2 \(expires [0-9T:Z-]+\), targets 2 \(expires [0-9T:Z-]+\)$`).MatchString(out) {
		t.Errorf("doctor hello with trust/hello/: exit %d\n%s%s", code, out, stderr)
	}
	ok("piship-doctor/v1", exitOK, "doctor")
	failure("piship-doctor/v1", exitFailed, "doctor", "nothere")
	// A damaged file of the active 1.0.0, repaired from its archive.
	motd := filepath.Join(env["PISHIP_INSTALL_HOME"], "apps", "hello", "1.0.0", "payload", "resources", "motd.txt")
	if err := os.WriteFile(motd, []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ok("piship-repair/v1", exitOK, "repair", "hello", "--from", archives["1.0.0"]); fmt.Sprint(r["restored"]) != "[payload/resources/motd.txt]" || r["source"] != archives["1.0.0"] || r["version"] != "1.0.0" {
		t.Errorf("repair --json: %v", r)
	}
	failure("piship-repair/v1", exitFailed, "repair", "nothere")
	failure("piship-repair/v1", exitUsage, "repair", "hello", "--from", missing)
	ok("piship-cache-prune/v1", exitOK, "cache", "prune")
	failure("piship-cache-prune/v1", exitUsage, "cache", "prune", "--max-size", "lots")
	ok("piship-uninstall/v1", exitOK, "uninstall", "hello")
	if _, err := os.Lstat(trustDir); err == nil {
		t.Errorf("uninstall left %s behind", trustDir)
	}
	failure("piship-uninstall/v1", exitFailed, "uninstall", "hello")

	for schema := range docs {
		// The progress stream is on stderr: TestProgressJSONMatchesDocs.
		if !seen[schema] && schema != engine.ProgressSchema {
			t.Errorf("docs/json.md documents %s, which no command was checked against", schema)
		}
	}
}
