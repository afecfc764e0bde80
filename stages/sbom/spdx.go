package sbom

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"piship.dev/piship/cache/canon"
)

// Summary describes a written SBOM.
type Summary struct {
	// Packages counts the installed packages documented, without the
	// distribution's own package.
	Packages int
	// SHA256 is the lowercase hex SHA-256 of the document's bytes.
	SHA256 string
}

type document struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      creationInfo       `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []relationship     `json:"relationships"`
	Extracted         []extractedLicense `json:"hasExtractedLicensingInfos,omitempty"`
}

type creationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string        `json:"name"`
	SPDXID           string        `json:"SPDXID"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	PackageFileName  string        `json:"packageFileName,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	Checksums        []checksum    `json:"checksums,omitempty"`
	LicenseConcluded string        `json:"licenseConcluded"`
	LicenseDeclared  string        `json:"licenseDeclared"`
	CopyrightText    string        `json:"copyrightText"`
	ExternalRefs     []externalRef `json:"externalRefs,omitempty"`
	Purpose          string        `json:"primaryPackagePurpose"`
}

type checksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type externalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type relationship struct {
	Element string `json:"spdxElementId"`
	Related string `json:"relatedSpdxElement"`
	Type    string `json:"relationshipType"`
	Comment string `json:"comment,omitempty"`
}

// dependsOn is a DEPENDS_ON relationship; one that only optionalDependencies
// or peerDependencies declare says so in its comment.
func dependsOn(from string, e edge) relationship {
	r := relationship{Element: from, Related: e.to.id, Type: "DEPENDS_ON"}
	if e.kind != "" {
		r.Comment = e.kind + " dependency"
	}
	return r
}

// SPDX returns sbom.spdx.json: an SPDX 2.3 JSON document of the runtime
// (see the package documentation for what it holds), 2-space indented with
// a trailing newline. The same input gives the same bytes.
func SPDX(in Input) ([]byte, Summary, error) {
	rt, err := load(in)
	if err != nil {
		return nil, Summary{}, err
	}
	lic := newLicenses(rt.pkgs)
	rootID := "SPDXRef-Distribution-" + spdxIDPart(in.Name) + "-" + spdxIDPart(in.Version)
	doc := document{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        in.Name + "@" + in.Version,
		CreationInfo: creationInfo{
			Created:  created(in.Created),
			Creators: []string{creator(in.ToolVersion)},
		},
		Extracted: lic.extracted,
	}
	doc.Packages = append(doc.Packages, spdxPackage{
		Name: in.Name, SPDXID: rootID, VersionInfo: in.Version,
		DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
		Purpose: "APPLICATION",
	})
	fileName := in.FileName
	if fileName == nil {
		fileName = func(key string) string { return key }
	}
	for _, p := range rt.pkgs {
		sp := spdxPackage{
			Name: p.name, SPDXID: p.id, VersionInfo: p.version, PackageFileName: fileName(p.key),
			DownloadLocation: downloadLocation(p.lock.Resolved),
			Checksums:        checksums(p.lock.Integrity),
			LicenseConcluded: noAssertion, LicenseDeclared: lic.declared(p.license), CopyrightText: noAssertion,
			ExternalRefs: []externalRef{{Category: "PACKAGE-MANAGER", Type: "purl", Locator: purl(p.name, p.version)}},
			Purpose:      "LIBRARY",
		}
		doc.Packages = append(doc.Packages, sp)
	}
	tools := slices.Clone(in.Tools)
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range tools {
		doc.Packages = append(doc.Packages, spdxPackage{
			Name: t.Name, SPDXID: "SPDXRef-Tool-" + spdxIDPart(t.Name),
			DownloadLocation: noAssertion, Checksums: []checksum{{Algorithm: "SHA256", Value: strings.ToLower(t.SHA256)}},
			LicenseConcluded: noAssertion, LicenseDeclared: noAssertion, CopyrightText: noAssertion,
			Purpose: "APPLICATION",
		})
	}
	doc.Relationships = append(doc.Relationships, relationship{Element: doc.SPDXID, Related: rootID, Type: "DESCRIBES"})
	rootDeps, err := rt.edges("", rt.root)
	if err != nil {
		return nil, Summary{}, err
	}
	// A vendored Pi package's project is part of the distribution: what
	// it depends on (the package) is the distribution's too.
	for _, prefix := range slices.Sorted(maps.Keys(rt.roots)) {
		deps, err := rt.edges(prefix, rt.roots[prefix])
		if err != nil {
			return nil, Summary{}, err
		}
		rootDeps = append(rootDeps, deps...)
	}
	for _, d := range rootDeps {
		doc.Relationships = append(doc.Relationships, dependsOn(rootID, d))
	}
	for _, p := range rt.pkgs {
		deps, err := rt.edges(p.key, p.lock)
		if err != nil {
			return nil, Summary{}, err
		}
		for _, d := range deps {
			if d.to != p {
				doc.Relationships = append(doc.Relationships, dependsOn(p.id, d))
			}
		}
	}
	slices.SortFunc(doc.Relationships, func(a, b relationship) int {
		if c := strings.Compare(a.Element, b.Element); c != 0 {
			return c
		}
		if c := strings.Compare(a.Type, b.Type); c != 0 {
			return c
		}
		return strings.Compare(a.Related, b.Related)
	})

	// The namespace names this content: the document is hashed with an
	// empty namespace first.
	draft, err := encode(doc)
	if err != nil {
		return nil, Summary{}, err
	}
	sum := sha256.Sum256(draft)
	doc.DocumentNamespace = fmt.Sprintf("https://piship.dev/spdx/%s-%s-%s/%s",
		url.PathEscape(in.Name), url.PathEscape(in.Version), in.LockSHA256, hex.EncodeToString(sum[:8]))
	out, err := encode(doc)
	if err != nil {
		return nil, Summary{}, err
	}
	return out, Summary{Packages: len(rt.pkgs), SHA256: canon.SHA256Hex(out)}, nil
}

// creator names the tool that wrote the document, with its version:
// "Tool: piship-<version>" (SPDX's "Tool: name-version" form).
func creator(version string) string {
	if version == "" {
		return "Tool: piship"
	}
	return "Tool: piship-" + version
}

// encode writes v as 2-space indented JSON with a trailing newline, without
// HTML escaping.
func encode(v any) ([]byte, error) { return canon.JSON(v) }

// created formats the creation time: UTC, seconds; the zero time is the
// Unix epoch.
func created(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// downloadLocation is a resolved URL without its credentials, or
// NOASSERTION for what is not a URL (file: tarballs, links, bundled
// packages).
func downloadLocation(resolved string) string {
	u, err := url.Parse(resolved)
	if err != nil || u.Host == "" {
		return noAssertion
	}
	switch s := strings.ToLower(u.Scheme); {
	case s == "http" || s == "https":
		if u.User != nil {
			u.User = nil
			return u.String()
		}
	case s == "git" || strings.HasPrefix(s, "git+"):
		if _, has := u.User.Password(); has {
			u.User = url.User(u.User.Username())
			return u.String()
		}
	default:
		return noAssertion
	}
	return resolved
}

var spdxAlgorithms = map[string]string{"sha1": "SHA1", "sha256": "SHA256", "sha384": "SHA384", "sha512": "SHA512"}

// checksums decodes a Subresource Integrity value ("sha512-<base64>", more
// than one separated by spaces) into SPDX checksums, sorted.
func checksums(integrity string) []checksum {
	var out []checksum
	for _, f := range strings.Fields(integrity) {
		alg, b64, ok := strings.Cut(f, "-")
		name := spdxAlgorithms[strings.ToLower(alg)]
		if !ok || name == "" {
			continue
		}
		b64, _, _ = strings.Cut(b64, "?")
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			continue
		}
		c := checksum{Algorithm: name, Value: hex.EncodeToString(raw)}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b checksum) int {
		if c := strings.Compare(a.Algorithm, b.Algorithm); c != 0 {
			return c
		}
		return strings.Compare(a.Value, b.Value)
	})
	return out
}

// purl is the package URL of an npm package: pkg:npm/%40scope/name@version.
func purl(name, version string) string {
	var b strings.Builder
	b.WriteString("pkg:npm/")
	if scope, rest, ok := strings.Cut(name, "/"); ok && strings.HasPrefix(scope, "@") {
		b.WriteString(purlEscape(scope))
		b.WriteByte('/')
		name = rest
	}
	b.WriteString(purlEscape(name))
	if version != "" {
		b.WriteByte('@')
		b.WriteString(purlEscape(version))
	}
	return b.String()
}

// purlEscape percent-encodes all but the unreserved characters.
func purlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
