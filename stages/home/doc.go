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
// <archive>.sha256 sidecar beside it, every payload file's digest with
// payload/metadata/inventory.json (the exact set), the inventory's digest
// and the lock's with release.json, every other release file with
// checksums.txt, and the identity (id, version, target) of the archive's
// name with release.json, the lock and metadata/target.json. No file is
// read a second time for this: the digests come from the extraction. A
// mismatch is INTEGRITY_FAILED. On every failure after the first byte is
// written (extraction, the checks, and the commit: a shim in the way, no
// space for the launcher or the receipt) the new directory, never
// referenced, is set aside with one rename to .retained-<version>-<rand>
// and removed within 1.5 s, so retries never pile up copies; what that
// budget leaves doctor reclaims. A failed first install leaves no
// apps/<id>.
//
// The id and version of an archive come from its name,
// <id>-<version>-<target>.tar.gz (InstallOptions.ID and Version override
// it: an update passes the signed channel entry's), because release.json
// comes after payload/ in the archive and the destination must be known
// before the first byte is written; release.json must then agree.
//
// A directory already standing at apps/<id>/<version> is moved aside with
// one rename to apps/<id>/.retained-<version>-<rand> (never deleted on this
// path, never overwritten). A recorded release is reused instead, with no
// file written, when its recorded archive digest equals the expected one
// (or, for a directory, its inventory digest equals the source's). Free
// space below twice the archive (or directory) size is refused first
// (CONFIG_UNAVAILABLE).
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
// UPDATE_FAILED with the download removed. An explicit install of an
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
