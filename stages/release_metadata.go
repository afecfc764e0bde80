package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"piship.dev/piship/stages/buildstate"
	"runtime/debug"

	"github.com/zclconf/go-cty/cty"

	"piship.dev/piship/stages/payload"
)

// ReleaseSchema is release.json's schema.
const ReleaseSchema = "piship-release/v1"

// Release is release.json: what a release is and what qualified it. Every
// field derives from the release's content, never from the cache or the
// clock, so a cold and a warm release write the same bytes.
type Release struct {
	Schema       string `json:"schema"`
	Distribution struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Version string `json:"version"`
		Command string `json:"command"`
	} `json:"distribution"`
	Tool struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"tool"`
	Runtime struct {
		Package string `json:"package"`
		Version string `json:"version"`
	} `json:"runtime"`
	LockSHA256    string `json:"lockSha256"`
	Target        string `json:"target"`
	Channel       string `json:"channel"`
	Created       string `json:"created"`
	Qualification string `json:"qualification"`
	Payload       struct {
		Path            string `json:"path"`
		InventorySHA256 string `json:"inventorySha256"`
		Files           int    `json:"files"`
	} `json:"payload"`
	Tests []TestResult `json:"tests"`
	SBOM  struct {
		Path     string `json:"path"`
		SHA256   string `json:"sha256"`
		Packages int    `json:"packages"`
	} `json:"sbom"`
	Notices struct {
		Path  string `json:"path"`
		Index string `json:"index"`
	} `json:"notices"`
	Vulnerabilities struct {
		Path             string         `json:"path"`
		FailOn           string         `json:"failOn"`
		Verdict          string         `json:"verdict"`
		AllowUnavailable bool           `json:"allowUnavailable"`
		Counts           map[string]int `json:"counts"`
	} `json:"vulnerabilities"`
	PackageAudits struct {
		Verdict string `json:"verdict"`
		Locks   int    `json:"locks"`
	} `json:"packageAudits"`
	Signatures SignatureSummary `json:"signatures"`
}

// TestResult is one smoke test's outcome.
type TestResult struct {
	Name   string `json:"name"`
	Result string `json:"result"`
}

// SignatureSummary is the signature verdict as release.json records it.
type SignatureSummary struct {
	Verdict string   `json:"verdict"`
	Missing []string `json:"missing"`
	Reason  string   `json:"reason"`
}

// Release file names.
const (
	ReleaseJSONName     = "release.json"
	SBOMName            = "sbom.spdx.json"
	NoticesName         = "licenses/THIRD_PARTY_NOTICES.txt"
	NoticesIndexName    = "licenses/index.json"
	VulnerabilitiesName = "vulnerabilities.json"
	InstallScriptName   = "install.sh"
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

func (ReleaseMetadata) Attrs() []Attr {
	s := func(n, doc string) Attr { return Attr{Name: n, Type: cty.String, Required: true, Doc: doc} }
	return []Attr{
		s("release_dir", ""), s("distribution", "the distribution directory"), s("target", ""), s("channel", ""),
		s("created", "RFC 3339"), s("lock_sha256", ""), s("runtime_package", ""), s("runtime_version", ""),
		s("tests", "JSON list of {name, result}"), s("signatures", "JSON {verdict, missing, reason}"),
		s("package_audits", "JSON {verdict, locks}"), s("sbom_sha256", ""),
		{Name: "sbom_packages", Type: cty.Number, Required: true},
	}
}

func (ReleaseMetadata) Outputs() []Output {
	return []Output{{Name: "sha256", Type: cty.String, Doc: "sha256 of release.json"}}
}

// Run implements Kind.
func (ReleaseMetadata) Run(ctx context.Context, inv *Invocation) (map[string]cty.Value, error) {
	get := func(n string) string { return stringOr(inv.Get(n), "") }
	dir := get("release_dir")
	d, err := buildstate.LoadManifest(Resolve(inv.Dir, get("distribution")))
	if err != nil {
		return nil, err
	}
	var r Release
	r.Schema = ReleaseSchema
	r.Distribution.ID, r.Distribution.Name, r.Distribution.Version, r.Distribution.Command = d.ID, d.Name, d.Version, d.Command
	r.Tool.Name, r.Tool.Version = "piship", ToolVersion()
	r.Runtime.Package, r.Runtime.Version = get("runtime_package"), get("runtime_version")
	r.LockSHA256, r.Target, r.Channel, r.Created = get("lock_sha256"), get("target"), get("channel"), get("created")
	r.Qualification = "qualified"

	invBytes, err := os.ReadFile(filepath.Join(dir, "payload", filepath.FromSlash(payload.InventoryName)))
	if err != nil {
		return nil, err
	}
	var sums map[string]string
	if err := json.Unmarshal(invBytes, &sums); err != nil {
		return nil, fmt.Errorf("payload inventory: %v", err)
	}
	r.Payload.Path = "payload"
	r.Payload.InventorySHA256 = payload.InventoryDigest(invBytes)
	r.Payload.Files = len(sums) + 1

	if err := json.Unmarshal([]byte(get("tests")), &r.Tests); err != nil {
		return nil, fmt.Errorf("tests: %v", err)
	}
	if r.Tests == nil {
		r.Tests = []TestResult{}
	}
	if err := json.Unmarshal([]byte(get("signatures")), &r.Signatures); err != nil {
		return nil, fmt.Errorf("signatures: %v", err)
	}
	if r.Signatures.Missing == nil {
		r.Signatures.Missing = []string{}
	}
	if err := json.Unmarshal([]byte(get("package_audits")), &r.PackageAudits); err != nil {
		return nil, fmt.Errorf("package_audits: %v", err)
	}
	r.SBOM.Path, r.SBOM.SHA256 = SBOMName, get("sbom_sha256")
	n, _ := inv.Get("sbom_packages").AsBigFloat().Int64()
	r.SBOM.Packages = int(n)
	r.Notices.Path, r.Notices.Index = NoticesName, NoticesIndexName

	var vul struct {
		FailOn           string         `json:"failOn"`
		Verdict          string         `json:"verdict"`
		AllowUnavailable bool           `json:"allowUnavailable"`
		Counts           map[string]int `json:"counts"`
	}
	if err := payload.ReadJSON(filepath.Join(dir, VulnerabilitiesName), &vul); err != nil {
		return nil, fmt.Errorf("%s: %v", VulnerabilitiesName, err)
	}
	r.Vulnerabilities.Path, r.Vulnerabilities.FailOn, r.Vulnerabilities.Verdict = VulnerabilitiesName, vul.FailOn, vul.Verdict
	r.Vulnerabilities.AllowUnavailable, r.Vulnerabilities.Counts = vul.AllowUnavailable, vul.Counts

	data, err := payload.CanonicalJSON(r)
	if err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(dir, ReleaseJSONName), data, 0o644); err != nil {
		return nil, err
	}
	if err := payload.WriteFile(filepath.Join(dir, InstallScriptName), []byte(installScript(d.ID)), 0o755); err != nil {
		return nil, err
	}
	return map[string]cty.Value{"sha256": cty.StringVal(sha256Hex(data))}, nil
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
