// Package dist reads a distribution directory and pins what it is made of.
//
// A distribution directory holds distribution.hcl (one distribution "<id>"
// block; Doc documents it), the runtime npm project it names
// (package.json and a lockfileVersion 3 package-lock.json), its resources and
// local tools, and piship.lock.
//
//   - Load and Parse decode distribution.hcl with positioned diagnostics,
//     sorted by file, offset and summary; unknown names get a did-you-mean.
//     The file is static: no variables or functions.
//   - ComputeLock hashes distribution.hcl, the runtime's package.json and
//     package-lock.json, every resource file and every local tool (which must
//     match its pinned sha256) into a Lock; Marshal writes it as canonical
//     JSON, so the same inputs give the same bytes; WriteLock replaces
//     piship.lock atomically; CheckLock says whether it is current and, if
//     not, what changed.
//   - Gates applies the static release rules to the npm lock: the host is a
//     release target, every package has a sha512 integrity and comes from an
//     allowed source or from inside the distribution directory, and install
//     scripts are acknowledged.
//
// Errors carry the codes users see: CONFIG_INVALID, LOCK_INVALID,
// POLICY_DENIED.
package dist
