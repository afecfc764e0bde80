package tuf

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/config"
	"github.com/theupdateframework/go-tuf/v2/metadata/trustedmetadata"
	"github.com/theupdateframework/go-tuf/v2/metadata/updater"

	"piship.dev/piship/cache/atomicfs"
	"piship.dev/piship/stages/semver"
	"piship.dev/piship/stages/updatesource"
)

// Bounds of a client update: the root walk as REFERENCE.md's trust root
// bounds it, the metadata sizes well above what a distribution's
// repository holds (a timestamp is under 1 KiB, a root a few KiB) and far
// below what would hurt.
const (
	MaxRootWalk        = 64
	MaxRootBytes       = 64 << 10
	MaxTimestampBytes  = 16 << 10
	MaxSnapshotBytes   = 1 << 20
	MaxTargetsBytes    = 4 << 20
	maxDelegationsWalk = 8
)

// UpdateOptions are one update of one installation.
type UpdateOptions struct {
	// Repository is the repository's root (holding metadata/ and
	// targets/): a directory, a file:// URL, an https:// URL or an
	// http:// URL of a loopback host (updatesource.OpenSource's rule).
	Repository string
	// TrustDir is the installation's trusted metadata (trust/<id>/ of the
	// install home), created when missing.
	TrustDir string
	// InitialRoot and ExpectRootSHA256 (hex, "sha256:" optional) are the
	// first install's trust anchor, used when TrustDir has no root.json;
	// without InitialRoot the repository's metadata/1.root.json is fetched
	// and must have that digest.
	InitialRoot      []byte
	ExpectRootSHA256 string
	// Channel and Target select the releases (custom channel and target).
	Channel, Target string
	// Active is the installed version ("" when none): an older newest
	// release is refused, the same one is UpToDate.
	Active string
	// BaseTree is the tree digest of the active release as installed
	// (receipt.Release.TreeSHA256; "" when unknown, and no delta is
	// taken): a delta whose base is that tree is downloaded instead of
	// the archive.
	BaseTree string
	// DownloadDir receives the archive (not used with Check).
	DownloadDir string
	// Check verifies the metadata and picks the release, changing
	// nothing: the trusted metadata is read but not written (go-tuf's
	// DisableLocalCache), and nothing is downloaded.
	Check bool
	// Defer leaves the verified store staged when a release was
	// downloaded: Result.Stage names it, and the caller commits it
	// (CommitStaged) only once it accepted the archive, or removes it.
	// An up-to-date result commits as without Defer (there is no archive
	// to accept).
	Defer bool
	// Client, Limits and Dial reach the network (updatesource.SourceOptions).
	Client *http.Client
	Limits updatesource.Limits
	Dial   updatesource.Dialer
	// Now is the reference time for expiry (zero: the clock); tests only.
	Now time.Time
}

// Result is what Update found and did.
type Result struct {
	// Release is the chosen target's custom fields, TargetPath its path,
	// Length and SHA256 what the targets role signs for it.
	Release    Custom
	TargetPath string
	Length     int64
	SHA256     string
	// Archive is the downloaded file ("" with Check or UpToDate, or when
	// a delta was downloaded instead).
	Archive string
	// Delta is the delta downloaded instead of the archive (with Check:
	// the one that would be), nil when none was taken; DeltaSkipped says
	// why a delta published for this update was not taken ("" when none
	// was published from the active version).
	Delta        *DeltaTarget
	DeltaSkipped string
	// Stage is the verified trusted store left for the caller to commit
	// (UpdateOptions.Defer and an archive downloaded; else "").
	Stage string
	// UpToDate: the newest release is the active version.
	UpToDate bool
	// Notes are the chosen release's notes (its NotesPath target), fetched
	// and verified against the targets role before the archive; "" when
	// the repository publishes none for it.
	Notes string
	// The trusted versions after the update, and the timestamp's expiry.
	RootVersion, TimestampVersion, SnapshotVersion, TargetsVersion int64
	TimestampExpires                                               time.Time
}

// fetchPrefix is the base of the URLs go-tuf's updater builds; the
// fetcher maps them back onto the channel Source, so the updater never
// reaches the network itself and messages show the real location.
const fetchPrefix = "piship-tuf://repository/"

// Update brings the installation's trusted metadata up to date from the
// repository with go-tuf's updater and picks and downloads the newest
// release of the channel for the target (see the package comment).
func Update(ctx context.Context, o UpdateOptions) (*Result, error) {
	if err := o.check(!o.Check); err != nil {
		return nil, err
	}
	if o.Active != "" {
		if _, err := semver.Parse(o.Active); err != nil {
			return nil, configErr("the active version: %v", err)
		}
	}
	// go-tuf works on a copy of the store, swapped in whole once the
	// refresh and the archive verified (store.go); a check reads the store itself.
	local := o.TrustDir
	if !o.Check {
		var err error
		if local, err = newStage(o.TrustDir); err != nil {
			return nil, updateErr(ReasonFetch, err, "cannot copy the trusted metadata in %s to a new store beside it: %v", o.TrustDir, err)
		}
		defer func() {
			if local != "" {
				os.RemoveAll(local) // gone after the commit; a refusal drops it
			}
		}()
	}
	up, f, err := refresh(ctx, o, local)
	if err != nil {
		return nil, err
	}
	res, err := pick(ctx, o, f, up)
	if err != nil || o.Check {
		return res, err
	}
	// Committed only once the archive verified too: any refusal leaves
	// the trusted store as it was. With Defer, the caller commits it once
	// the archive is accepted as a release too.
	if o.Defer && !res.UpToDate {
		res.Stage, local = local, ""
		return res, nil
	}
	if err := commitStage(o.TrustDir, local); err != nil {
		return nil, updateErr(ReasonFetch, err, "cannot replace the trusted metadata in %s by the verified store %s: %v; the old store is kept, run the update again", o.TrustDir, local, err)
	}
	return res, nil
}

// check refuses options Update and FetchRelease cannot work with: a bad
// channel name, no target, no trust directory, and no download
// directory when one is needed.
func (o UpdateOptions) check(download bool) error {
	if msg := updatesource.CheckName(o.Channel); msg != "" {
		return configErr("channel %q: %s", o.Channel, msg)
	}
	switch {
	case o.Target == "":
		return configErr("no platform target given (e.g. linux-x64)")
	case o.TrustDir == "":
		return configErr("no trust directory given: the install home's trust/<id>/ holds an installation's TUF metadata")
	case download && o.DownloadDir == "":
		return configErr("no download directory given")
	}
	return nil
}

// refresh is the one TUF client setup Update and FetchRelease share:
// go-tuf's updater over the repository's fetcher and piship's bounds,
// started from the trusted root (trustedRoot), its store in local (a
// staged copy, or with o.Check the trusted store itself, read and never
// written), refreshed through root, timestamp, snapshot and targets.
func refresh(ctx context.Context, o UpdateOptions, local string) (*updater.Updater, *fetcher, error) {
	src, err := updatesource.OpenSourceWith(o.Repository, updatesource.SourceOptions{Client: o.Client, Limits: o.Limits, Dial: o.Dial})
	if err != nil {
		return nil, nil, err
	}
	f := &fetcher{ctx: ctx, src: src, subs: map[string]*updatesource.Source{}, fetched: map[string][]byte{},
		opts: updatesource.SourceOptions{Client: o.Client, Limits: o.Limits, Dial: o.Dial}}
	rootBytes, err := trustedRoot(o, f)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.New(fetchPrefix+"metadata", rootBytes)
	if err != nil {
		return nil, nil, configErr("TUF client: %v", err)
	}
	cfg.RemoteMetadataURL = fetchPrefix + "metadata/"
	cfg.RemoteTargetsURL = fetchPrefix + "targets/"
	cfg.LocalMetadataDir = local
	cfg.LocalTargetsDir = local // go-tuf's own target cache is not used: the caller writes the archive
	cfg.Fetcher = f
	cfg.DisableLocalCache = o.Check // go-tuf still reads the trusted metadata, and writes none
	cfg.MaxRootRotations = MaxRootWalk
	cfg.MaxDelegations = maxDelegationsWalk
	cfg.RootMaxLength, cfg.TimestampMaxLength = MaxRootBytes, MaxTimestampBytes
	cfg.SnapshotMaxLength, cfg.TargetsMaxLength = MaxSnapshotBytes, MaxTargetsBytes
	up, err := updater.New(cfg)
	if err != nil {
		return nil, nil, updateErr(ReasonMalformed, err, "the trusted root for %s is not usable TUF metadata (%v): remove %s to start again from the pinned root", src, err, filepath.Join(o.TrustDir, "root.json"))
	}
	if !o.Now.IsZero() {
		up.UnsafeSetRefTime(o.Now)
	}
	if err := up.Refresh(); err != nil {
		return nil, nil, f.explain(err, up)
	}
	return up, f, nil
}

// trustedRoot is the root the walk starts from: TrustDir/root.json,
// which go-tuf wrote after verifying it, or the pinned initial root
// (InitialRoot, else the repository's metadata/1.root.json), whose sha256
// must be the pinned one.
func trustedRoot(o UpdateOptions, f *fetcher) ([]byte, error) {
	p := filepath.Join(o.TrustDir, "root.json")
	if b, err := atomicfs.ReadRegular(p, 0); err == nil {
		return b, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, updateErr(ReasonFetch, err, "cannot read the trusted root %s: %v", p, err)
	}
	want := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(o.ExpectRootSHA256)), "sha256:")
	if len(want) != 64 || strings.Trim(want, "0123456789abcdef") != "" {
		return nil, configErr("%s has no trusted root, and the expected root digest %q is not sha256:<64 hex digits>: a first update pins the distribution's root; take its digest from piship.lock or the publisher", o.TrustDir, o.ExpectRootSHA256)
	}
	root, where := o.InitialRoot, "the initial root given for "+f.src.String()
	if len(root) == 0 {
		// The pin is what makes these bytes trusted, not where they came from.
		b, err := f.DownloadFile(fetchPrefix+"metadata/1.root.json", MaxRootBytes, 0)
		if err != nil {
			return nil, f.explain(err, nil)
		}
		root, where = b, f.location("metadata/1.root.json")
	}
	if got := RootSHA256(root); got != want {
		return nil, updateErr(ReasonRootPin, nil, "%s has sha256:%s, the pinned root is sha256:%s: this is another distribution's repository or its root was replaced; nothing was trusted. Check --expect-root or the lock against the publisher's root", where, got, want)
	}
	if o.Check {
		return root, nil // nothing is written, so no directory is made
	}
	if err := os.MkdirAll(o.TrustDir, 0o700); err != nil {
		return nil, updateErr(ReasonFetch, err, "cannot make %s: %v", o.TrustDir, err)
	}
	return root, nil
}

func pick(ctx context.Context, o UpdateOptions, f *fetcher, up *updater.Updater) (*Result, error) {
	tm := up.GetTrustedMetadataSet()
	res := &Result{
		RootVersion: tm.Root.Signed.Version, TimestampVersion: tm.Timestamp.Signed.Version,
		SnapshotVersion: tm.Snapshot.Signed.Version, TargetsVersion: tm.Targets[metadata.TARGETS].Signed.Version,
		TimestampExpires: tm.Timestamp.Signed.Expires,
	}
	var best *metadata.TargetFiles
	var bestC Custom
	var bestV semver.Version
	for p, tf := range up.GetTopLevelTargets() {
		if tf.Custom == nil {
			continue // not a piship release
		}
		var c Custom
		if err := json.Unmarshal(*tf.Custom, &c); err != nil {
			return nil, updateErr(ReasonMalformed, err, "target %s of %s has custom fields piship cannot read (%v): the repository was not made by piship's TUF repository commands", p, f.src, err)
		}
		if c.Channel != o.Channel || c.For() != o.Target || formatRank(c.ArchiveFormat()) < 0 {
			continue // another channel or platform, a delta, or a format this piship does not read
		}
		if !plainTarget(p, c.Channel) {
			return nil, updateErr(ReasonMalformed, nil, "target %s of %s says channel %s but is not a plain file name under %s/: the repository was not made by piship's TUF repository commands", p, f.src, c.Channel, c.Channel)
		}
		v, err := semver.Parse(c.Version)
		if err != nil {
			return nil, updateErr(ReasonMalformed, err, "target %s of %s: %v", p, f.src, err)
		}
		// The newest version; of one version published in several
		// formats, the one this piship prefers (ReadFormats).
		if best == nil || cmp.Or(semver.Compare(v, bestV), formatRank(bestC.ArchiveFormat())-formatRank(c.ArchiveFormat())) > 0 {
			best, bestC, bestV = tf, c, v
			best.Path = p
		}
	}
	if best == nil {
		return nil, updateErr(ReasonNoRelease, nil, "%s has no release on channel %s for target %s (targets version %d): check the channel name and the platform, or ask the publisher to add one", f.src, o.Channel, o.Target, res.TargetsVersion)
	}
	res.Release, res.TargetPath, res.Length = bestC, best.Path, best.Length
	res.SHA256 = hex.EncodeToString(best.Hashes["sha256"])
	if o.Active != "" {
		active, _ := semver.Parse(o.Active)
		switch c := semver.Compare(bestV, active); {
		case c < 0:
			return nil, updateErr(ReasonDowngrade, nil, "the newest release on channel %s of %s is %s, older than the active %s: a downgrade is refused (piship rollback returns to an installed version)", o.Channel, f.src, bestC.Version, o.Active)
		case c == 0:
			res.UpToDate = true
			return res, nil
		}
	}
	// The notes (a small target, verified like the archive) come before the
	// archive, so an update prints the notes of what it installed; a notes
	// target that fails verification stops it before anything is
	// downloaded, as the check does.
	notes, err := fetchNotes(up, f, NotesPath(bestC.Channel, path.Base(best.Path)))
	res.Notes = notes
	if err != nil {
		return res, err
	}
	if len(best.Hashes["sha256"]) == 0 {
		return nil, updateErr(ReasonMalformed, nil, "target %s of %s has no sha256: piship signs sha256 for every release", best.Path, f.src)
	}
	// A delta from the active version's tree to this release is
	// downloaded instead of the archive when the installed tree is
	// exactly its base; any other case takes the archive, and says why
	// when a delta was published.
	if d, why := pickDelta(up, o, bestC); d != nil {
		if o.Check {
			res.Delta = d
			return res, nil
		}
		err := download(ctx, f, d.TargetPath, d.Length, d.SHA256, o.DownloadDir, "delta", "")
		if err == nil {
			d.Path = filepath.Join(o.DownloadDir, path.Base(d.TargetPath))
			res.Delta = d
			return res, ctx.Err()
		}
		if ctx.Err() != nil {
			return nil, err
		}
		// A delta refused (other bytes, too long) or missing is never
		// read; the archive is downloaded instead, once, as if none had
		// been published, and the update says why.
		res.DeltaSkipped = fmt.Sprintf("the delta from %s could not be downloaded (%v): downloading the full archive", d.FromVersion, err)
	} else {
		res.DeltaSkipped = why
	}
	if o.Check {
		return res, nil
	}
	if err := download(ctx, f, best.Path, best.Length, res.SHA256, o.DownloadDir, "archive", bestC.RegistryBlob); err != nil {
		return nil, err
	}
	res.Archive = filepath.Join(o.DownloadDir, path.Base(best.Path))
	return res, ctx.Err()
}

// DeltaTarget is a delta target an update chose: what the targets role
// signs for it and its custom fields; Path is the download ("" with
// Check).
type DeltaTarget struct {
	TargetPath, SHA256 string
	Length             int64
	Custom
	Path string
}

// pickDelta finds the delta target that turns the active version's tree
// (o.BaseTree) into the chosen release c: same channel, platform,
// version and lock, from o.Active. With several (a repository that
// published one twice cannot, but another tool might) the smallest.
// nil and why not when one was published and cannot be used; nil and ""
// when none was.
func pickDelta(up *updater.Updater, o UpdateOptions, rel Custom) (*DeltaTarget, string) {
	var best *DeltaTarget
	why := ""
	for p, tf := range up.GetTopLevelTargets() {
		if tf.Custom == nil {
			continue
		}
		var c Custom
		if json.Unmarshal(*tf.Custom, &c) != nil || !c.IsDelta() || c.Channel != rel.Channel || c.For() != o.Target ||
			c.Version != rel.Version || c.LockSHA256 != rel.LockSHA256 || c.FromVersion != o.Active || o.Active == "" {
			continue
		}
		if !plainTarget(p, c.Channel) || len(tf.Hashes["sha256"]) == 0 {
			continue
		}
		switch {
		case o.BaseTree == "":
			why = fmt.Sprintf("a delta from %s is published, and the installed %s records no tree digest (installed by an older piship): downloading the full archive", c.FromVersion, o.Active)
			continue
		case o.BaseTree != c.FromTree:
			why = fmt.Sprintf("a delta from %s is published, and the installed tree of %s is not the tree it was made from (tree %s, the delta's %s): downloading the full archive", c.FromVersion, o.Active, short(o.BaseTree), short(c.FromTree))
			continue
		}
		if best == nil || tf.Length < best.Length {
			best = &DeltaTarget{TargetPath: p, SHA256: hex.EncodeToString(tf.Hashes["sha256"]), Length: tf.Length, Custom: c}
		}
	}
	if best != nil {
		return best, ""
	}
	return nil, why
}

func short(digest string) string { return digest[:min(12, len(digest))] }

// download streams target p of the verified targets role into dir under
// its plain name, from its consistent-snapshot name, its length and
// sha256 checked on the way against what the role signs (the check
// go-tuf's VerifyLengthHashes makes over bytes held whole), and renamed
// into place only when both match. what names it in messages ("archive",
// "delta"). blob, when not "", is the registry blob the target names
// (Custom.RegistryBlob): the bytes come from there instead, under the
// same checks.
func download(ctx context.Context, f *fetcher, p string, length int64, sha string, dir, what, blob string) error {
	d, base := path.Split(p)
	name, loc := sha+"."+base, f.location("targets/"+d+sha+"."+base)
	var src *updatesource.Source
	var err error
	if blob != "" {
		src, name, err = f.blobSource(blob, sha, p)
		loc = blob
	} else {
		src, err = f.src.Sub("targets/" + strings.TrimSuffix(d, "/"))
	}
	if err != nil {
		return err
	}
	dst := filepath.Join(dir, base)
	if err := src.Download(ctx, name, dst, length, sha); err != nil {
		var ce *updatesource.Error
		if !errors.As(err, &ce) || (ce.Reason != updatesource.ReasonSize && ce.Reason != updatesource.ReasonDigest) {
			return err
		}
		// A size error says "is larger than" while streaming, or the
		// size a directory or Content-Length gave: "is N bytes".
		var got int64
		if m := reSize().FindStringSubmatch(ce.Msg); m != nil {
			got, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if ce.Reason == updatesource.ReasonSize && (strings.Contains(ce.Msg, " is larger than ") || got > length) {
			return updateErr(ReasonTooLarge, err, "the %s %s is longer than its target length (%d bytes): endless data; %s", what, loc, length, tampered)
		}
		why := "length verification failed: it is shorter than the signed " + strconv.FormatInt(length, 10) + " bytes"
		if ce.Reason == updatesource.ReasonDigest {
			why = "hash verification failed: its sha256 is not the signed " + sha
		}
		tail := "nothing was installed, report it to the publisher"
		if what != "archive" {
			tail = "report it to the publisher"
		}
		who := "the repository or a mirror"
		if blob != "" {
			who = "the registry"
		}
		return updateErr(ReasonIntegrity, err, "%s is not the %s the targets role signs for %s (%s): %s serves other bytes; %s", loc, what, p, why, who, tail)
	}
	return nil
}

// fetchNotes downloads the notes target p as go-tuf's DownloadTarget does
// (its consistent-snapshot name through the fetcher's bounds, then
// TargetFiles.VerifyLengthHashes against the verified targets role) but
// writes nothing: go-tuf would keep a copy in its local targets
// directory, which is the trusted store an update swaps in whole. A
// repository without that target has no notes: "".
func fetchNotes(up *updater.Updater, f *fetcher, p string) (string, error) {
	tf, ok := up.GetTopLevelTargets()[p]
	if !ok || tf.Custom != nil {
		return "", nil
	}
	if tf.Length > MaxNotesBytes || len(tf.Hashes["sha256"]) == 0 {
		return "", updateErr(ReasonMalformed, nil, "the notes target %s of %s is %d bytes, or has no sha256: piship publishes notes of at most %d bytes with their sha256", p, f.src, tf.Length, MaxNotesBytes)
	}
	dir, base := path.Split(p)
	data, err := f.DownloadFile(fetchPrefix+"targets/"+dir+hex.EncodeToString(tf.Hashes["sha256"])+"."+base, tf.Length, 0)
	if err == nil {
		err = tf.VerifyLengthHashes(data)
	}
	if err != nil {
		return "", f.explain(err, up)
	}
	return string(data), nil
}

// fetcher is go-tuf's Fetcher over a channel Source: the metadata and
// the archives go through Source.Sub and Fetch/FetchArchive, so a
// repository is read under the rules of today's channels.
type fetcher struct {
	ctx  context.Context
	src  *updatesource.Source
	opts updatesource.SourceOptions // how src reaches the network: a registry blob's too

	mu      sync.Mutex
	subs    map[string]*updatesource.Source
	fetched map[string][]byte // repository path -> bytes, for messages
	last    string            // the last repository path asked for
}

func (f *fetcher) location(rel string) string {
	return strings.TrimSuffix(f.src.String(), "/") + "/" + rel
}

// DownloadFile implements go-tuf's fetcher.Fetcher. A missing file is
// go-tuf's ErrDownloadHTTP 404 (which ends the root walk) and a file over
// maxLength its ErrDownloadLengthMismatch, each joined with the channel
// error that names the location.
func (f *fetcher) DownloadFile(u string, maxLength int64, _ time.Duration) ([]byte, error) {
	rel, ok := strings.CutPrefix(u, fetchPrefix)
	if !ok {
		return nil, &metadata.ErrDownload{Msg: fmt.Sprintf("%s is outside the repository", u)}
	}
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	f.mu.Lock()
	f.last = rel
	sub := f.subs[dir]
	f.mu.Unlock()
	if sub == nil {
		s, err := f.src.Sub(dir)
		if err != nil {
			return nil, err
		}
		sub = s
		f.mu.Lock()
		f.subs[dir] = s
		f.mu.Unlock()
	}
	var data []byte
	var err error
	if strings.HasPrefix(rel, "targets/") {
		data, err = sub.FetchArchive(f.ctx, name, maxLength)
	} else {
		data, err = sub.Fetch(f.ctx, name, maxLength)
	}
	switch {
	case err == nil:
		f.mu.Lock()
		f.fetched[rel] = data
		f.mu.Unlock()
		return data, nil
	case updatesource.HasReason(err, updatesource.ReasonNotFound):
		return nil, errors.Join(&metadata.ErrDownloadHTTP{StatusCode: http.StatusNotFound, URL: f.location(rel)}, err)
	case updatesource.HasReason(err, updatesource.ReasonTooLarge):
		return nil, errors.Join(&metadata.ErrDownloadLengthMismatch{Msg: fmt.Sprintf("%s is longer than %d bytes", f.location(rel), maxLength)}, err)
	}
	return nil, err
}

// The patterns explain reads go-tuf's messages with, compiled at the first
// refusal: compiled at init, every command of both binaries paid for them
// at start.
var (
	reVerify   = lazyRegexp(`Verifying (\S+) failed, not enough signatures, got (\d+), want (\d+)`)
	reNewTS    = lazyRegexp(`new timestamp version (\d+) must be >= (\d+)`)
	reNewSnap  = lazyRegexp(`new snapshot version (\d+) must be >= (\d+)`)
	reMetaVer  = lazyRegexp(`expected (\S+)\.json version (\d+), got (\d+)`)
	reRoleVer  = lazyRegexp(`expected (\S+) version (\d+), got (\d+)`)
	reFinal    = lazyRegexp(`^expected (\d+), got (\d+)$`)
	reRootVer  = lazyRegexp(`bad version number, expected (\d+), got (\d+)`)
	reLenLimit = lazyRegexp(`(\d+) bytes`)
	reSize     = lazyRegexp(` is (\d+) bytes`)
)

// lazyRegexp compiles expr on first use.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// Advice for a refusal that means the repository or the path to it was
// tampered with, or a mirror is stale.
const tampered = "nothing was installed and the trusted metadata holds only what verified; a mirror may be stale or someone tampering: retry later, and report it to the publisher if it persists"

// explain words an error of go-tuf's updater (or of the fetcher under it)
// as the TUF check that refused, naming the file it was reading.
func (f *fetcher) explain(err error, up *updater.Updater) error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	if f.ctx.Err() != nil {
		return f.ctx.Err() // canceled: the caller says why
	}
	f.mu.Lock()
	last := f.last
	f.mu.Unlock()
	loc := f.location(last)
	var tm trustedmetadata.TrustedMetadata
	if up != nil {
		tm = up.GetTrustedMetadataSet()
	}
	var rootV int64
	if tm.Root != nil {
		rootV = tm.Root.Signed.Version
	}
	var (
		lenErr  *metadata.ErrDownloadLengthMismatch
		expErr  *metadata.ErrExpiredMetadata
		verErr  *metadata.ErrBadVersionNumber
		sigErr  *metadata.ErrUnsignedMetadata
		hashErr *metadata.ErrLengthOrHashMismatch
		repoErr *metadata.ErrRepository
	)
	switch {
	case errors.As(err, &lenErr):
		if strings.HasPrefix(last, "targets/") {
			return updateErr(ReasonTooLarge, err, "the %s %s is longer than its target length (%s): endless data; %s", roleOf(last), loc, firstMatch(reLenLimit(), lenErr.Msg, "the signed length"), tampered)
		}
		return updateErr(ReasonTooLarge, err, "%s is longer than the %s bound for %s metadata: endless data; %s", loc, firstMatch(reLenLimit(), lenErr.Msg, "size"), roleOf(last), tampered)
	case errors.As(err, &expErr):
		role, when := "metadata", time.Time{}
		switch {
		case strings.Contains(expErr.Msg, "timestamp"):
			role = "timestamp"
			if tm.Timestamp != nil {
				when = tm.Timestamp.Signed.Expires
			}
		case strings.Contains(expErr.Msg, "snapshot"):
			role = "snapshot"
			if tm.Snapshot != nil {
				when = tm.Snapshot.Signed.Expires
			}
		case strings.Contains(expErr.Msg, "root"):
			role = "root"
			if tm.Root != nil {
				when = tm.Root.Signed.Expires
			}
		case strings.Contains(expErr.Msg, "targets"):
			role = "targets"
			if m, e := metadata.Targets().FromBytes(f.bytes(last)); e == nil {
				when = m.Signed.Expires
			}
		}
		on := ""
		if !when.IsZero() {
			on = " on " + when.UTC().Format(time.RFC3339)
		}
		return updateErr(ReasonExpired, err, "the %s of %s expired%s (indefinite freeze: expired metadata could keep this installation on old releases): the publisher must re-sign it (the scheduled refresh of snapshot and timestamp); nothing was installed", role, f.src, on)
	case errors.As(err, &sigErr):
		m := reVerify().FindStringSubmatch(sigErr.Msg)
		got, want := "fewer", "the threshold"
		if m != nil {
			got, want = m[2], m[3]
		}
		if strings.HasSuffix(last, ".root.json") {
			next := rootV + 1
			whose := fmt.Sprintf("root %d's root keys", rootV)
			if nr, e := metadata.Root().FromBytes(f.bytes(last)); e == nil {
				next = nr.Signed.Version
				if tm.Root != nil && tm.Root.VerifyDelegate(RoleRoot, nr) == nil {
					whose = "its own root keys"
				}
			}
			return updateErr(ReasonRootChain, err, "root %d (%s) is not signed by a threshold of %s (%s valid signatures of %s needed): a root rotation must be signed by the old root's threshold and the new one's; %s", next, loc, whose, got, want, tampered)
		}
		role := roleOf(last)
		return updateErr(ReasonSignatures, err, "%s (%s) is not signed by a threshold of root %d's %s keys (%s valid signatures, %s needed): a bad signature, an untrusted key or too few keys; %s", role, loc, rootV, role, got, want, tampered)
	case errors.As(err, &verErr):
		msg := verErr.Msg
		if m := reNewTS().FindStringSubmatch(msg); m != nil {
			return updateErr(ReasonRollback, err, "timestamp version rolled back from %s to %s (%s): %s", m[2], m[1], loc, tampered)
		}
		if m := reNewSnap().FindStringSubmatch(msg); m != nil {
			return updateErr(ReasonRollback, err, "snapshot version rolled back from %s to %s (the timestamp %s names it): %s", m[2], m[1], loc, tampered)
		}
		if m := reMetaVer().FindStringSubmatch(msg); m != nil {
			// go-tuf words it "expected <new>, got <trusted>".
			return updateErr(ReasonRollback, err, "%s version rolled back from %s to %s (the snapshot %s names it): %s", m[1], m[3], m[2], loc, tampered)
		}
		if m := reRootVer().FindStringSubmatch(msg); m != nil {
			return updateErr(ReasonRootChain, err, "%s holds root version %s where root %s belongs: the root chain is broken; %s", loc, m[2], m[1], tampered)
		}
		if m := reRoleVer().FindStringSubmatch(msg); m != nil {
			return updateErr(ReasonMixAndMatch, err, "%s (%s) is version %s, but the snapshot names version %s: mix-and-match of snapshot and targets; %s", m[1], loc, m[3], m[2], tampered)
		}
		if m := reFinal().FindStringSubmatch(msg); m != nil {
			return updateErr(ReasonMixAndMatch, err, "the snapshot (%s) is version %s, but the timestamp names version %s: mix-and-match of timestamp and snapshot; %s", loc, m[2], m[1], tampered)
		}
		return updateErr(ReasonRollback, err, "%s: %s; %s", loc, msg, tampered)
	case errors.As(err, &hashErr):
		return updateErr(ReasonIntegrity, err, "%s is not the %s its parent role signs (%s): mix-and-match or tampering; %s", loc, roleOf(last), hashErr.Msg, tampered)
	case errors.As(err, &repoErr):
		return updateErr(ReasonMalformed, err, "%s: %s; %s", loc, repoErr.Msg, tampered)
	}
	if ce, ok := updatesource.AsError(err); ok {
		// NETWORK_DENIED, a timeout, a status, a missing file: the channel
		// source words it with the URL; its code stays.
		msg := ce.Msg
		if ce.Reason == updatesource.ReasonNotFound && last == "metadata/timestamp.json" {
			msg += ": " + f.src.String() + " is not a TUF repository (metadata/timestamp.json, metadata/<N>.root.json, targets/); check the update source"
		}
		return &Error{Code: ce.Code, Reason: ReasonFetch, Msg: msg, Err: err}
	}
	return updateErr(ReasonMalformed, err, "%s: %v; %s", loc, err, tampered)
}

func (f *fetcher) bytes(rel string) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetched[rel]
}

// roleOf is the role of a repository path: metadata/3.snapshot.json is
// the snapshot.
func roleOf(rel string) string {
	base := strings.TrimSuffix(path.Base(rel), ".json")
	if i := strings.IndexByte(base, '.'); i >= 0 {
		if _, err := strconv.Atoi(base[:i]); err == nil {
			base = base[i+1:]
		}
	}
	switch {
	case strings.HasPrefix(rel, "targets/") && strings.HasSuffix(rel, NotesSuffix):
		return "release notes"
	case strings.HasPrefix(rel, "targets/"):
		return "archive"
	}
	return base
}

func firstMatch(re *regexp.Regexp, s, def string) string {
	if m := re.FindString(s); m != "" {
		return m
	}
	return def
}
