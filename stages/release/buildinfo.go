package release

// <name>.build-info.json beside a release: the unsigned record of where the
// release's runtime came from (cache provenance), the stage timings and the
// digests of the piship binaries shipped in the release directory. Nothing
// a release signs refers to it.

import (
	"encoding/json"
	"path/filepath"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/cache/canon"
)

// BuildInfoSchema names build-info.json's format.
const BuildInfoSchema = "piship-build-info/v1"

// BuildInfo is the unsigned <name>.build-info.json beside a release:
// cache provenance and stage timings, outside everything a release signs.
type BuildInfo struct {
	Schema       string `json:"schema"`
	Release      string `json:"release"`
	RuntimeCache string `json:"runtimeCache"`
	Entry        string `json:"entry"`
	EntryDigest  string `json:"entryDigest"`
	Linked       int64  `json:"linked"`
	Copied       int64  `json:"copied"`
	Bundle       string `json:"bundle"`
	// Tools are the piship binaries shipped in the release directory
	// (outside the archive and checksums.txt); verify-release checks them.
	Tools  []ToolDigest    `json:"tools,omitempty"`
	Timing json.RawMessage `json:"timing"`
}

// BuildInfoName is the file name of release name's build info, beside its
// release directory.
func BuildInfoName(name string) string { return name + ".build-info.json" }

// BuildInfoPath is where the build info of release name stands in releases.
func BuildInfoPath(releases, name string) string {
	return filepath.Join(releases, BuildInfoName(name))
}

// WriteBuildInfo writes bi (canonical JSON) beside release bi.Release in releases.
func WriteBuildInfo(releases string, bi BuildInfo) error {
	data, err := canon.JSON(bi)
	if err != nil {
		return err
	}
	return atomicfs.WriteFileAll(BuildInfoPath(releases, bi.Release), data, 0o644)
}
