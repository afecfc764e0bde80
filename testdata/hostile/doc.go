// Package hostile is the corpus of hostile release archives: one archive
// per rule a consumer applies (the release rules of stages/release, the
// archive rules of stages/archive), each of which install and
// verify-release must both refuse. Nothing here is committed as bytes:
// every archive is written by a function of Cases, from a valid release
// (Release, the shape piship release gives one) that it copies and breaks
// (Tree, Reseal), or rewrites at the tar level (Tar, Raw, Entries, TarGz).
//
// # What both consumers must say
//
// TestCorpus (make test runs it: the Makefile names this package, which
// `go list ./...` skips under testdata/) installs 1.0.0 into a temporary
// home, then, for each case, in each archive format (V2, and V1 that
// earlier releases shipped; the last three gzip cases are V1's only, the
// three zstd ones V2's), from that same home restored fresh:
//
//   - install (home.Install) of the case's hello-1.0.1-<host>.tar.zst fails
//     with the case's code, INTEGRITY_FAILED for every case today, and its
//     message names the rule in parentheses ("release refused
//     (lock-entry): ...", "archive entry 5 ... refused (dot-segment): ...");
//   - verify-release (verify.Release) of the same archive is not OK, its
//     error has the same code, and a failed check is the rule (a release
//     rule is a check of its name; an archive rule fails archive-extract
//     naming it in parentheses);
//   - nothing changed anywhere in the test's directory (the directory
//     aimed at, the homes, verify-release's temporary directory) but what
//     install set aside in apps/hello/.retained-1.0.1-*;
//   - the receipt is byte for byte what it was, and 1.0.0 launches
//     (launch.Run, with a stand-in for node that prints what it would run).
//
// TestBaseIsValid checks the unbroken release installs, launches under
// node and verifies, so each case fails by the one rule it breaks.
//
// # The cases
//
//	name                        rule                     what the archive does
//	missing-checksums           required-files           no checksums.txt: nothing binds the release files but release.json itself
//	missing-sbom                required-files           no sbom.spdx.json
//	missing-notices             required-files           no licenses/THIRD_PARTY_NOTICES.txt
//	missing-target              required-files           no payload/metadata/target.json (the inventory resealed without it)
//	wrong-checksum              checksums                checksums.txt gives the SBOM another digest
//	file-not-in-checksums       checksums                a release file checksums.txt does not list
//	checksums-unsorted          checksums                checksums.txt lines out of path order (what piship never writes)
//	release-json-unqualified    release-json             release.json says qualification unqualified-local
//	release-json-audits-never-ran release-json          release.json says the package audits passed with no package lock read
//	release-json-unknown-field  release-json             release.json carries a field piship-release/v1 does not have
//	inventory-outside-payload   inventory-path           the inventory lists ../release.json: a file outside payload/
//	inventory-absolute          inventory-path           the inventory lists /etc/passwd
//	extra-payload-file          payload-inventory        a payload file the inventory does not list
//	missing-payload-file        payload-inventory        a file the inventory lists is not in the payload
//	changed-payload-file        payload-inventory        the entry's bytes differ from the inventory's digest
//	lock-unreadable             lock                     payload/piship.lock is not a lock
//	lock-entry-traversal        lock-entry               the lock's entry is ../../x: launch would run a file outside the payload
//	lock-entry-absolute         lock-entry               the lock's entry is an absolute path
//	lock-entry-missing          lock-entry               the lock's entry is not in the payload
//	lock-command-path           lock-entry               the lock's command is ../../bin/sh: the shim would land outside the bin home
//	binding-inventory-digest    release-matches-payload  release.json binds another inventory digest
//	identity-release-version    identity                 release.json is 1.0.2 in an archive named 1.0.1
//	identity-lock-version       identity                 the lock is of 1.0.2, release.json and the name say 1.0.1
//	identity-lock-id            identity                 the lock is of another distribution
//	identity-target             identity                 payload/metadata/target.json names another platform than release.json and the name
//	identity-command            identity                 the lock names another command than release.json
//	sbom-wrong-digest           sbom-matches-payload     release.json binds another SBOM digest than sbom.spdx.json's
//	sbom-empty                  sbom-matches-payload     an SBOM of {} that release.json binds, with 0 packages: the locked package is in no SBOM
//	sbom-path-outside           sbom-matches-payload     release.json's sbom.path is ../../../../etc/passwd
//	notices-empty               notices-cover-sbom       empty notices: an index of no package and no text
//	notices-text-empty          notices-cover-sbom       the index covers the SBOM, and the notices text names no package
//	vuln-verdict-lies           vulnerabilities          3 critical and 2 high findings with verdict passed under failOn high
//	vuln-allowed-unlisted       vulnerabilities          a critical finding says allowed, and the lock allows no advisory
//	vuln-verdict-failed         vulnerabilities          vulnerabilities.json and release.json agree on verdict failed
//	tests-failed                tests                    release.json records a failed smoke test
//	signatures-failed           signatures               release.json records the signature verdict failed
//	dotdot-name                 dot-segment              a tar name with .. segments: payload/../../evil.txt
//	absolute-name               absolute-path            a tar name that is an absolute path into the directory outside
//	backslash-name              backslash                a tar name with backslashes: payload\..\..\evil.txt
//	reserved-name               reserved-name            a name Windows reserves: payload/con.txt
//	case-twins                  name-collision           payload/Evil.txt beside payload/evil.txt: one file on a case-insensitive file system
//	nfc-nfd-twins               name-collision           payload/café.txt in NFC beside the same name in NFD: one file where names are normalised
//	trailing-dot                trailing-dot-space       payload/evil. : Windows drops the dot, so it lands on payload/evil
//	trailing-space              trailing-dot-space       a name ending in a space: Windows drops it
//	declared-bomb               declared                 a declaration of 1 file of 4 bytes before the whole release: extraction stops beyond it
//	symlink-escape              entry-type               a symlink to the directory outside, then a file through it
//	symlink-relative            entry-type               a symlink ../../../.. out of the target
//	hardlink-outside            entry-type               a hardlink to a file outside the target
//	char-device                 entry-type               a character device entry
//	fifo                        entry-type               a named pipe entry
//	duplicate-entry             duplicate                release.json twice: the second copy would win on a naive extractor
//	oversized-entry             max-bytes                a header declaring 3 GiB (over the 2 GiB limit) with no data behind it
//	truncated-gzip              truncated                a valid archive cut at two thirds
//	trailing-garbage            trailing-data            bytes after the gzip stream
//	not-gzip                    gzip                     a plain tar where a tar.gz belongs
//	truncated-zstd              truncated                a valid V2 archive cut inside its last frame
//	after-seek-table            seek-table               bytes after the seek table, which must be last
//	index-lies                  index                    the index gives release.json the SHA-256 of other bytes
//
// TestManual keeps this list and Cases the same.
//
// # Adding a case
//
// One entry in Cases: a name, a description, the rule (the name both
// consumers use for it), the code, and a writer, usually a few lines:
//
//	{"lock-entry-traversal", "the lock's entry is ../../x", "lock-entry", IntegrityFailed,
//		Tree(func(dir string) error {
//			return editLock(dir, func(m map[string]any) { obj(m, "runtime")["entry"] = "../../x" })
//		})},
//
// and its line above. To look at the archives, have the test write them
// into a directory too (WriteAll):
//
//	go test ./testdata/hostile -run TestCorpus -out DIR
package hostile
