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
//	apps/<id>/<version>/                      an installed release, immutable: release.json, payload/, ...
//	apps/<id>/.retained-<version>-<rand>/     a directory set aside by one rename
//	apps/<id>/.runtime-leases/<version>/<rand>.json   one per running launch
//	apps/<id>/.downloads/                     update downloads
//	apps/.<id>.uninstalling-<rand>/           apps/<id> renamed by an uninstall, being removed
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
// Errors carry the codes users see (see Error): INTEGRITY_FAILED,
// CONFIG_INVALID, CONFIG_UNAVAILABLE, ROLLBACK_FAILED, UPDATE_FAILED.
package receipt
