package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/platform"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/release/vulnreport"
)

// ID and Command are the distribution every archive of the corpus is of.
const (
	ID      = "hello"
	Command = "hello"
)

// CLI is the payload's entry: it prints its version and arguments as JSON.
const CLI = `console.log(JSON.stringify({version: require("./package.json").version, args: process.argv.slice(2)}));
`

// Name is the release name of version: <id>-<version>-<host target>.
func Name(version string) string {
	return fmt.Sprintf("%s-%s-%s", ID, version, platform.HostTarget())
}

func write(path, data string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(data), mode)
}

func writeJSON(path string, v any) error {
	data, err := canon.JSON(v)
	if err != nil {
		return err
	}
	return write(path, string(data), 0o644)
}

// Release writes a valid release of version into <root>/<Name(version)>/,
// the shape piship release gives it (payload/ with its lock, target and
// inventory; release.json; the SBOM, the notices and vulnerabilities.json
// agreeing with the payload's package-lock.json; checksums.txt), and returns
// its path. Install and verify-release both accept it.
func Release(root, version string) (string, error) {
	dir := filepath.Join(root, Name(version))
	pay := filepath.Join(dir, "payload")
	plat, arch, _ := strings.Cut(platform.HostTarget(), "-")
	lock := &distribution.Lock{Schema: distribution.LockSchema,
		Distribution: distribution.LockDistribution{ID: ID, Name: "Hello", Version: version, Command: Command},
		Runtime:      distribution.LockRuntime{Dir: "runtime", Entry: "node_modules/x/cli.js"},
	}
	files := map[string]string{
		"node_modules/x/cli.js":       CLI,
		"node_modules/x/package.json": fmt.Sprintf(`{"name":"x","version":%q}`+"\n", version),
		"package-lock.json": `{"name":"hello","version":"1.0.0","lockfileVersion":3,"packages":{` +
			`"":{"name":"hello","version":"1.0.0"},"node_modules/x":{"version":"1.0.0"}}}` + "\n",
		"piship.lock": string(lock.Marshal()),
	}
	for p, data := range files {
		if err := write(filepath.Join(pay, filepath.FromSlash(p)), data, 0o644); err != nil {
			return "", err
		}
	}
	if err := write(filepath.Join(pay, "bin", Command), "#!/bin/sh\nexec node \"$(dirname \"$0\")/../node_modules/x/cli.js\" \"$@\"\n", 0o755); err != nil {
		return "", err
	}
	if err := writeJSON(filepath.Join(pay, "metadata", "target.json"), map[string]string{"platform": plat, "arch": arch}); err != nil {
		return "", err
	}
	sbom := map[string]any{
		"spdxVersion": "SPDX-2.3", "SPDXID": "SPDXRef-DOCUMENT", "documentDescribes": []string{"SPDXRef-hello"},
		"packages": []map[string]string{
			{"SPDXID": "SPDXRef-hello", "name": "hello", "versionInfo": version},
			{"SPDXID": "SPDXRef-x", "name": "x", "versionInfo": "1.0.0"},
		},
	}
	if err := writeJSON(filepath.Join(dir, release.SBOMName), sbom); err != nil {
		return "", err
	}
	for p, data := range map[string]string{
		release.NoticesName:         "x@1.0.0\nLicense: MIT\nPath: node_modules/x\n\nMIT License\n",
		release.NoticesIndexName:    `{"packages":[{"name":"x","version":"1.0.0"}],"withoutLicenseFile":[]}` + "\n",
		release.VulnerabilitiesName: string(passedAudit().Marshal()),
		release.InstallScriptName:   "#!/bin/sh\nexec piship install \"$(dirname \"$0\")\"\n",
	} {
		if err := write(filepath.Join(dir, filepath.FromSlash(p)), data, 0o644); err != nil {
			return "", err
		}
	}
	var rel releasejson.Metadata
	rel.Schema = releasejson.Schema
	rel.Distribution.ID, rel.Distribution.Name, rel.Distribution.Version, rel.Distribution.Command = ID, "Hello", version, Command
	rel.Tool.Name, rel.Tool.Version = "piship", "corpus"
	rel.Runtime.Package, rel.Runtime.Version = "hello", "1.0.0"
	rel.Target, rel.Channel, rel.Created, rel.Qualification = platform.HostTarget(), "stable", "1970-01-01T00:00:00Z", "qualified"
	rel.Payload.Path = "payload"
	rel.SBOM.Path, rel.SBOM.Packages = release.SBOMName, 1
	rel.Notices.Path, rel.Notices.Index = release.NoticesName, release.NoticesIndexName
	rel.Vulnerabilities.Path, rel.Vulnerabilities.Verdict = release.VulnerabilitiesName, "passed"
	rel.Vulnerabilities.FailOn, rel.Vulnerabilities.Counts = distribution.SeverityHigh, passedAudit().Counts
	rel.Tests = []releasejson.TestResult{{Name: "version", Result: "passed"}}
	rel.Signatures.Verdict = "passed"
	rel.PackageAudits = releasejson.PackageAudits{Verdict: releasejson.AuditNotApplicable, Reason: "the corpus vendors no packages"}
	if err := writeJSON(filepath.Join(dir, releasejson.Name), rel); err != nil {
		return "", err
	}
	return dir, Reseal(dir, Seal{})
}

// passedAudit is the vulnerabilities.json of a release whose one package
// has no advisory, under the default policy (failOn high).
func passedAudit() *vulnreport.Report {
	r := &vulnreport.Report{Schema: vulnreport.ReportSchema, FailOn: distribution.SeverityHigh, Verdict: vulnreport.Passed, Packages: 1,
		Sources: []vulnreport.SourceResult{{Name: distribution.SourceNPM, Verdict: vulnreport.Passed}}, Counts: map[string]int{}, Findings: []vulnreport.Finding{}}
	for _, sev := range distribution.Severities {
		r.Counts[sev] = 0
	}
	return r
}

// Seal says what Reseal leaves as it stands.
type Seal struct {
	KeepInventory bool // do not recompute payload/metadata/inventory.json
	KeepRelease   bool // do not rebind release.json to the inventory, the lock and the SBOM
	KeepChecksums bool // do not rewrite checksums.txt
}

// Reseal makes a release directory consistent again after a change (the
// inventory, release.json's digests and file count, checksums.txt), so a
// case breaks exactly the rule it names and no earlier one.
func Reseal(dir string, s Seal) error {
	ctx := context.Background()
	pay := filepath.Join(dir, "payload")
	invPath := filepath.Join(pay, filepath.FromSlash(payload.InventoryName))
	if !s.KeepInventory {
		inv, _, err := payload.Inventory(ctx, pay, nil)
		if err != nil {
			return err
		}
		if err := writeJSON(invPath, inv); err != nil {
			return err
		}
	}
	if !s.KeepRelease {
		relPath := filepath.Join(dir, releasejson.Name)
		raw, err := os.ReadFile(relPath)
		if err != nil {
			return err
		}
		var rel releasejson.Metadata
		if err := json.Unmarshal(raw, &rel); err != nil {
			return err
		}
		invRaw, err := os.ReadFile(invPath)
		if err != nil {
			return err
		}
		var inv map[string]string
		if err := json.Unmarshal(invRaw, &inv); err != nil {
			return err
		}
		lockRaw, err := os.ReadFile(filepath.Join(pay, distribution.LockFileName))
		if err != nil {
			return err
		}
		rel.Payload.InventorySHA256, rel.Payload.Files = canon.SHA256Hex(invRaw), len(inv)+1
		rel.LockSHA256 = canon.SHA256Hex(lockRaw)
		if sbom, err := os.ReadFile(filepath.Join(dir, release.SBOMName)); err == nil { // a case may have removed it
			rel.SBOM.SHA256 = canon.SHA256Hex(sbom)
		}
		if err := writeJSON(relPath, rel); err != nil {
			return err
		}
	}
	if s.KeepChecksums {
		return nil
	}
	paths, err := release.ChecksumPaths(dir)
	if err != nil {
		return err
	}
	sums, err := payload.HashFiles(ctx, dir, paths)
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, p := range paths {
		fmt.Fprintf(&b, "%s  %s\n", sums[i], p)
	}
	return write(filepath.Join(dir, release.ChecksumsName), b.String(), 0o644)
}

// Archive archives a release directory as piship release does, into
// <out>/<base of dir>.tar.zst with its sidecar, and returns the archive's path.
func Archive(dir, out string) (string, error) { return ArchiveAs(dir, out, archive.V2) }

// ArchiveAs is Archive in format f (into <out>/<base of dir> + f.Ext()).
func ArchiveAs(dir, out string, f archive.Format) (string, error) {
	path := filepath.Join(out, filepath.Base(dir)+f.Ext())
	res, err := archive.Create(context.Background(), path, dir, archive.Options{Format: f})
	if err != nil {
		return "", err
	}
	return path, Sidecar(path, res.SHA256)
}

// Sidecar writes <path>.sha256 for the archive at path with digest sum.
func Sidecar(path, sum string) error {
	return write(path+".sha256", sum+"  "+filepath.Base(path)+"\n", 0o644)
}
