// Package tuf is piship's update trust on The Update Framework, through
// go-tuf v2 (github.com/theupdateframework/go-tuf/v2): the repository a
// publisher signs (repo.go) and the client an installation updates with
// (client.go). Signing, canonical JSON and the client workflow are
// go-tuf's; this package decides the layout, the roles' keys and expiry,
// how releases are named, and words go-tuf's refusals for users. It does
// not import the kind layer: the CLI and the update stage call it.
//
// # Repository layout
//
// A repository is one distribution's plain directory tree, servable by any
// static HTTP server or read as a directory:
//
//	metadata/<N>.root.json                 every root version; a client walks N+1, N+2 ... until one is missing
//	metadata/root.json                     a copy of the newest root, for people and tools that want the current one
//	metadata/<N>.targets.json              the releases (consistent snapshots: every version kept)
//	metadata/<N>.snapshot.json             the targets version in force
//	metadata/timestamp.json                the snapshot version in force: the commit point, written last
//	targets/<channel>/<sha256>.<archive>   a release archive under its consistent-snapshot name
//	targets/<channel>/<sha256>.<name>.notes.md  its release notes, when piship release wrote any (NotesPath)
//	targets/<channel>/<sha256>.<name>.from-<v>.delta  the delta from release <v> to it (DeltaName, repo add --deltas)
//
// Every file is written through a flushed temporary sibling and a rename
// (cache/atomicfs), and in dependency order: archives, targets, snapshot,
// then timestamp.json. A reader or a kill between two writes sees the
// previous state whole, since nothing names the new versioned files until
// timestamp.json does; old versions stay, so a client mid-update still
// finds the ones its timestamp names.
//
// # Keys
//
// Keys are Ed25519, in the format `piship keygen` writes
// (signkey.WritePrivateKey: PKCS#8 PEM, mode 0600, a Key-Id header naming
// the key for people). ReadKey reads them; TUF metadata
// names a key by TUF's key id instead (Key.TUFKeyID, the sha256 of its
// canonical public-key JSON), which revocation takes. One key format for
// the whole tool means one keygen, one place where keys are checked.
// Signing is offline for root and targets (a threshold of people or
// hardware) and online for snapshot and timestamp (the CI job that runs
// Refresh); the thresholds are Init's and change only by a root rotation.
//
// # Channels: custom fields, not delegated roles
//
// A release is a top-level target at <channel>/<archive> with the custom
// object {version, target, lockSha256, channel} (a v1 archive) or
// {version, platform, lockSha256, channel, format} (a v2 archive, a delta
// with fromVersion, fromTree and toTree besides: see Custom, targets.go,
// for why the platform moved). Channels are not
// delegated targets roles because the client must list a channel's
// releases to pick the newest, and go-tuf's updater resolves delegations
// only by looking up one known path (GetTargetInfo), never by listing;
// because piship signs every channel with the same release key today, so
// a delegation per channel would add one metadata file, one key set and
// one snapshot entry per channel for no separation anyone uses; and
// because the path prefix keeps a release promoted to a second channel a
// distinct target without re-packing it. If channels ever need separate
// keys (a nightly key that cannot sign stable), a delegation per channel
// with the path pattern "<channel>/*" fits the same paths, and the client
// would then walk them per path.
//
// # Expiry
//
// DefaultExpiry: root 365 days, targets 90 days, snapshot 30 days,
// timestamp 14 days. The timestamp is the freshness signal: an installation
// refuses one that expired (an attacker replaying old metadata can keep it
// on old releases only until then), so it is short, and Refresh, which CI
// runs daily or weekly, re-signs snapshot and timestamp without a release.
// 14 days leaves a week's margin above doctor's one-week warning. Targets
// and root are re-signed by AddReleases and rotations; their longer expiry
// suits offline keys. A root that nothing rotated within its year must
// still be re-signed before it expires: RotateRoot with an empty
// RootChange writes root N+1 with the same keys and a new expiry.
//
// # Rotation
//
// RotateRoot writes root N+1, signed by signers holding a threshold of
// root N's root keys and of root N+1's; go-tuf verifies both before the
// file is written, so a rotation an installation would refuse is never
// published. When it changes the targets, snapshot or timestamp keys, those
// roles are re-signed with new versions by the new keys in the same call
// (checked before anything is written), so an installation that trusted
// root 1 updates through roots 2 and 3 without a new release.
// RotateTargetsKey and RevokeKey are rotations.
//
// TUF metadata names keys only by their ids; the names keygen gave them
// are kept beside metadata/ in KeyNamesFile (key-names.json), added to by
// every command that signs, for repo status. Clients never read it.
//
// # Client
//
// Update runs go-tuf's updater: the root chain walk (at most MaxRootWalk
// versions), timestamp, snapshot and targets, with the trusted metadata
// in the directory the caller gives (the install home's trust/<id>/,
// receipt.TrustDir, swapped in whole, see below; the update_check stage of
// `piship update` calls Update). The first update
// starts from the initial root (given, or the repository's
// metadata/1.root.json), whose sha256 must be the one the lock or
// --expect-root pins; later ones from the trusted root.json there. Files are
// read through stages/updatesource's Source (Sub, Fetch, FetchArchive), so the
// plain-http loopback rule, the redirect policy, the retries and the
// connect, header, idle and overall limits are the ones of today's
// channels. Update then lists the channel's releases for the platform
// target, picks the newest by semantic version, refuses one older than the
// active version, and downloads it into the caller's directory: go-tuf's
// length and hash check (TargetFiles.VerifyLengthHashes) over the bytes,
// then an atomic write. go-tuf's Fetcher returns a file whole, so an
// archive is held in memory while it is checked, bounded by its signed
// length (FetchArchive stops one byte past it).
//
// FetchRelease is the same client for `piship repair` when no archive of
// the installed release is kept: the refresh as with Check (the trusted
// metadata read, none written), then the target with the installed
// archive's sha256 downloaded and checked as Update's download is.
//
// With Check, go-tuf reads the trusted metadata and writes none
// (DisableLocalCache): a check reports what an update would do and changes
// nothing. Otherwise go-tuf works on a copy of the store beside it
// (trust/.<id>.updating-<rand>, StagePrefix), and once the refresh
// and the archive verified, the copy and trust/<id>/ are exchanged in one rename
// (RENAME_EXCHANGE on Linux) and the old store removed (store.go). With
// Defer (the update pipeline), the verified copy is left staged
// (Result.Stage) and the install stage commits it (CommitStaged) only once
// the release rules accepted the archive, putting the previous store back
// (RestoreStaged) if the receipt's commit fails: after a
// kill the store is the old one or the new one, never a new timestamp
// beside an old snapshot, and a refused update leaves it byte for byte as
// it was. Each update has a stage of its own named with its pid: the
// refresh runs outside the maintenance lock, so installs, doctor and other
// updates may run beside it; a stage whose process is gone (a kill) is
// removed by the next update, doctor and uninstall (StaleStages).
// Should the store still be mixed (copied in by hand), go-tuf verifies the
// local files against each other, drops one that no longer fits and
// fetches it. ReadTrustState reports the trusted versions and expiry for
// doctor; a role file there that cannot be read or is not that role's
// metadata is an error (doctor's TRUST_INVALID), not a missing role.
//
// # Interop
//
// go-tuf signs and go-tuf verifies in every other test, so a layout or
// encoding only go-tuf accepts would pass them. TestTufJSAgrees has
// tuf-js (npm tuf-js 3.1.0, pinned by testdata/tufjs/package-lock.json,
// run by testdata/tufjs/client.mjs on Node 20) read a repository this
// package wrote, served over loopback HTTP: it walks root 1 -> 2 (new
// root and targets keys), verifies timestamp, snapshot and targets,
// finds the release at <channel>/<archive> with its custom fields, and
// downloads targets/<channel>/<sha256>.<archive> (the specification's
// consistent-snapshot name, which tuf-js derives itself) with the
// archive's bytes; the archive tampered at the same length is refused,
// and so is a root 3 signed only by a new key.
// npm ci runs once per lock into the dev cache make test keeps Jaeger in
// ($PISHIP_DEV_CACHE, default ~/.cache/piship-dev, as tufjs-<lock
// sha256, 12 hex>), ~6 s cold; the test takes ~1 s warm. It needs node
// and npm on PATH and fails, not skips, without them.
//
// # Errors
//
// Refusals are UPDATE_FAILED with a Reason and a message naming the TUF
// check ("timestamp expired on ...", "snapshot version rolled back from 3
// to 2", "root 2 is not signed by a threshold of root 1's root keys") and
// the file or URL; network refusals keep stages/updatesource's codes
// (NETWORK_DENIED, UPDATE_FAILED with its timeout reasons). Misuse of the
// repository side is CONFIG_INVALID.
package tuf
