// Package receipt is the small, standard-library-only core of an
// installation that both the installer (package home) and the launch hot
// path (package launch) share: where things live, the receipt that makes a
// version active, the launch gate, runtime leases and the error codes users
// see. (Process liveness is package proc's, the rename policy and atomic
// writes cache/atomicfs's, the host target package platform's.)
//
// # Homes
//
// Three homes, resolved by ResolveHomes from the environment:
//
//	PISHIP_INSTALL_HOME  default ~/.local/share/piship   receipts, trust state, payloads
//	PISHIP_BIN_HOME      default ~/.local/bin            command shims
//	PISHIP_STATE_HOME    default ~/.piship               the root of per-distribution state: <root>/<id>/
//
// PISHIP_STATE_HOME names the root, not one distribution's directory: the
// state of distribution <id> is Homes.StateDir(id) = <root>/<id>. One
// variable then serves every installed distribution, and the default
// (~/.piship/<id>) is the original's. The homes must not overlap: none may
// equal another or lie inside another (CONFIG_INVALID naming both), since an
// uninstall or purge of one would otherwise remove the others' files.
//
// # Layout of the install home
//
//	receipts/<id>.json                        the receipt: the only thing that makes a version active
//	receipts/.<id>.json.tmp-<rand>            a receipt being written (a kill leaves it; doctor removes it)
//	receipts/.<id>.launch.lock                the launch gate (held for milliseconds)
//	receipts/.<id>.install.lock               the maintenance lock: install, update, rollback, doctor, uninstall
//	trust/<id>.json                           channel trust state (written by update, not here)
//	trust/<id>/                               trusted TUF metadata (TrustDir): root.json, timestamp.json, snapshot.json, targets.json
//	trust/.<id>.uninstalling-<rand>/          trust/<id>/ renamed by an uninstall, being removed
//	launcher/piship-launch[.exe], .stamp      the launcher the command shims run, kept by install (LauncherDir)
//	apps/<id>/<version>/                      an installed release, immutable: release.json, payload/, ...
//	apps/<id>/.retained-<version>-<rand>/     a directory set aside by one rename
//	apps/<id>/.runtime-leases/<version>/<rand>.json   one per running launch
//	apps/<id>/.downloads/                     update downloads
//	apps/.<id>.uninstalling-<rand>/           apps/<id> renamed by an uninstall, being removed
//
// and, outside it, where a launch registers when the install home refuses
// its lease (see "A home that refuses the lease"):
//
//	$XDG_RUNTIME_DIR/piship/leases/<id>-<key>/<version>/<rand>.json
//	<os.TempDir()>/piship-<uid>/leases/<id>-<key>/<version>/<rand>.json
//
// trust/<id>/ is go-tuf's local metadata store, as stages/tuf's Update
// writes it (each file through a temporary file and a rename, so after a
// kill each is the old or the new version). It will replace the receipt's
// channel sequence floor; `piship update` is not wired to TUF yet, so
// today nothing but tests writes there. Doctor reports its versions and
// expiry when it exists; uninstall removes it whether or not it purges
// (a reinstall starts again from the root its lock pins), and doctor
// removes the one of a distribution that is not installed.
//
// # Receipt
//
// Write replaces the receipt through a temporary sibling that is flushed,
// renamed over the receipt and followed by a flush of the directory: it is
// the only file of an installation that is flushed, because it is the
// commit point. Everything it points at was written before it, unflushed;
// a crash before the rename leaves the previous receipt, and so the
// previous installation, in force.
//
// # Where a release lives
//
// CheckInside is the one rule of where an installed release may be: a
// record's Dir and Payload must lie inside apps/<id>/ (a .retained-*
// directory there included), after cleaning and resolving links, and the
// payload inside the Dir. Launch refuses a record outside it
// (INTEGRITY_FAILED, before reading anything of it) and doctor reports it.
//
// # Gate and leases
//
// TakeGate takes an exclusive lock on receipts/.<id>.launch.lock (flock on
// Unix, LockFileEx on Windows) with a bounded wait. A launch holds it only
// to read the receipt and register its lease; an install only to commit.
// A lease is a small JSON file naming the launching process by pid, host,
// start time and a random instance; it is not flushed, since it only means
// something while its process runs. LiveLeases decides liveness (with
// proc.Exists and proc.StartTime) without
// starting any process: the pid must exist (signal 0 on Unix, OpenProcess
// on Windows) and, where the system gives a process's start time for free
// (/proc on Linux, GetProcessTimes on Windows), that start must be within
// 30 s of the recorded one; otherwise the pid was reused and the lease is
// dead.
//
// # A home that refuses the lease
//
// A full or read-only install home must not stop the installed app from
// starting, nor let an uninstall or reclaim remove a version that runs.
// A launch therefore never fails for want of registering; it registers in
// the first place that takes it, and ListLeases (which uninstall, install
// and doctor's reclaim all use) looks in every one of them:
//
//  1. apps/<id>/.runtime-leases/, as always;
//  2. a fallback lease (WriteLease, FallbackLeaseRoots), in
//     $XDG_RUNTIME_DIR/piship or else <os.TempDir()>/piship-<uid>, under
//     <id>-<key>, key a hash of the install home's absolute path and the
//     id, so two homes never share a directory. The directory must be
//     this user's and writable by nobody else (one another user planted
//     in a shared /tmp is neither written nor read: they could delete the
//     leases in it). The state home is not a fallback: it usually lies on
//     the install home's file system (both under ~), so the fault that
//     refused the lease refuses it too, where the runtime directory and
//     /tmp are usually a tmpfs;
//  3. on Linux, a scan of /proc (proc.Referencing): a process whose
//     command line, executable or working directory lies in
//     apps/<id>/<version>/ or a .retained-<version>-* directory holds
//     that version as "possibly in use" (a Lease with no Path). It needs
//     nothing written anywhere, so it also covers a launch that could
//     register nowhere, an uninstall run with another $XDG_RUNTIME_DIR or
//     $TMPDIR than the launch had, and node started by hand on a payload.
//     It costs a few reads of /proc per process, in the maintenance
//     commands only, never in a launch.
//
// Both, because each covers what the other cannot. The realistic cases
// are a disk that fills and is freed later and a read-only home remounted
// read-write: in both, the uninstall or reclaim runs on a writable home
// while a launch that could not write there still runs. The fallback
// lease is the portable answer (macOS and Windows have no /proc) and
// names the launching process exactly; the scan is the answer when the
// fallback fails too (/tmp on the same full disk, no runtime directory)
// or lies where the uninstall does not look. A run that could write no
// lease at all says so once on stderr ("<id>: cannot register this run
// (...); an uninstall or reclaim meanwhile may remove the running
// version"): off Linux nothing protects it. A run registered in a
// fallback place is registered and says nothing, so an app on a home
// that is read-only by design (an image) starts without noise.
//
// The gate is opened read-only where the lock file exists but the file
// system refuses writing (flock and LockFileEx accept that), so a
// read-only home still orders launches against a remount's commits. A
// gate that cannot be opened at all (ErrLockUnopenable: missing on a
// read-only home, a directory in its place) does not stop a launch: the
// receipt is replaced atomically, so it is read without the gate; an
// uninstall or reclaim deciding in the same milliseconds might then miss
// the run's lease, which is the price of starting at all.
//
// FaultHook lets tests make lease and lock creates fail as a full or
// read-only file system does, where file modes cannot (root).
//
// Errors carry the codes users see (see Error): INTEGRITY_FAILED,
// CONFIG_INVALID, CONFIG_UNAVAILABLE, ROLLBACK_FAILED, UPDATE_FAILED.
package receipt
