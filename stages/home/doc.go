// Package home installs, rolls back, diagnoses and uninstalls distributions
// in the install home: the consumer side of piship. The launch itself is
// package launch, and what both share (homes, receipt, gate, leases, codes)
// is package receipt, so that a start loads neither this package nor dist,
// HCL or the engine.
//
// # Version directory
//
// An installed version is the whole release directory, unchanged:
// apps/<id>/<version>/ holds release.json, checksums.txt, the SBOM, the
// notices and payload/, and the receipt's Payload is apps/<id>/<version>/payload.
// An archive is extracted straight there (the archive's root is the release
// directory); a release directory is copied there; a payload directory
// (piship build output) is copied to apps/<id>/<version>/payload, so every
// installation has one shape and a launch or doctor never asks where the
// payload is.
//
// # Install
//
// Install reads the source once. An archive is extracted by
// archive.Extract straight into apps/<id>/<version>, hashing the archive
// and every file as it goes, with 8 writers; a directory is copied by 8
// writers, hashing each file as it is copied. Both hand each writer the
// files of one directory at a time (see archive's package comment). Nothing references the new
// directory until the receipt is written. Before the receipt is written,
// the archive's SHA-256 is compared with --sha256 and with the
// <archive>.sha256 sidecar beside it, and the release rules (release.Check,
// the table in stages/release's package comment, which verify-release and
// doctor apply too) judge what was written: the required files, every
// release file against checksums.txt, every payload file's digest against
// payload/metadata/inventory.json (the exact set, every entry a path inside
// the payload), release.json's binding of the inventory and the lock, the
// lock's entry, and one identity (id, version, command, target) in the
// archive's name, release.json, the lock and metadata/target.json. No file
// is read a second time for this: the digests come from the extraction. A
// refusal is INTEGRITY_FAILED naming the rule. On every failure after the
// first byte is written (extraction, the checks, and the commit: a shim in
// the way, no space for the launcher or the receipt) the new directory,
// never referenced, is set aside with one rename to
// .retained-<version>-<rand> and removed within 1.5 s, so retries never
// pile up copies; what that budget leaves doctor reclaims. A failed first
// install leaves no apps/<id>.
//
// The id and version of an archive come from its name,
// <id>-<version>-<target>.tar.zst (InstallOptions.ID and Version override
// it: an update passes the signed channel entry's), because release.json
// comes after payload/ in the archive and the destination must be known
// before the first byte is written; release.json must then agree.
//
// A directory already standing at apps/<id>/<version> is moved aside with
// one rename to apps/<id>/.retained-<version>-<rand> (never deleted on this
// path, never overwritten). A recorded release is reused instead, with no
// file written, when its recorded archive digest equals the expected one
// (or, for a directory, its inventory digest equals the source's) and it
// is intact (see "Installing a version that is installed"). Free
// space is checked before anything is written (space.go,
// CONFIG_UNAVAILABLE): the expanded size the archive declares in its
// first header (archive.Declared, read by archive.Open, from which the
// extraction then goes on: the archive is opened and read once) or the
// directory's files, each file and directory counted 4 KiB more, plus the
// launcher the install stage keeps (InstallOptions.LauncherBytes) and
// 1 MiB; an archive from a piship before the declaration, which cannot
// say its expanded size, needs twice its bytes plus the launcher. The
// extraction is then held to the declared totals: a gzip bomb stops at
// its first entry beyond them (INTEGRITY_FAILED) with nothing beyond
// written. Paths that would collide or break on the file system of any
// target (archive.Names: case or normalisation twins, a trailing dot or
// space) are refused for a directory as for an archive.
//
// The commit takes the launch gate, writes the command shim(s) and then the
// receipt (active = the new version, previous = the old active), and lets
// the gate go. The shim does not depend on the version, so writing it
// first is harmless and leaves the receipt the single commit point.
// Install, update and launch never delete a version directory a receipt
// ever named (only the one a failed install wrote): doctor reclaims them
// within a time budget.
//
// # Concurrent commands
//
// Install, update, rollback, doctor and uninstall each decide what they
// commit on the receipt read after taking the maintenance lock, so two of
// them on one home end as if they had run one after the other. An update
// chooses its release from the channel before downloading it, without
// the lock; its install (InstallOptions.Update) compares the channel's
// version with the active one again under the lock: the same version is
// "up to date" (exit 0, nothing written), an older one a refused
// downgrade (UPDATE_FAILED), as if the update had started after the
// command that changed it, and a receipt gone (an uninstall ran) is
// UPDATE_FAILED with the download removed. An update the release rules
// refuse (the signed target's lockSha256 among them, LockSHA256) removes
// its download too, and its verified TUF store (TrustStage) is dropped:
// that store replaces trust/<id>/ only once the archive is accepted, just
// before the receipt, and goes back if the receipt's commit fails. An explicit install of an
// older version is a deliberate downgrade and is not refused. A rollback
// computes its target from the receipt under the lock; an uninstall
// renames apps/<id> away before removing it, so that an update
// downloading into it meanwhile cannot make the removal fail.
//
// # Command shim
//
// <bin-home>/<command> is a POSIX sh script:
//
//	#!/bin/sh
//	# piship command shim for <id>: runs the active release through piship launch.
//	PISHIP_INSTALL_HOME='<install home>'
//	PISHIP_BIN_HOME='<bin home>'
//	PISHIP_STATE_HOME='<state home>'
//	export PISHIP_INSTALL_HOME PISHIP_BIN_HOME PISHIP_STATE_HOME
//	exec '<piship>' launch '<id>' -- "$@"
//
// (without the word launch when the launcher is the dedicated
// piship-launch binary), and for a win32 target also <command>.cmd doing
// the same. The homes are
// pinned so that the command finds the installation it belongs to whatever
// the caller's environment says.
//
// # Doctor
//
// Doctor holds the maintenance lock and checks, in order: the launch gate
// (a directory at receipts/.<id>.launch.lock, which no launch or commit
// could take, is removed when empty and set aside beside itself
// otherwise); the receipt (one that does not parse is RECEIPT_INVALID and
// nothing else is done); the active release: inside apps/<id>/
// (receipt.CheckInside, the rule every launch applies; links resolved; a
// record outside is PAYLOAD_OUTSIDE, nothing of it is read, and nothing is
// reclaimed, since the receipt can no longer say what apps/<id> must
// keep), payload/metadata/inventory.json, payload/piship.lock and
// release.json against the digests the receipt recorded at install
// (InventorySHA256, LockSHA256, ReleaseSHA256: a payload file and its
// inventory line rewritten together is caught here), every payload file
// against the inventory (payload.Verify), and the record's entry and
// command against the lock's (RECEIPT_MODIFIED: a receipt edited to run
// another payload file, which launch refuses too); the previous
// release's place, lock and record; the command shim(s); then the modes
// of everything that decides what runs (see "What decides what runs"). A shim that is exactly what
// ShimScript (ShimCmd) writes for another launcher or other homes is
// rewritten as a routine refresh (SHIM_OUTDATED); one with piship's
// marker but other content is SHIM_MODIFIED, a deleted one SHIM_MISSING,
// both rewritten; a file without the marker is SHIM_FOREIGN and left
// alone. When trust/<id>/ exists (receipt.TrustDir: the trusted TUF
// metadata), it reports each role's version and expiry (TUF, from
// stages/tuf's ReadTrustState) and warns (Warnings, not damage) of a
// timestamp or snapshot that expires within a week (TRUST_EXPIRING) or
// has expired (TRUST_EXPIRED): only the publisher can fix that, by
// refreshing the repository (piship repo refresh). A file there that does
// not read or parse is TRUST_INVALID, damage doctor does not repair: the
// next update re-fetches it and verifies it from the trusted root. No
// trust/<id>/ (every installation today: `piship update` does not write it
// yet) adds nothing to the report. It then reclaims as Reclaim does,
// which for a distribution with no receipt also removes its trust/<id>/
// (renamed to trust/.<id>.uninstalling-<rand> first) and what a killed
// uninstall left renamed there.
//
// The report (DoctorReport, schema piship-doctor/v1) keeps apart what was
// found (Found: damage, each {code, path, detail}), what was done about it
// and the routine refreshes (Repaired), and what was removed (Reclaimed).
// Every found item is damage whether or not it was repaired: the doctor
// stage fails with INTEGRITY_FAILED (unless fail_on_damage = false) and
// `piship doctor` exits 1, so a script notices that something had been
// changed; a healthy installation, or one with only routine refreshes and
// reclaiming or warnings, exits 0. Its JSON has stable camelCase keys and every list
// as an array, never null.
//
// What doctor does not check: release files other than release.json
// (checksums.txt, the SBOM and notices) against checksums.txt, and, in a
// release a piship before issue 29 installed (no executables recorded),
// whether an executable bit was added or removed.
//
// # What decides what runs
//
// Whoever can write any of these can replace what runs as the user, so
// their modes are held to what piship writes: no setuid, setgid or sticky
// bit, nobody but the owner may write (UnsafeMode), and in a version
// directory the executable bits install recorded. runSurface
// (surface.go) is the one list, which doctor checks (MODE_UNSAFE,
// MODE_MODIFIED) and repair restores:
//
//	<install home>/                     the home itself
//	receipts/, receipts/<id>.json       which version runs
//	apps/, apps/<id>/                   where the versions are
//	apps/<id>/<active>/, <previous>/    every file and directory (a rollback runs the previous)
//	trust/, trust/<id>.json, trust/<id>/   what an update accepts
//	launcher/                           the kept piship-launch the shims run, and its stamp
//	<bin home>/<command>[.cmd]          the command shim(s), when they are piship's shims of id
//
// The bin home and the state home themselves are not on it: they are
// shared with the user's other programs, and piship did not necessarily
// make them.
//
// Install records which files it wrote executable (receipt
// Release.Executables: 0755 less the umask; every other file 0644, every
// directory 0755). Repair restores a mode by clearing the unsafe bits and
// setting or clearing the executable bits as recorded where the file is
// readable (restoredMode: what the umask took away stays away), one
// chmod per path, so a killed repair leaves each mode the old or the
// restored one; it needs no source for it, and a live lease does not stop
// it (a mode is not content a running process has loaded). An older
// receipt without the record gets the unsafe bits cleared only.
//
// # Installing a version that is installed
//
// A recorded release of the same bytes is reused only when it passes the
// checks doctor applies to the active release (recordedDamage: its
// digests, the release rules, its record against its lock, the modes of
// its directory). A damaged one is installed again: its directory is
// moved aside as any directory standing at the version's path
// (InstallResult.Damaged says what was found) and reclaimed after the
// commit, so `piship install` of the same archive clears what doctor
// found, as doctor advises.
//
// # Locks
//
// Install, rollback, doctor and uninstall hold receipts/.<id>.install.lock
// for their whole run, so a doctor never reclaims what an install is
// writing; each takes the launch gate only for the moment it changes the
// receipt. An update holds it while it reads the receipt and the active
// lock (update_check), lets it go while it fetches the channel and the
// archive, and its install takes it again and decides anew (see
// Concurrent commands). Doctor (and the reclaim after an install) removes
// receipts/.<id>.json.tmp-*, the temporary receipt of a killed commit:
// every receipt writer holds this lock, so any it sees is stale.
//
// Errors carry the codes users see: INTEGRITY_FAILED, CONFIG_INVALID,
// CONFIG_UNAVAILABLE, ROLLBACK_FAILED, UPDATE_FAILED (see receipt.Error).
package home
