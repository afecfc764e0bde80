package sbom

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/stages/distribution"
)

const helloRuntime = "../../testdata/distributions/hello/runtime"

// TestHelloMatchesNpm installs hello's runtime with npm (offline: its
// dependencies are committed tarballs) and checks that our SBOM documents
// the same packages as `npm sbom`. It needs node and npm, as the build
// does.
func TestHelloMatchesNpm(t *testing.T) {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH: piship's tests need node and npm (the release installs the runtime with npm)", tool)
		}
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(helloRuntime)); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"npm_config_cache="+t.TempDir(), "npm_config_offline=true", "npm_config_audit=false",
		"npm_config_fund=false", "npm_config_update_notifier=false", "npm_config_loglevel=error")
	npm(t, dir, env, "ci", "--offline", "--ignore-scripts", "--omit=dev")
	out := npm(t, dir, env, "sbom", "--sbom-format", "spdx", "--omit=dev")

	var theirs struct {
		DocumentDescribes []string `json:"documentDescribes"`
		Packages          []struct {
			SPDXID      string `json:"SPDXID"`
			Name        string `json:"name"`
			VersionInfo string `json:"versionInfo"`
			License     string `json:"licenseDeclared"`
			Checksums   []checksum
		} `json:"packages"`
	}
	if err := json.Unmarshal(out, &theirs); err != nil {
		t.Fatalf("npm sbom: %v\n%s", err, out)
	}
	// npm documents the runtime project itself (hello-runtime) too, as
	// the package its document DESCRIBES; ours describes the distribution.
	npmSet := map[string]string{}
	for _, p := range theirs.Packages {
		if slices.Contains(theirs.DocumentDescribes, p.SPDXID) {
			continue
		}
		npmSet[p.Name+"@"+p.VersionInfo] = p.License
	}

	lockBytes, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := distribution.ParsePackageLock(lockBytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lockBytes)
	in := Input{Name: "hello", Version: "1.0.0", Tree: dir, Lock: pl, LockSHA256: hex.EncodeToString(sum[:]), Created: time.Unix(0, 0)}
	before := snapshot(t, dir)
	b, s, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	var ours document
	if err := json.Unmarshal(b, &ours); err != nil {
		t.Fatal(err)
	}
	ourSet := map[string]string{}
	for _, p := range ours.Packages[1:] {
		ourSet[p.Name+"@"+p.VersionInfo] = p.LicenseDeclared
	}
	if len(ourSet) != 4 || s.Packages != 4 {
		t.Errorf("we document %d packages (summary %d), want hello's 4", len(ourSet), s.Packages)
	}
	if got, want := slices.Sorted(maps.Keys(ourSet)), slices.Sorted(maps.Keys(npmSet)); !slices.Equal(got, want) {
		t.Errorf("packages differ from npm sbom's:\nours %v\nnpm  %v", got, want)
	}
	for k, lic := range ourSet {
		if npmSet[k] != lic {
			t.Errorf("%s: license %q, npm says %q", k, lic, npmSet[k])
		}
	}

	text, _, ns, err := Notices(in)
	if err != nil {
		t.Fatal(err)
	}
	if ns != (NoticesSummary{Packages: 4, WithLicenseFile: 1, WithoutLicenseFile: 3}) {
		t.Errorf("notices summary %+v (hello-format alone has a LICENSE)", ns)
	}
	if !bytes.Contains(text, []byte("hello-format@1.2.0\nLicense: MIT\nPath: node_modules/hello-format\n")) {
		t.Errorf("notices lack hello-format:\n%s", text)
	}
	if after := snapshot(t, dir); after != before {
		t.Error("SPDX or Notices changed the tree")
	}
}

func npm(t *testing.T, dir string, env []string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("npm", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("npm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}
