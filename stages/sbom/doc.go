// Package sbom documents what a release's runtime is made of: an SPDX 2.3
// software bill of materials (sbom.spdx.json) and the third-party license
// notices (licenses/THIRD_PARTY_NOTICES.txt and licenses/index.json).
//
// Both read the same package set: every entry of the npm package-lock.json
// that is not a dev dependency and is installed in the tree (its directory
// holds a package.json). An optional entry the tree lacks (a platform
// package npm skipped for this os/cpu) is left out; any other entry the tree
// lacks is an error, since the tree was then not installed from this lock.
// A linked entry (a workspace) is documented through its target. The tree is
// only read: it may be a shared runtime cache entry.
//
// SPDX writes one package per installed copy, sorted by name, version and
// install path, behind the distribution's own package (the document
// DESCRIBES it). IDs are SPDXRef-Package-<name>-<version> with every
// character outside [A-Za-z0-9.-] replaced by "-" (a scope's "@" dropped);
// a second copy of the same name and version, or a name that sanitizes to
// an ID already taken, gets -2, -3, ... in that order. The distribution is
// SPDXRef-Distribution-<name>-<version>, so it never collides with a
// dependency of the same name. DEPENDS_ON relationships follow node's
// module lookup from each package's install path (its own node_modules,
// then each enclosing one up to the root) for dependencies,
// optionalDependencies and peerDependencies (an edge only the latter two
// declare carries the comment "optional dependency" or "peer dependency");
// a required dependency that resolves to nothing is an error.
//
// Values: downloadLocation is the resolved URL (user info removed) when it
// is one, else NOASSERTION (file: tarballs, bundled and linked packages);
// checksums come from the lock's integrity (sha512, and any sha1, sha256 or
// sha384 beside it), hex; licenseDeclared is the installed package.json's
// "license" (a string or an old {"type"} object) or legacy "licenses"
// (joined with OR), the lock's license when the manifest has none, and
// NOASSERTION when neither says. An expression made only of license IDs,
// "+", AND, OR, WITH and balanced parentheses is written as is; anything
// else (SEE LICENSE IN ..., UNLICENSED, a URL, a LicenseRef of the
// package's own) becomes LicenseRef-<sanitized text> and is defined in
// hasExtractedLicensingInfos with the text as written. licenseConcluded and
// copyrightText are NOASSERTION, filesAnalyzed is false, and each package
// has a purl (pkg:npm/%40scope/name@version).
//
// The document is a function of its input: creationInfo.created is
// Input.Created in UTC to the second (the zero time is the Unix epoch), the
// creator is "Tool: piship-<version>" (Input.ToolVersion, the build's version
// string that `piship version` prints; "devel" for a development build), packages and relationships
// are sorted, and documentNamespace is
// https://piship.dev/spdx/<name>-<version>-<lock sha256>/<digest>, where
// digest is the first 16 hex digits of the SHA-256 of the document written
// with an empty namespace: the same lock installed for two platforms gives
// two documents, and they must not share a namespace.
//
// Notices lists every package (sorted by name, version and path) that has
// license files: a header (name@version, declared license, install path)
// and the text of each top-level file of its directory whose name starts
// with LICENSE, LICENCE, COPYING or NOTICE, in any case and with any
// extension except JavaScript/TypeScript sources and source maps (code, not
// notices, e.g. a license.js module). A text identical to one already
// reproduced is replaced by a reference to it. Packages without such a file
// follow in a final section with their declared license. index.json
// ("piship-notices/v1") has every package with its files and their SHA-256
// (of the file's bytes), and the name@version of those without one.
package sbom
