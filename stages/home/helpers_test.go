package home

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/platform"
)

// cliJS prints its arguments as JSON and exits with the code in EXIT_CODE.
const cliJS = `console.log(JSON.stringify(process.argv.slice(2)));
process.exitCode = Number(process.env.EXIT_CODE || 0);
`

type relSpec struct {
	id, version, command string
	verifyAtLaunch       bool
	extra                map[string]string // more payload files
}

func spec(version string) relSpec { return relSpec{id: "hello", version: version, command: "hello"} }

func (s relSpec) name() string {
	return fmt.Sprintf("%s-%s-%s", s.id, s.version, platform.HostTarget())
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// makePayload writes a payload directory like the build's: the entry,
// bin/<command>, metadata/target.json, piship.lock and the inventory.
func makePayload(t *testing.T, dir string, s relSpec) {
	t.Helper()
	plat, arch, _ := strings.Cut(platform.HostTarget(), "-")
	writeFile(t, filepath.Join(dir, "node_modules", "x", "cli.js"), cliJS, 0o644)
	writeFile(t, filepath.Join(dir, "node_modules", "x", "package.json"), `{"name":"x","version":"1.0.0"}`+"\n", 0o644)
	writeFile(t, filepath.Join(dir, "package-lock.json"), `{"name":"hello","version":"1.0.0","lockfileVersion":3,"packages":{`+
		`"":{"name":"hello","version":"1.0.0"},"node_modules/x":{"version":"1.0.0"}}}`+"\n", 0o644)
	writeFile(t, filepath.Join(dir, "bin", s.command), "#!/bin/sh\nexec node \"$(dirname \"$0\")/../node_modules/x/cli.js\" \"$@\"\n", 0o755)
	target, _ := canon.JSON(map[string]string{"platform": plat, "arch": arch})
	writeFile(t, filepath.Join(dir, "metadata", "target.json"), string(target), 0o644)
	l := &distribution.Lock{Schema: distribution.LockSchema,
		Distribution:   distribution.LockDistribution{ID: s.id, Name: "Hello", Version: s.version, Command: s.command},
		Runtime:        distribution.LockRuntime{Dir: "runtime", Entry: "node_modules/x/cli.js"},
		VerifyAtLaunch: s.verifyAtLaunch,
	}
	writeFile(t, filepath.Join(dir, "piship.lock"), string(l.Marshal()), 0o644)
	for p, data := range s.extra {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(p)), data, 0o644)
	}
	inv, _, err := payload.Inventory(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := canon.JSON(inv)
	writeFile(t, filepath.Join(dir, "metadata", "inventory.json"), string(data), 0o644)
}

// sbomJSON is the SBOM of makeRelease: the distribution and its one package.
const sbomJSON = `{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","documentDescribes":["SPDXRef-hello"],"packages":[` +
	`{"SPDXID":"SPDXRef-hello","name":"hello","versionInfo":"1.0.0"},{"SPDXID":"SPDXRef-x","name":"x","versionInfo":"1.0.0"}]}` + "\n"

// vulnerabilitiesJSON is the audit of a release whose one package has
// no advisory, under the default policy.
const vulnerabilitiesJSON = `{"schema":"piship-vulnerabilities/v1","failOn":"high","verdict":"passed","allowUnavailable":false,` +
	`"sources":[{"name":"npm","verdict":"passed"}],"packages":1,"counts":{"low":0,"moderate":0,"high":0,"critical":0},"findings":[]}` + "\n"

// makeRelease writes <root>/<name>/ (payload/, release.json, sbom,
// notices, vulnerabilities.json, checksums.txt) and returns its path.
func makeRelease(t *testing.T, root string, s relSpec) string {
	t.Helper()
	dir := filepath.Join(root, s.name())
	makePayload(t, filepath.Join(dir, "payload"), s)
	writeFile(t, filepath.Join(dir, "sbom.spdx.json"), sbomJSON, 0o644)
	writeFile(t, filepath.Join(dir, "install.sh"), "#!/bin/sh\nexec piship install \"$(dirname \"$0\")\"\n", 0o755)
	writeFile(t, filepath.Join(dir, "licenses", "THIRD_PARTY_NOTICES.txt"), "x@1.0.0\nLicense: MIT\n", 0o644)
	writeFile(t, filepath.Join(dir, "licenses", "index.json"), `{"packages":[{"name":"x","version":"1.0.0"}]}`+"\n", 0o644)
	writeFile(t, filepath.Join(dir, "vulnerabilities.json"), vulnerabilitiesJSON, 0o644)
	inv, _ := os.ReadFile(filepath.Join(dir, "payload", "metadata", "inventory.json"))
	var invMap map[string]string
	if err := json.Unmarshal(inv, &invMap); err != nil {
		t.Fatal(err)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "payload", "piship.lock"))
	rel := map[string]any{
		"schema":       ReleaseSchema,
		"distribution": map[string]string{"id": s.id, "name": "Hello", "version": s.version, "command": s.command},
		"lockSha256":   sum(lock), "target": platform.HostTarget(), "channel": "stable",
		"created": "1970-01-01T00:00:00Z", "qualification": "qualified",
		"payload":       map[string]any{"path": "payload", "inventorySha256": sum(inv), "files": len(invMap) + 1},
		"packageAudits": map[string]any{"verdict": "not-applicable", "locks": 0, "reason": "no vendored packages"},
		"sbom":          map[string]any{"path": "sbom.spdx.json", "sha256": sum([]byte(sbomJSON)), "packages": 1},
		"notices":       map[string]any{"path": "licenses/THIRD_PARTY_NOTICES.txt", "index": "licenses/index.json"},
		"vulnerabilities": map[string]any{"path": "vulnerabilities.json", "failOn": "high", "verdict": "passed",
			"counts": map[string]int{"low": 0, "moderate": 0, "high": 0, "critical": 0}},
		"signatures": map[string]any{"verdict": "passed"},
	}
	data, _ := canon.JSON(rel)
	writeFile(t, filepath.Join(dir, "release.json"), string(data), 0o644)
	writeChecksums(t, dir)
	return dir
}

func writeChecksums(t *testing.T, dir string) {
	t.Helper()
	files, err := payload.Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range files {
		if f.Path == "checksums.txt" || strings.HasPrefix(f.Path, "payload/") && f.Path != "payload/metadata/inventory.json" {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		lines = append(lines, sum(data)+"  "+f.Path) // sorted by path, as payload.Walk lists them
	}
	writeFile(t, filepath.Join(dir, "checksums.txt"), strings.Join(lines, "\n")+"\n", 0o644)
}

// makeArchive archives a release directory beside it, with its sidecar.
func makeArchive(t *testing.T, releaseDir string) (path, digest string) {
	t.Helper()
	path = releaseDir + archive.V2.Ext()
	res, err := archive.Create(context.Background(), path, releaseDir, archive.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path+".sha256", res.SHA256+"  "+filepath.Base(path)+"\n", 0o644)
	return path, res.SHA256
}

type env struct {
	t     *testing.T
	root  string
	src   string // where sources are built
	homes receipt.Homes
}

func newEnv(t *testing.T) *env {
	root := t.TempDir()
	e := &env{t: t, root: root, src: filepath.Join(root, "src"),
		homes: receipt.Homes{Install: filepath.Join(root, "install"), Bin: filepath.Join(root, "bin"), State: filepath.Join(root, "state")}}
	return e
}

func (e *env) opts() Options {
	return Options{Homes: e.homes, Launcher: "/opt/piship/bin/piship", GateWait: 2 * time.Second, LockWait: 2 * time.Second}
}

func (e *env) install(source string, mod ...func(*InstallOptions)) (*InstallResult, error) {
	o := InstallOptions{Options: e.opts(), Source: source, FreeSpace: func(string) (int64, error) { return 1 << 40, nil }}
	for _, m := range mod {
		m(&o)
	}
	return Install(context.Background(), o)
}

func (e *env) mustInstall(source string, mod ...func(*InstallOptions)) *InstallResult {
	e.t.Helper()
	res, err := e.install(source, mod...)
	if err != nil {
		e.t.Fatalf("install %s: %v", source, err)
	}
	return res
}

func (e *env) receipt() *receipt.Receipt {
	e.t.Helper()
	rc, err := receipt.Read(e.homes.Install, "hello")
	if err != nil {
		e.t.Fatal(err)
	}
	return rc
}

func (e *env) receiptBytes() string {
	data, _ := os.ReadFile(receipt.ReceiptPath(e.homes.Install, "hello"))
	return string(data)
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := receipt.CodeOf(err); got != code {
		t.Fatalf("err = %v (code %q), want %s", err, got, code)
	}
}
