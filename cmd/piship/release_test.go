package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/cmd/piship/internal/fixture"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release"
)

const helloRelease = "hello-1.0.0-linux-x64"

// hostTargetAddr is the address of a stage of the built-in release's
// target module for the host's target: module.target["linux-x64"].REST.
func hostTargetAddr(rest string) string {
	return fmt.Sprintf("module.target[%q].%s", platform.HostTarget(), rest)
}

func mustRelease(t testing.TB, env map[string]string, args ...string) string {
	t.Helper()
	code, _, stderr := piship(t, env, append([]string{"release"}, args...)...)
	if code != exitOK {
		t.Fatalf("release %v: exit %d\n%s", args, code, stderr)
	}
	return stderr
}

func TestReleaseHelloAndVerify(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	stderr := mustRelease(t, env, dir)
	if !strings.Contains(stderr, "runtime cache: miss") {
		t.Fatalf("no runtime cache line:\n%s", stderr)
	}
	releases := filepath.Join(dir, "dist", "releases")
	for _, f := range []string{helloRelease + ".tar.zst", helloRelease + ".tar.zst.sha256", helloRelease + ".build-info.json",
		helloRelease + "/release.json", helloRelease + "/sbom.spdx.json", helloRelease + "/licenses/THIRD_PARTY_NOTICES.txt",
		helloRelease + "/licenses/index.json", helloRelease + "/vulnerabilities.json", helloRelease + "/checksums.txt",
		helloRelease + "/install.sh", helloRelease + "/payload/bin/hello"} {
		if _, err := os.Stat(filepath.Join(releases, f)); err != nil {
			t.Errorf("release lacks %s", f)
		}
	}
	checkHelloSBOM(t, filepath.Join(releases, helloRelease, "sbom.spdx.json"))
	archive := filepath.Join(releases, helloRelease+".tar.zst")
	side, _ := os.ReadFile(archive + ".sha256")
	sum := strings.Fields(string(side))[0]
	for _, args := range [][]string{{archive}, {archive, "--sha256", sum}, {filepath.Join(releases, helloRelease)}} {
		code, stdout, stderr := piship(t, env, append([]string{"verify-release"}, args...)...)
		if code != exitOK {
			t.Fatalf("verify-release %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	if code, _, stderr := piship(t, env, "verify-release", archive, "--sha256", strings.Repeat("0", 64)); code != exitFailed ||
		!strings.Contains(stderr, "check archive-digest failed") {
		t.Fatalf("wrong --sha256 accepted: %d %s", code, stderr)
	}
	// A second release is served by the runtime and bundle caches.
	if stderr := mustRelease(t, env, dir); !strings.Contains(stderr, "runtime cache: hit (entry ") || !strings.Contains(stderr, "bundle hit)") {
		t.Fatalf("warm release:\n%s", stderr)
	}
	// An unqualified build is refused.
	mustBuild(t, env, dir)
	code, stdout, _ := piship(t, env, "verify-release", filepath.Join(dir, "dist", "hello"))
	if code != exitFailed || !strings.Contains(stdout, "unqualified local build") {
		t.Fatalf("verify-release of a build: %d\n%s", code, stdout)
	}
}

// checkHelloSBOM: the hello release's SBOM lists the pinned tool with the
// lock's digest, and its creator names piship with a version.
func checkHelloSBOM(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		CreationInfo struct {
			Creators []string `json:"creators"`
		} `json:"creationInfo"`
		Packages []struct {
			SPDXID    string `json:"SPDXID"`
			Checksums []struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"checksumValue"`
			} `json:"checksums"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.CreationInfo.Creators) != 1 || !strings.HasPrefix(doc.CreationInfo.Creators[0], "Tool: piship-") {
		t.Errorf("creators = %q, want Tool: piship-<version>", doc.CreationInfo.Creators)
	}
	const helloInfo = "29795ab72a86b8d4d72350499f26c696e02e6e899752e77c70ccf18dbcddc379"
	var found bool
	for _, p := range doc.Packages {
		if p.SPDXID == "SPDXRef-Tool-hello-info" {
			found = len(p.Checksums) == 1 && p.Checksums[0].Algorithm == "SHA256" && p.Checksums[0].Value == helloInfo
		}
	}
	if !found {
		t.Errorf("the SBOM lacks the tool hello-info with sha256 %s:\n%s", helloInfo, raw)
	}
}

// Cold and warm releases, from different directories, time zones and
// locales, give byte-identical archives, release.json and checksums.txt.
func TestReleaseIsReproducible(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cacheHome := filepath.Join(t.TempDir(), "cache")
	runRelease := func(noCache bool, tz, locale string) string {
		dir := copyDist(t, "hello") // a different path each time
		cmd := exec.Command(exe, "release", dir)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "PISHIP_TEST_MAIN=1", "PISHIP_CACHE_HOME="+cacheHome, "PISHIP_PROGRESS=0",
			"TZ="+tz, "LC_ALL="+locale, "LANG="+locale)
		if noCache {
			cmd.Env = append(cmd.Env, "PISHIP_RELEASE_NO_CACHE=1")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("release: %v\n%s", err, out)
		}
		return filepath.Join(dir, "dist", "releases")
	}
	warmup := runRelease(false, "UTC", "C")
	warm := runRelease(false, "America/Los_Angeles", "de_DE.UTF-8")
	cold := runRelease(true, "Asia/Tokyo", "ja_JP.UTF-8")
	for _, f := range []string{helloRelease + ".tar.zst", helloRelease + ".tar.zst.sha256", helloRelease + "/release.json", helloRelease + "/checksums.txt"} {
		a, _ := os.ReadFile(filepath.Join(warm, f))
		b, _ := os.ReadFile(filepath.Join(cold, f))
		c, _ := os.ReadFile(filepath.Join(warmup, f))
		if len(a) == 0 || !bytes.Equal(a, b) || !bytes.Equal(a, c) {
			t.Errorf("%s differs between cold and warm releases", f)
		}
	}
	var bi release.BuildInfo
	if err := readJSONFile(filepath.Join(cold, helloRelease+".build-info.json"), &bi); err != nil || !strings.HasPrefix(bi.RuntimeCache, "off") {
		t.Fatalf("cold build-info %+v %v", bi, err)
	}
}

// A failing audit stops the release after every started stage finished and
// publishes nothing; with several failing verdicts the reported one follows
// the fixed order (signatures, tests, vulnerabilities, package audits).
func TestFailingVerdictsStopTheRelease(t *testing.T) {
	advisory := `{"schema_version":"1.6.0","id":"HELLO-TEST-9999","modified":"2026-01-01T00:00:00Z",
"summary":"test advisory against the locked hello-format","affected":[{"package":{"ecosystem":"npm","name":"hello-format"},
"ranges":[{"type":"SEMVER","events":[{"introduced":"1.0.0"},{"fixed":"1.3.0"}]}]}],"database_specific":{"severity":"HIGH"}}`
	breakSmoke := func(t *testing.T, dir string) {
		p := filepath.Join(dir, "distribution.hcl")
		b, _ := os.ReadFile(p)
		os.WriteFile(p, bytes.Replace(b, []byte(`expect = "Usage: hello"`), []byte(`expect = "Usage: goodbye"`), 1), 0o644)
	}
	for _, tc := range []struct {
		name      string
		smoke     bool
		wantStage string
		wantText  string
	}{
		{"audit", false, hostTargetAddr("module.qualify.stage.audit"), "HELLO-TEST-9999"},
		{"audit and tests", true, hostTargetAddr("module.qualify.stage.tests"), "smoke test help failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := buildEnv(t)
			dir := copyDist(t, "hello")
			if err := os.WriteFile(filepath.Join(dir, "osv", "HELLO-TEST-9999.json"), []byte(advisory), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.smoke {
				breakSmoke(t, dir)
			}
			if code, _, stderr := piship(t, env, "lock", dir); code != exitOK {
				t.Fatal(stderr)
			}
			code, _, stderr := piship(t, env, "release", dir)
			if code != exitFailed {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "release: stage "+tc.wantStage+" failed: ") || !strings.Contains(last, tc.wantText) {
				t.Fatalf("last line %q, want stage %s and %q\n%s", last, tc.wantStage, tc.wantText, stderr)
			}
			// Every started stage finished.
			started, finished := strings.Count(stderr, ": started\n"), 0
			for _, verb := range []string{": DONE ", ": CACHED ", ": FAILED ", ": CANCELLED "} {
				finished += strings.Count(stderr, verb)
			}
			if started != finished || started == 0 {
				t.Fatalf("%d stages started, %d ended\n%s", started, finished, stderr)
			}
			out := filepath.Join(dir, "dist")
			entries, _ := os.ReadDir(out)
			for _, e := range entries {
				if e.Name() == "releases" || strings.HasPrefix(e.Name(), ".staging-") {
					t.Fatalf("failed release left %s", e.Name())
				}
			}
		})
	}
}

func TestVerifyReleaseCatchesTampering(t *testing.T) {
	env := buildEnv(t)
	dir := copyDist(t, "hello")
	mustRelease(t, env, dir)
	releases := filepath.Join(dir, "dist", "releases")
	for _, tc := range []struct {
		name   string
		check  string
		tamper func(t *testing.T, rel string) string // returns what to verify
	}{
		{"payload byte changed", "payload-inventory", func(t *testing.T, rel string) string {
			p := filepath.Join(rel, "payload", "resources", "motd.txt")
			b, _ := os.ReadFile(p)
			b[0] ^= 1
			os.WriteFile(p, b, 0o644)
			return rel
		}},
		{"file added", "payload-inventory", func(t *testing.T, rel string) string {
			os.WriteFile(filepath.Join(rel, "payload", "resources", "extra.txt"), []byte("x"), 0o644)
			return rel
		}},
		{"file removed", "payload-inventory", func(t *testing.T, rel string) string {
			os.Remove(filepath.Join(rel, "payload", "tools", "hello-info"))
			return rel
		}},
		{"checksums edited", "checksums", func(t *testing.T, rel string) string {
			p := filepath.Join(rel, "checksums.txt")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("0"), []byte("1"), 1), 0o644)
			return rel
		}},
		{"release.json edited", "checksums", func(t *testing.T, rel string) string {
			p := filepath.Join(rel, "release.json")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"channel": "stable"`), []byte(`"channel": "beta"`), 1), 0o644)
			return rel
		}},
		{"archive truncated", "archive-extract", func(t *testing.T, rel string) string {
			src := rel + ".tar.zst"
			b, _ := os.ReadFile(src)
			dst := filepath.Join(t.TempDir(), helloRelease+".tar.zst")
			os.WriteFile(dst, b[:len(b)*2/3], 0o644)
			return dst
		}},
		{"sbom package removed", "sbom-matches-payload", func(t *testing.T, rel string) string {
			p := filepath.Join(rel, "sbom.spdx.json")
			var doc map[string]any
			if err := readJSONFile(p, &doc); err != nil {
				t.Fatal(err)
			}
			pkgs := doc["packages"].([]any)
			for i, p := range pkgs {
				if p.(map[string]any)["name"] == "hello-format" {
					doc["packages"] = append(pkgs[:i:i], pkgs[i+1:]...)
					break
				}
			}
			writeJSONFile(t, p, doc)
			return rel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := filepath.Join(t.TempDir(), helloRelease)
			if err := copyTree(filepath.Join(releases, helloRelease), rel); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(releases, helloRelease+".tar.zst"))
			os.WriteFile(rel+".tar.zst", b, 0o644)
			target := tc.tamper(t, rel)
			code, stdout, stderr := piship(t, env, "verify-release", target)
			if code != exitFailed {
				t.Fatalf("tampering not caught: exit %d\n%s%s", code, stdout, stderr)
			}
			if !strings.Contains(stdout, "FAIL "+tc.check) {
				t.Fatalf("check %s did not fail:\n%s%s", tc.check, stdout, stderr)
			}
		})
	}
}

func copyTree(src, dst string) error { return fixture.CopyTree(src, dst, nil) }

func readJSONFile(path string, v any) error { return canon.ReadJSON(path, v) }

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
