// Package release holds the rules of a release directory that both the
// stages writing one and the verifier checking one follow: the names of its
// files, release.json's schema and document, which files checksums.txt
// covers, the digests of the piship binaries shipped beside install.sh, and
// the unsigned <name>.build-info.json beside the release (buildinfo.go).
// It is a domain package: it never imports the kind layer.
package release

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"piship.dev/piship/cache"
	"piship.dev/piship/stages/distribution"
	"piship.dev/piship/stages/payload"
)

// Schema is release.json's schema.
const Schema = "piship-release/v1"

// Release file names, relative to the release directory (slash paths).
const (
	JSONName            = "release.json"
	SBOMName            = "sbom.spdx.json"
	NoticesName         = "licenses/THIRD_PARTY_NOTICES.txt"
	NoticesIndexName    = "licenses/index.json"
	VulnerabilitiesName = "vulnerabilities.json"
	InstallScriptName   = "install.sh"
	ChecksumsName       = "checksums.txt"
)

// Metadata is release.json: what a release is and what qualified it. Every
// field derives from the release's content, never from the cache or the
// clock, so a cold and a warm release write the same bytes.
type Metadata struct {
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

// ChecksumPaths lists the release files checksums.txt covers: all but
// checksums.txt itself, the payload (its inventory stands for it) and the
// shipped piship binaries.
func ChecksumPaths(releaseDir string) ([]string, error) {
	files, err := payload.Walk(releaseDir)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range files {
		switch {
		case f.Path == ChecksumsName:
		case IsShippedTool(f.Path): // beside install.sh, not in the archive; build-info.json has their digests
		case strings.HasPrefix(f.Path, "payload/") && f.Path != "payload/"+payload.InventoryName:
		default:
			paths = append(paths, f.Path)
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// ToolDigest describes a shipped binary in build-info.json (and, by its
// cty tags, in release_publish's tools output).
type ToolDigest struct {
	Name   string `json:"name" cty:"name"`
	SHA256 string `json:"sha256" cty:"sha256"`
	Bytes  int64  `json:"bytes" cty:"bytes"`
}

// HashTools describes the shipped binaries present in releaseDir.
func HashTools(releaseDir string) ([]ToolDigest, error) {
	var out []ToolDigest
	for _, name := range distribution.ShippedTools() {
		p := filepath.Join(releaseDir, name)
		fi, err := os.Stat(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sum, err := cache.HashFile(p) // streamed: the binaries are tens of MB
		if err != nil {
			return nil, err
		}
		out = append(out, ToolDigest{Name: name, SHA256: sum, Bytes: fi.Size()})
	}
	return out, nil
}

// IsShippedTool reports whether a release-relative slash path is one of
// the shipped binaries.
func IsShippedTool(p string) bool {
	return slices.Contains(distribution.ShippedTools(), p)
}
