// Package distribution reads a distribution directory and pins what it is made of.
//
// A distribution directory holds distribution.hcl (one distribution "<id>"
// block; Doc documents it), the runtime npm project it names
// (package.json and a lockfileVersion 3 package-lock.json), its resources and
// local tools, and piship.lock.
//
//   - Load and Parse decode distribution.hcl with positioned diagnostics,
//     sorted by file, offset and summary; unknown names get a did-you-mean.
//     The file is static: no variables or functions.
//   - The optional audit, signatures and smoke blocks say what a release
//     checks beyond the static rules: where vulnerability advisories come
//     from ("npm" or an offline OSV database) and which findings fail it,
//     whether unverifiable registry signatures fail it, and which payload
//     tests it runs. Distribution.Audit, .Signatures and .Smoke hold them,
//     defaults filled in.
//   - The optional updates block says where installed copies find new
//     releases (a TUF repository, see package tuf) and the sha256 of its
//     initial root (root_sha256) they pin; the piship-channel/v1 keys and
//     threshold are refused, naming piship repo init.
//     Distribution.Updates holds it, nil when it is not written.
//   - ComputeLock hashes distribution.hcl, the runtime's package.json and
//     package-lock.json, every resource file, every local tool (which must
//     match its pinned sha256) and every file of the osv: audit databases
//     into a Lock, with the audit, signatures, smoke and updates settings
//     where they are written (updates.rootSha256;
//     Lock.UpdateRoot reads it back for update_check); Marshal writes
//     it as canonical JSON, so the same inputs give the same bytes;
//     WriteLock replaces piship.lock atomically; CheckLock says whether it
//     is current and, if not, what changed.
//   - Gates applies the static release rules to the npm lock: the host is a
//     release target, every package has a sha512 integrity and comes from an
//     allowed source or from inside the distribution directory, and install
//     scripts are acknowledged.
//
// Errors carry the codes users see: CONFIG_INVALID, LOCK_INVALID,
// POLICY_DENIED (and UPDATE_FAILED from Lock.UpdateTrust).
package distribution
