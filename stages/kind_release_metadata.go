package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/buildstate"
	"piship.dev/piship/stages/payload"
	"piship.dev/piship/stages/release"
	"piship.dev/piship/stages/release/releasejson"
	"piship.dev/piship/stages/stage"
)

// ToolVersion is the piship version recorded in releases.
func ToolVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// ReleaseMetadata writes release.json and install.sh.
type ReleaseMetadata struct{}

func (ReleaseMetadata) Name() string    { return "release_metadata" }
func (ReleaseMetadata) Version() string { return "1" }
func (ReleaseMetadata) Doc() string {
	return "Writes release.json (piship-release/v1) from the qualification results and the payload, and install.sh. " +
		"Reads vulnerabilities.json, sbom.spdx.json and licenses/index.json from release_dir; the tests and signature verdicts come in as JSON."
}

// ReleaseMetadataConfig is release_metadata's configuration.
type ReleaseMetadataConfig struct {
	ReleaseDir     string `cty:"release_dir" required:"true" doc:"the release directory (reads the qualification files, writes release.json and install.sh)"`
	Distribution   string `cty:"distribution" required:"true" doc:"the distribution directory"`
	Target         string `cty:"target" required:"true" doc:"<platform>-<arch>"`
	Channel        string `cty:"channel" required:"true" doc:"the update channel recorded in release.json"`
	Created        string `cty:"created" required:"true" doc:"RFC 3339"`
	LockSHA256     string `cty:"lock_sha256" required:"true" doc:"sha256 of piship.lock"`
	Version        string `cty:"version" doc:"the release version (release_inputs' version); empty: resolved as release_inputs resolves it without flags"`
	RuntimePackage string `cty:"runtime_package" required:"true" doc:"the runtime's package name"`
	RuntimeVersion string `cty:"runtime_version" required:"true" doc:"the runtime's package version"`
	Tests          string `cty:"tests" required:"true" doc:"JSON list of {name, result}"`
	Signatures     string `cty:"signatures" required:"true" doc:"JSON {verdict, missing, reason}"`
	PackageAudits  string `cty:"package_audits" required:"true" doc:"JSON {verdict, locks}"`
	SBOMSHA256     string `cty:"sbom_sha256" required:"true" doc:"sha256 of sbom.spdx.json"`
	SBOMPackages   int64  `cty:"sbom_packages" required:"true" doc:"packages the SBOM lists"`
	Runner         string `cty:"runner" doc:"the CI runner that built and smoke-tested the target, recorded in release.json (empty: none recorded)"`
}

// ReleaseMetadataOutputs are release_metadata's outputs.
type ReleaseMetadataOutputs struct {
	SHA256 string `cty:"sha256" doc:"sha256 of release.json"`
}

// Run implements stage.Typed.
func (ReleaseMetadata) Run(ctx context.Context, inv *stage.Invocation, cfg ReleaseMetadataConfig) (ReleaseMetadataOutputs, error) {
	dir := cfg.ReleaseDir
	d, err := buildstate.LoadManifest(stage.Resolve(inv.Dir, cfg.Distribution))
	if err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	var r releasejson.Metadata
	r.Schema = releasejson.Schema
	version, err := releaseVersion(ctx, d, cfg.Version)
	if err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	r.Distribution.ID, r.Distribution.Name, r.Distribution.Version, r.Distribution.Command = d.ID, d.Name, version, d.Command
	r.Tool.Name, r.Tool.Version = "piship", ToolVersion()
	r.Runtime.Package, r.Runtime.Version = cfg.RuntimePackage, cfg.RuntimeVersion
	r.LockSHA256, r.Target, r.Channel, r.Created = cfg.LockSHA256, cfg.Target, cfg.Channel, cfg.Created
	r.Qualification = "qualified"

	invBytes, err := os.ReadFile(filepath.Join(dir, "payload", filepath.FromSlash(payload.InventoryName)))
	if err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	var sums map[string]string
	if err := json.Unmarshal(invBytes, &sums); err != nil {
		return ReleaseMetadataOutputs{}, fmt.Errorf("payload inventory: %v", err)
	}
	r.Payload.Path = "payload"
	r.Payload.InventorySHA256 = payload.InventoryDigest(invBytes)
	r.Payload.Files = len(sums) + 1

	if err := json.Unmarshal([]byte(cfg.Tests), &r.Tests); err != nil {
		return ReleaseMetadataOutputs{}, fmt.Errorf("tests: %v", err)
	}
	if r.Tests == nil {
		r.Tests = []releasejson.TestResult{}
	}
	r.Runner = cfg.Runner
	if err := json.Unmarshal([]byte(cfg.Signatures), &r.Signatures); err != nil {
		return ReleaseMetadataOutputs{}, fmt.Errorf("signatures: %v", err)
	}
	if r.Signatures.Missing == nil {
		r.Signatures.Missing = []string{}
	}
	if err := json.Unmarshal([]byte(cfg.PackageAudits), &r.PackageAudits); err != nil {
		return ReleaseMetadataOutputs{}, fmt.Errorf("package_audits: %v", err)
	}
	r.SBOM.Path, r.SBOM.SHA256 = release.SBOMName, cfg.SBOMSHA256
	r.SBOM.Packages = int(cfg.SBOMPackages)
	r.Notices.Path, r.Notices.Index = release.NoticesName, release.NoticesIndexName

	var vul struct {
		FailOn           string         `json:"failOn"`
		Verdict          string         `json:"verdict"`
		AllowUnavailable bool           `json:"allowUnavailable"`
		Counts           map[string]int `json:"counts"`
	}
	if err := canon.ReadJSON(filepath.Join(dir, release.VulnerabilitiesName), &vul); err != nil {
		return ReleaseMetadataOutputs{}, fmt.Errorf("%s: %v", release.VulnerabilitiesName, err)
	}
	r.Vulnerabilities.Path, r.Vulnerabilities.FailOn, r.Vulnerabilities.Verdict = release.VulnerabilitiesName, vul.FailOn, vul.Verdict
	r.Vulnerabilities.AllowUnavailable, r.Vulnerabilities.Counts = vul.AllowUnavailable, vul.Counts

	data, err := canon.JSON(r)
	if err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dir, releasejson.Name), data, 0o644); err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	if err := atomicfs.WriteFileAll(filepath.Join(dir, release.InstallScriptName), []byte(installScript(d.ID)), 0o755); err != nil {
		return ReleaseMetadataOutputs{}, err
	}
	return ReleaseMetadataOutputs{SHA256: canon.SHA256Hex(data)}, nil
}

// installScript installs the release it stands in with piship: the one
// shipped beside it when present, else the one on PATH.
func installScript(id string) string {
	return `#!/bin/sh
# Installs this ` + id + ` release: piship install <this directory>.
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
if [ -x "$here/piship" ]; then
  exec "$here/piship" install "$here" "$@"
fi
if ! command -v piship >/dev/null 2>&1; then
  echo "install.sh: piship is not on PATH; install it, then run: piship install $here" >&2
  exit 1
fi
exec piship install "$here" "$@"
`
}
