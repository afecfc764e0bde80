// Package audit checks a release's installed npm packages against
// vulnerability advisories and the npm registry's signatures.
//
//   - PackagesFromLock lists what npm ci --omit=dev installs from a
//     dist.PackageLock: every non-dev package but the root, marked Local
//     (file: tarballs, links) or Bundled.
//   - Audit consults the sources of a distribution's audit block in
//     parallel: "npm", the registry's bulk advisory endpoint (POST
//     <registry>/-/npm/v1/security/advisories/bulk, a gzipped
//     {"<name>": ["<version>"...]} of the registry packages: local names
//     never leave the machine), and "osv:<path>", an offline OSV database
//     (a .zip or a directory of OSV JSON). An advisory counts only when its
//     range contains the locked version: npm ranges are evaluated as
//     node-semver does (||, comparator sets, ^, ~, x-ranges, hyphen ranges,
//     pre-releases), with includePrerelease as npm audit sets it, so that
//     1.5.0-rc.1 is inside "<2.0.0"; OSV ranges by their sorted
//     introduced/fixed/last_affected/limit events and SemVer precedence.
//     Findings at or above fail_on fail unless a current allow entry
//     accepts them (by id or alias); an expired entry no longer does, and
//     the failure names it. A source that cannot be consulted is
//     "unavailable", never passed: the release fails unless
//     allow_unavailable. The report is vulnerabilities.json
//     (piship-vulnerabilities/v1), whose types, canonical encoding and
//     Failure (whether and why the release stops) live in
//     stages/release/vulnreport, where the consumers read it back.
//   - VerifySignatures checks the registry's ECDSA P-256 signatures over
//     "<name>@<version>:<integrity>" for every registry package, as npm
//     audit signatures does, with the integrity the lock pins; keys expired
//     before a version was published fail it. A registry that serves no
//     keys or unsigned packuments makes the verdict "unavailable".
//
// Severities: an advisory without one counts as high (npm audit's rule);
// npm's legacy "info" counts as low; an OSV record is rated by
// database_specific.severity, else by its CVSS v3 base score. A range or
// version that cannot be evaluated counts as affected and is noted in the
// source's reason: a gate errs on the side of stopping.
//
// audittest is a local registry speaking these endpoints, for tests.
package audit
