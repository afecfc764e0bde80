package tuf

import (
	"path"
	"slices"
	"strings"

	"piship.dev/piship/stages/archive"
	"piship.dev/piship/stages/delta"
)

// Target formats a custom object names (Custom.Format). An archive target
// without one is piship-archive/v1, what every piship before v2 published.
const (
	FormatArchiveV1 = string(archive.V1)
	FormatArchiveV2 = string(archive.V2)
	FormatDeltaV1   = delta.Schema
)

// ReadFormats are the archive formats this client installs, the one it
// prefers first: an update takes the newest format it reads when a
// release is published in several (repo add --v1-twin).
var ReadFormats = []string{FormatArchiveV2, FormatArchiveV1}

// Custom is the custom object of every release and delta target.
//
// A v1 archive names its platform under "target", as every piship wrote
// it before archive v2. Every other target (a v2 archive, a delta) names
// it under "platform" and leaves "target" out: a piship that reads only
// v1 archives picks releases by "target", so it never chooses an archive
// or a delta it cannot read, and takes the v1 twin of a release when the
// publisher adds one (repo add --v1-twin).
type Custom struct {
	Version    string `json:"version"`
	Target     string `json:"target,omitempty"`
	Platform   string `json:"platform,omitempty"`
	LockSHA256 string `json:"lockSha256"`
	Channel    string `json:"channel"`
	// Format is the target's format (FormatArchiveV2, FormatDeltaV1); ""
	// is FormatArchiveV1.
	Format string `json:"format,omitempty"`
	// A delta's base and result: it turns the release tree of
	// FromVersion whose digest is FromTree (delta.Tree.Digest) into the
	// tree of Version whose digest is ToTree.
	FromVersion string `json:"fromVersion,omitempty"`
	FromTree    string `json:"fromTree,omitempty"`
	ToTree      string `json:"toTree,omitempty"`
	// RegistryBlob is the distribution API URL of an archive's blob in an
	// OCI registry (repo add --registry: https://host/v2/<repository>/blobs/sha256:<hex>,
	// the digest this target signs): a client downloads the archive from
	// there, held to the signed length and sha256 as any download; "" for
	// an archive served from the repository's targets/ only. A piship
	// before this field downloads the repository's copy, which repo add
	// keeps.
	RegistryBlob string `json:"registryBlob,omitempty"`
}

// customFor is the custom object of a target of format format for
// platform target.
func customFor(format, target string) Custom {
	if format == FormatArchiveV1 {
		return Custom{Target: target}
	}
	return Custom{Platform: target, Format: format}
}

// For is the platform the target is built for.
func (c Custom) For() string {
	if c.Target != "" {
		return c.Target
	}
	return c.Platform
}

// ArchiveFormat is the target's format when it is a release archive
// ("" for a delta or a format this piship does not know).
func (c Custom) ArchiveFormat() string {
	switch f := c.Format; {
	case f == "" && c.Target != "":
		return FormatArchiveV1
	case f == FormatArchiveV1 || f == FormatArchiveV2:
		return f
	}
	return ""
}

// Kind is the target's format as status shows it: an archive format,
// FormatDeltaV1, or the format a newer piship wrote.
func (c Custom) Kind() string {
	if f := c.ArchiveFormat(); f != "" {
		return f
	}
	return c.Format
}

// IsDelta says the target is a delta (FormatDeltaV1).
func (c Custom) IsDelta() bool { return c.Format == FormatDeltaV1 }

// formatRank orders the archive formats a client reads: lower is
// preferred; -1 for one it does not read.
func formatRank(f string) int { return slices.Index(ReadFormats, f) }

// plainTarget says the target path p is a plain file name under the
// channel ch it claims (<ch>/<name>, the name not hidden and without a
// path separator of any platform): what every client of a release, a
// delta or a repair download holds a target to before it is fetched.
func plainTarget(p, ch string) bool {
	base := path.Base(p)
	return p == TargetPath(ch, base) && base != "" && base[0] != '.' && !strings.ContainsAny(base, `\:`)
}
