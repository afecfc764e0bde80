package channel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"piship.dev/piship/cache/canon"
	"piship.dev/piship/stages/semver"
)

// Schema identifies the channel document format.
const Schema = "piship-channel/v1"

// MaxDocumentBytes bounds a channel document and its signature file.
const MaxDocumentBytes = 64 << 10

// DefaultExpiresIn is how long a signed channel is valid when SignOptions
// says nothing.
const DefaultExpiresIn = 30 * 24 * time.Hour

// MaxExpiresDays bounds how long a signed channel may be valid: ten years.
const MaxExpiresDays = 3650

// ExpiresInDays is the rule of sign-channel's --expires-days: 1 to
// MaxExpiresDays days, as a duration; anything else (0, a negative
// number, a count whose hours overflow a time.Duration) is CONFIG_INVALID.
func ExpiresInDays(days int) (time.Duration, error) {
	if days < 1 || days > MaxExpiresDays {
		return 0, configErr("--expires-days %d is out of range: give 1 to %d days (a channel is re-signed before it expires)", days, MaxExpiresDays)
	}
	return time.Duration(days) * 24 * time.Hour, nil
}

// Algorithm is the only signature algorithm.
const Algorithm = "ed25519"

// Release is one signed release of a channel.
type Release struct {
	Version string `json:"version"`
	Target  string `json:"target"`
	// Archive is the archive's file name in the channel directory.
	Archive string `json:"archive"`
	// SHA256 is the archive's lowercase hex SHA-256 and Bytes its size.
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	// LockSHA256 is the digest of the release's piship.lock (release.json's
	// lockSha256), which the receipt records and every launch checks.
	LockSHA256 string `json:"lockSha256"`
}

// Channel is the channel document <channel>.json (Schema).
type Channel struct {
	Schema       string `json:"schema"`
	Distribution string `json:"distribution"`
	Channel      string `json:"channel"`
	// Sequence is at least 1 and grows with every signing; an installation
	// refuses a sequence below the highest it accepted.
	Sequence int64 `json:"sequence"`
	// Expires is RFC 3339 UTC, whole seconds.
	Expires time.Time `json:"expires"`
	// Releases are sorted by target, then version (SemVer precedence).
	Releases []Release `json:"releases"`
}

// Signature is one signature of a channel document.
type Signature struct {
	KeyID     string `json:"keyId"`
	Algorithm string `json:"algorithm"`
	// Signature is the standard base64 Ed25519 signature over the exact
	// bytes of <channel>.json.
	Signature string `json:"signature"`
}

// SignatureFile is <channel>.json.sig: one signature per key.
type SignatureFile struct {
	Signatures []Signature `json:"signatures"`
}

var (
	nameRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
	sha256RE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
)

// CheckName returns "" or what is wrong with a channel name, as a
// sentence. A channel name becomes the file name <channel>.json:
// 1-64 lowercase letters, digits, '.', '_' and '-', starting with a letter
// or digit, not ending with '.'.
func CheckName(s string) string {
	switch {
	case s == "":
		return "a channel name cannot be empty."
	case len(s) > 64:
		return "a channel name is at most 64 characters."
	case !nameRE().MatchString(s):
		return "a channel name holds lowercase letters, digits, '.', '_' and '-', starting with a letter or digit, e.g. \"stable\"."
	case strings.HasSuffix(s, "."):
		return "a channel name cannot end with '.'."
	}
	return ""
}

// DocName is the channel document's file name: <channel>.json.
func DocName(channel string) string { return channel + ".json" }

// SigName is the signature file's name: <channel>.json.sig.
func SigName(channel string) string { return channel + ".json.sig" }

// checkFileName refuses anything but one plain path element: what a
// channel may name as an archive, and what a Source fetches.
func checkFileName(name string) string {
	switch {
	case name == "" || name == "." || name == "..":
		return "not a file name"
	case len(name) > 255:
		return "longer than 255 bytes"
	case strings.ContainsAny(name, `/\:`):
		return "a plain file name has no '/', '\\' or ':'"
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) >= 0:
		return "holds control characters or invalid UTF-8"
	case strings.HasPrefix(name, "."):
		return "starts with '.'"
	}
	return ""
}

// Marshal returns the document's bytes: two-space indented JSON in field
// order, a trailing newline. Expires is written in UTC, whole seconds.
func (c *Channel) Marshal() []byte {
	cp := *c
	cp.Expires = cp.Expires.UTC().Truncate(time.Second)
	if cp.Releases == nil {
		cp.Releases = []Release{}
	}
	b, err := canon.JSON(&cp)
	if err != nil {
		panic(err) // strings, numbers and a time
	}
	return b
}

// Parse decodes and validates a channel document: the schema, a
// distribution, a valid channel name, sequence >= 1, an expiry, and
// releases with semantic versions, targets, plain archive file names,
// SHA-256 digests and sizes, no version and target twice. It does not check
// signatures: Verify does, before it parses. Errors are UPDATE_FAILED
// (ReasonMalformed).
func Parse(doc []byte) (*Channel, error) {
	bad := func(format string, args ...any) (*Channel, error) {
		return nil, updateErr(ReasonMalformed, "the channel document is malformed: "+format, args...)
	}
	var c Channel
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return bad("%v", err)
	}
	if dec.More() {
		return bad("data after the document")
	}
	switch {
	case c.Schema != Schema:
		return bad("schema is %q, not %q", c.Schema, Schema)
	case c.Distribution == "":
		return bad("no distribution")
	case CheckName(c.Channel) != "":
		return bad("channel %q: %s", c.Channel, CheckName(c.Channel))
	case c.Sequence < 1:
		return bad("sequence %d is below 1", c.Sequence)
	case c.Expires.IsZero():
		return bad("no expiry")
	}
	seen := map[[2]string]bool{}
	for i, r := range c.Releases {
		where := fmt.Sprintf("release %d (%s %s)", i+1, r.Version, r.Target)
		if _, err := semver.Parse(r.Version); err != nil {
			return bad("%s: %v", where, err)
		}
		switch {
		case r.Target == "" || strings.ContainsAny(r.Target, "/\\ "):
			return bad("%s: no valid target", where)
		case checkFileName(r.Archive) != "":
			return bad("%s: archive %q: %s", where, r.Archive, checkFileName(r.Archive))
		case !sha256RE().MatchString(r.SHA256):
			return bad("%s: sha256 is not 64 lowercase hex digits", where)
		case !sha256RE().MatchString(r.LockSHA256):
			return bad("%s: lockSha256 is not 64 lowercase hex digits", where)
		case r.Bytes <= 0:
			return bad("%s: bytes %d is not a size", where, r.Bytes)
		}
		k := [2]string{r.Version, r.Target}
		if seen[k] {
			return bad("%s is listed twice", where)
		}
		seen[k] = true
	}
	return &c, nil
}

// sortReleases orders releases by target, then version precedence (then
// by the version string, so equal precedence is still a total order).
func sortReleases(rs []Release) {
	slices.SortFunc(rs, func(a, b Release) int {
		if c := strings.Compare(a.Target, b.Target); c != 0 {
			return c
		}
		if c, err := CompareVersions(a.Version, b.Version); err == nil && c != 0 {
			return c
		}
		return cmp.Compare(a.Version, b.Version)
	})
}

// Newest returns the release for target with the highest version (SemVer
// precedence: 1.10.0 above 1.9.0, 2.0.0-rc.1 below 2.0.0).
func (c *Channel) Newest(target string) (*Release, bool) {
	var best *Release
	var bestV semver.Version
	for i := range c.Releases {
		r := &c.Releases[i]
		if r.Target != target {
			continue
		}
		v, err := semver.Parse(r.Version)
		if err != nil {
			continue
		}
		if best == nil || semver.Compare(v, bestV) > 0 {
			best, bestV = r, v
		}
	}
	return best, best != nil
}

// CheckUpgrade allows moving from current to candidate: nil when candidate
// is newer, ErrUpToDate when it is the same version, UPDATE_FAILED
// (ReasonDowngrade) "downgrade from X to Y refused" when it is older.
func CheckUpgrade(current, candidate string) error {
	cur, err := semver.Parse(current)
	if err != nil {
		return updateErr(ReasonVersion, "the installed version: %v", err)
	}
	cand, err := semver.Parse(candidate)
	if err != nil {
		return updateErr(ReasonVersion, "the channel's version: %v", err)
	}
	switch semver.Compare(cand, cur) {
	case 0:
		return ErrUpToDate
	case -1:
		return updateErr(ReasonDowngrade, "downgrade from %s to %s refused: the channel's newest release is older than the installed one (piship rollback returns to the previous release)", current, candidate)
	}
	return nil
}
