package home

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/contentstore"
	"piship.dev/piship/stages/home/receipt"
	"piship.dev/piship/stages/stage/errcode"
)

// OpenStore is contentstore.Open with its errors' codes: CONFIG_INVALID for
// a PISHIP_STORE value it refuses, CONFIG_UNAVAILABLE for a cache home it
// cannot find.
func OpenStore(getenv func(string) string) (*contentstore.Store, error) {
	s, err := contentstore.Open(getenv)
	if err == nil {
		return s, nil
	}
	var me *contentstore.ModeError
	if errors.As(err, &me) {
		return nil, errcode.Newf(errcode.ConfigInvalid, "%w", err)
	}
	return nil, errcode.Newf(errcode.ConfigUnavailable, "%w", err)
}

// Options are what every operation of this package shares.
type Options struct {
	Homes receipt.Homes
	// Launcher is the absolute path of the binary the command shim
	// executes: the piship binary (the shim runs `piship launch ID -- ARGS`)
	// or the dedicated launcher named piship-launch[.exe] (the shim runs
	// `piship-launch ID -- ARGS`). "" means os.Executable().
	Launcher string
	// LauncherSource is the piship-launch beside this binary that Launcher
	// keeps a copy of (KeepLauncher, CheckKeptLauncher); "" when there is
	// none. ForEnv finds it once per operation.
	LauncherSource string
	// Log receives warnings and notices; nil discards them.
	Log io.Writer
	// Progress receives the lines about what an operation is doing and
	// did (extracting, activated, restored, rolled back): what a command
	// prints as its own result, so a consumer command shows them only
	// with --progress. nil: Log.
	Progress io.Writer
	// GateWait bounds the wait for the launch gate (receipt.DefaultGateWait
	// when 0); LockWait that for the maintenance lock
	// (receipt.DefaultMaintenanceWait when 0).
	GateWait, LockWait time.Duration
	// Renamer renames directories, shims and the receipt (nil:
	// atomicfs.DefaultRenamer(atomicfs.InstallDelays), which retries on Windows only).
	Renamer *atomicfs.Renamer
	// Now is the clock of the receipt's times (nil: time.Now).
	Now func() time.Time
	// Store, if set, is the content-addressed store: an archive install
	// places small node_modules files by linking its objects and keeps the
	// ones it writes (directory installs copy every file), and doctor
	// removes the objects nothing links any more.
	Store *contentstore.Store
	// Getenv is the environment doctor judges the launch by (Pi's agent
	// directory, PATH); nil is os.Getenv (setDefaults).
	Getenv func(string) string
}

func (o *Options) setDefaults() {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Progress == nil {
		o.Progress = o.Log
	}
	if o.Renamer == nil {
		r := atomicfs.DefaultRenamer(atomicfs.InstallDelays)
		o.Renamer = &r
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
}

// maintain is how a command that changes (or checks) the installation of
// id starts: defaults set, the id and the homes checked, and the
// maintenance lock of id taken; unlock releases it.
func (o *Options) maintain(ctx context.Context, id string) (unlock func(), err error) {
	o.setDefaults()
	if err := receipt.CheckID(id); err != nil {
		return nil, err
	}
	if err := o.Homes.Check(); err != nil {
		return nil, err
	}
	return receipt.TakeMaintenance(ctx, o.Homes.Install, id, o.LockWait)
}

func (o *Options) logf(format string, args ...any) { fmt.Fprintf(o.Log, format+"\n", args...) }

// progressf writes a line about what the operation is doing or did
// (Options.Progress).
func (o *Options) progressf(format string, args ...any) {
	w := o.Progress
	if w == nil {
		w = o.Log
	}
	fmt.Fprintf(w, format+"\n", args...)
}

// launcher returns the piship binary for the shims.
func (o *Options) launcher() (string, error) {
	l := o.Launcher
	if l == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", receipt.Errorf(receipt.CodeUnavailable, "cannot find the piship executable for the command shim: %w", err)
		}
		l = exe
	}
	abs, err := filepath.Abs(l)
	if err != nil {
		return "", receipt.Errorf(receipt.CodeConfigInvalid, "launcher %q: %v", l, err)
	}
	return abs, nil
}

// InstallOptions describe one install.
type InstallOptions struct {
	Options
	// Delta, set by an update that downloaded a delta instead of the
	// archive, builds the release from the installed version it starts
	// from (Source is then unused).
	Delta *DeltaSource
	// Source is a release archive (<id>-<version>-<target>.tar.zst), a
	// release directory (with release.json) or a payload directory (with
	// metadata/inventory.json).
	Source string
	// SHA256 is the expected archive digest (--sha256, or the signed
	// channel entry's); optional. The sidecar <Source>.sha256, when present,
	// must agree too.
	SHA256 string
	// ExpectKey, when set ("sha256:<hex>"), is a key fingerprint the
	// release's lock must trust for updates (--expect-key): installing a
	// release that would accept channels signed by other keys only is
	// refused before anything is activated.
	ExpectKey string
	// ID and Version, when set, are what the source must be; for an archive
	// they replace the parse of its name (an update passes the signed
	// entry's, whatever the download is called).
	ID, Version string
	// Channel is recorded in the release record (default: release.json's).
	Channel string
	// Writers is the number of parallel file writers (default 8).
	Writers int
	// FreeSpace returns the bytes free for an unprivileged user on the file
	// system holding dir (nil: the platform's; tests inject it).
	FreeSpace func(dir string) (int64, error)
	// LauncherBytes is what the caller writes into the install home beside
	// the release (the launcher it keeps, see BeforeCommit): the free
	// space check counts it.
	LauncherBytes int64
	// HostTarget is the target this machine runs (default
	// platform.HostTarget()); a release for another target is refused.
	HostTarget string
	// BeforeCommit, if set, runs just before the commit (which writes the
	// shims and then the receipt); its error fails the install with
	// nothing activated. The install stage waits there for the launcher
	// it keeps, which it copies while the release is extracted.
	BeforeCommit func() error
	// Update, set by an update (nil for an install, which may install an
	// older version on purpose), decides whether the release may replace
	// the active version: Install calls it with the active version of the
	// receipt it reads after taking the maintenance lock ("" when none),
	// before anything is written, so a version another command activated
	// since the update chose its release is seen. An error wrapping
	// ErrUpToDate makes the install a no-op (InstallResult.UpToDate); any
	// other error refuses it. With Update set and ID given, a missing
	// receipt is UPDATE_FAILED (the distribution was uninstalled meanwhile)
	// and the download (Source) is removed.
	Update func(active string) error
	// LockSHA256 is the lock digest the signed TUF target of an update
	// claims (its custom lockSha256; "" compares nothing): the release's
	// lock must have it (release rule signed-entry), on a fresh extraction
	// and on a reused release alike.
	LockSHA256 string
	// TrustStage is the verified TUF store an update's refresh left staged
	// beside trust/<ID>/ (tuf.UpdateOptions.Defer). Install commits it
	// (tuf.CommitStaged) only once it accepted the archive, just before
	// the receipt, and puts the previous store back if the receipt's
	// commit fails; on any refusal it is removed, and so is the refused
	// download (Source, in apps/<id>/.downloads): a refused update leaves
	// trust/<id>/ and the home as they were.
	TrustStage string
}

// InstallResult describes an install.
type InstallResult struct {
	ID, Version, Target, Command string
	// Dir is the version directory and Payload its payload directory.
	Dir, Payload string
	// Source is receipt.SourceArchive, SourceRelease or SourcePayload.
	Source        string
	ArchiveSHA256 string
	Files         int
	Bytes         int64
	// Linked counts the files placed by linking a stored object.
	Linked int
	// MovedAside is the .retained-* directory a directory standing at
	// the version's path was moved to ("" when none).
	MovedAside string
	// Reused is set when a recorded release with the same digest was
	// activated instead of writing anything.
	Reused bool
	// Damaged is what the check of a recorded release of the same bytes
	// found (doctor's lines): it was installed again instead of reused.
	Damaged []string
	// Previous is the version that was active before ("" for a first install).
	Previous string
	Shims    []string
	Warnings []string
	// UpToDate is set when Update found the active version already the
	// one to install (Version is then the active version): nothing was
	// written.
	UpToDate bool
	// FromDelta is set when the release was built from the installed
	// version and InstallOptions.Delta; DeltaFallback says why the delta
	// was not used when the archive was installed instead ("" otherwise).
	FromDelta     bool
	DeltaFallback string
}

// DeltaFallbackEvent is the span event an update records when it takes
// the release archive instead of a delta published for it, with the
// reason (piship.delta.reason) and the version it would have started
// from (piship.delta.from).
const DeltaFallbackEvent = "delta fallback"

// DeltaSource is an update's delta, downloaded instead of the release
// archive (tuf.Result.Delta): Install builds the new version directory
// from the installed version From and the delta (stages/delta), every
// file verified, and installs the release archive instead (Fallback),
// once and saying so, when anything does not match.
type DeltaSource struct {
	// Path is the downloaded delta (in apps/<id>/.downloads).
	Path string
	// From is the installed version the delta starts from.
	From string
	// ArchiveSHA256 is the signed digest of the release's archive, which
	// the receipt records (repair fetches that archive by it).
	ArchiveSHA256 string
	// Fallback downloads the release archive, checked against its signed
	// length and digest, and returns its path.
	Fallback func(ctx context.Context) (string, error)
}

// ForEnv is the one way a consumer command or kind builds its Options: the
// homes getenv names, the launcher the command shims run (the piship-launch
// kept in the install home when one stands beside this binary, it starts in
// ~2 ms; else this binary's `launch` command), warnings to log and the
// lines about what it is doing to progress. Only install keeps the launcher
// there (KeepLauncher); the others just name it.
func ForEnv(getenv func(string) string, log, progress io.Writer) (Options, error) {
	homes, err := receipt.ResolveHomes(getenv)
	if err != nil {
		return Options{}, err
	}
	o := Options{Homes: homes, Log: log, Progress: progress, Getenv: getenv}
	if o.LauncherSource = launcherBeside(); o.LauncherSource != "" {
		o.Launcher = keptLauncher(o.LauncherSource, homes.Install)
	} else if exe, err := os.Executable(); err == nil {
		o.Launcher = exe
	}
	return o, nil
}
